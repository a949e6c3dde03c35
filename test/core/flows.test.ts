/**
 * Flows on a journal across reopens. The flow contract on every backend is test/contract/flows.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { InvalidArgumentError, JobQueue, ManualClock, QueueFullError, RetryPolicy, type FlowJob, type JobView } from '../../dist/index.js';
import { T0, expectErrorSync, mustPollSync } from '../support/helpers.js';
import { closeJournal, openJournal, tempJournal } from '../support/journal-harness.js';

const LEASE = 600_000;

const policy = () => new RetryPolicy(2, 0, 0);

/** A parent of type 'parent' with `n` leaf children of type 'child' (payloads c0, c1, ...). */
function flowOf(n: number, extra: Partial<FlowJob> = {}): FlowJob {
  return { type: 'parent', payload: 'p', children: Array.from({ length: n }, (_, i) => ({ type: 'child', payload: `c${i}` })), ...extra };
}

/** Leases and completes every ready job (with `result(payload)`); the job ids leased, in order. */
function runReady(queue: JobQueue, result: (payload: string) => unknown = (payload) => ({ from: payload })): string[] {
  const ran: string[] = [];
  for (let lease = queue.poll('w', LEASE); lease !== undefined; lease = queue.poll('w', LEASE)) {
    ran.push(lease.jobId);
    queue.complete(lease.jobId, lease.token, result(String(lease.payload)));
  }
  return ran;
}

/** What the tests compare of a view: status, attempts, and the flow's fields. */
function flowState(view: JobView): Pick<JobView, 'status' | 'parentId' | 'waitingChildren'> {
  const { status, parentId, waitingChildren } = view;
  return { status, ...(parentId === undefined ? {} : { parentId }), ...(waitingChildren === undefined ? {} : { waitingChildren }) };
}

describe('flows with a journal', () => {
  it('keep the links and counts across a reopen: the parent still waits, then runs once the last child succeeded', () => {
    const path = tempJournal();
    const clock = new ManualClock(T0);
    let queue = openJournal(path, clock, policy());
    queue.submitFlow({ type: 'root', children: [{ type: 'mid', onChildFailure: 'ignore', children: [{ type: 'leaf' }, { type: 'leaf' }] }, { type: 'leaf' }] });
    const leaf = mustPollSync(queue, 'J3');
    queue.complete('J3', leaf.token, 'three');
    closeJournal(queue);
    queue = openJournal(path, clock, policy());
    expect(flowState(queue.view('J1'))).toEqual({ status: 'PENDING', waitingChildren: 2 });
    expect(flowState(queue.view('J2'))).toEqual({ status: 'PENDING', parentId: 'J1', waitingChildren: 1 });
    // Counted again from the slots as the reopen files the jobs.
    expect(queue.stats()).toMatchObject({ waitingChildren: 2, delayed: 2, ready: 2 });
    const next = mustPollSync(queue, 'J4');
    queue.fail('J4', next.token, 'x', { permanent: true });
    closeJournal(queue);
    queue = openJournal(path, clock, policy());
    // J4 DEAD, ignored by J2: J2 is ready; J5 and J2 run, then J1.
    expect(runReady(queue, (payload) => payload)).toEqual(['J2', 'J5', 'J1']);
    expect(queue.view('J2').result).toBe('');
    closeJournal(queue);
  });

  it('make every complete take the lock again after a reopen of a journal with flows', () => {
    const path = tempJournal();
    const clock = new ManualClock(T0);
    let queue = openJournal(path, clock, policy());
    queue.submitFlow(flowOf(1));
    closeJournal(queue);
    queue = openJournal(path, clock, policy());
    expect(runReady(queue)).toEqual(['J2', 'J1']);
    closeJournal(queue);
  });

  it('keep nothing of a flow refused for a bad job or a full queue, after a reopen too', () => {
    const path = tempJournal();
    const clock = new ManualClock(T0);
    let queue = openJournal(path, clock, policy(), { capacity: 8 });
    for (let i = 0; i < 5; i++) queue.submit('t', `${i}`);
    expectErrorSync(() => queue.submitFlow({ type: 'p', children: [{ type: 'c' }, { type: '' }] }), InvalidArgumentError, 'ERR_INVALID_ARGUMENT');
    expectErrorSync(() => queue.submitFlow(flowOf(3)), QueueFullError, 'ERR_QUEUE_FULL');
    closeJournal(queue);
    queue = openJournal(path, clock, policy(), { capacity: 8 });
    expect(queue.stats()).toMatchObject({ pending: 5, delayed: 0 });
    expect(queue.stats()).not.toHaveProperty('waitingChildren');
    expect(queue.submitFlow(flowOf(1))).toEqual(['J6', 'J7']);
    closeJournal(queue);
  });

  it("dead-letter a parent under 'fail' at the reopen that turns its child's last attempt, RUNNING at the close, DEAD", () => {
    const path = tempJournal();
    const clock = new ManualClock(T0);
    let queue = openJournal(path, clock, new RetryPolicy(1, 0, 0));
    queue.submitFlow(flowOf(2));
    mustPollSync(queue, 'J2');
    closeJournal(queue);
    queue = openJournal(path, clock, new RetryPolicy(1, 0, 0));
    expect(queue.view('J2').status).toBe('DEAD');
    expect(flowState(queue.view('J1'))).toEqual({ status: 'DEAD' });
    expect(queue.view('J1').lastError).toBe('child J2 is DEAD');
    // Journaled at that reopen: the next finds it so too.
    closeJournal(queue);
    queue = openJournal(path, clock, new RetryPolicy(1, 0, 0));
    expect(queue.view('J1')).toMatchObject({ status: 'DEAD', lastError: 'child J2 is DEAD' });
    expect(runReady(queue)).toEqual(['J3']);
    closeJournal(queue);
  });
});
