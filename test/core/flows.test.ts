import { describe, expect, it } from 'vitest';
import { InvalidArgumentError, JobQueue, ManualClock, QueueFullError, RetryPolicy, type FlowJob, type JobView } from '../../dist/index.js';
import { T0, expectErrorSync, expectInvalidSync, mustPollSync } from '../support/helpers.js';
import { closeJournal, openJournal, tempJournal } from '../support/journal-harness.js';

const LEASE = 600_000;

interface Variant {
  name: string;
  open(clock: ManualClock, capacity?: number): JobQueue;
  close(queue: JobQueue): void;
}

const policy = () => new RetryPolicy(2, 0, 0);

/** The queue as its own thread has it, as another thread has it (attached), and journaled. */
const VARIANTS: Variant[] = [
  { name: 'memory', open: (clock, capacity) => new JobQueue(clock, policy(), { capacity }), close: (queue) => void queue.close() },
  {
    name: 'shared',
    open: (clock, capacity) => {
      const owner = new JobQueue(clock, policy(), { capacity });
      const attached = JobQueue.attach(owner.share(), clock);
      owners.set(attached, owner);
      return attached;
    },
    close: (queue) => {
      void queue.close();
      void owners.get(queue)?.close();
    },
  },
  { name: 'journal', open: (clock, capacity) => openJournal(tempJournal(), clock, policy(), { capacity }), close: (queue) => closeJournal(queue) },
];
const owners = new Map<JobQueue, JobQueue>();

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

for (const variant of VARIANTS) {
  const open = (capacity?: number) => {
    const clock = new ManualClock(T0);
    return { queue: variant.open(clock, capacity), clock };
  };

  describe(`flows [${variant.name}]`, () => {
    it('return the ids of the tree, the parent first; the parent waits, PENDING, and is not leased before its last child succeeded', () => {
      const { queue } = open();
      const ids = queue.submitFlow(flowOf(3));
      expect(ids).toEqual(['J1', 'J2', 'J3', 'J4']);
      expect(flowState(queue.view('J1'))).toEqual({ status: 'PENDING', waitingChildren: 3 });
      expect(flowState(queue.view('J2'))).toEqual({ status: 'PENDING', parentId: 'J1' });
      const leases = [mustPollSync(queue), mustPollSync(queue), mustPollSync(queue)];
      expect(leases.map((lease) => lease.type)).toEqual(['child', 'child', 'child']);
      expect(queue.poll('w', LEASE)).toBeUndefined();
      queue.complete(leases[0]!.jobId, leases[0]!.token, 'r0');
      queue.complete(leases[1]!.jobId, leases[1]!.token, 'r1');
      expect(flowState(queue.view('J1'))).toEqual({ status: 'PENDING', waitingChildren: 1 });
      expect(queue.poll('w', LEASE)).toBeUndefined();
      // Without a result, as a lock-free complete would be made.
      queue.complete(leases[2]!.jobId, leases[2]!.token);
      expect(flowState(queue.view('J1'))).toEqual({ status: 'PENDING' });
      const parent = mustPollSync(queue, 'J1');
      expect(queue.childResults(parent.jobId)).toEqual({ J2: 'r0', J3: 'r1', J4: undefined });
      expect(Object.keys(queue.childResults(parent.jobId))).toEqual(['J2', 'J3', 'J4']);
      queue.complete(parent.jobId, parent.token);
      expect(queue.stats()).toMatchObject({ pending: 0, running: 0, succeeded: 4 });
      variant.close(queue);
    });

    it('carry binary payloads and results: a child of bytes leases bytes, its parent reads the bytes it returned', () => {
      const { queue } = open();
      const sent = new Uint8Array([0xff, 0x00, 0xfe]);
      queue.submitFlow({ type: 'parent', payload: new Uint8Array([1]), children: [{ type: 'child', payload: sent }] });
      const child = mustPollSync(queue, 'J2');
      expect(child.payload).toEqual(sent);
      queue.complete(child.jobId, child.token, new Uint8Array([7, 8]));
      const parent = mustPollSync(queue, 'J1');
      expect(parent.payload).toEqual(new Uint8Array([1]));
      expect(queue.childResults(parent.jobId)).toEqual({ J2: new Uint8Array([7, 8]) });
      variant.close(queue);
    });

    it('run nested flows bottom up: a child that is a parent waits for its own children', () => {
      const { queue } = open();
      const ids = queue.submitFlow({
        type: 'root', children: [{ type: 'mid', children: [{ type: 'leaf', payload: 'a' }, { type: 'leaf', payload: 'b' }] }, { type: 'leaf', payload: 'c' }],
      });
      expect(ids).toEqual(['J1', 'J2', 'J3', 'J4', 'J5']);
      expect(flowState(queue.view('J2'))).toEqual({ status: 'PENDING', parentId: 'J1', waitingChildren: 2 });
      // J2, ready once J4 succeeded, comes before J5 of the same runAt by submission order; J1 only after both.
      expect(runReady(queue)).toEqual(['J3', 'J4', 'J2', 'J5', 'J1']);
      variant.close(queue);
    });

    it("dead-letter the parent when a child goes DEAD (onChildFailure 'fail'), naming the child, and up the tree", () => {
      const { queue } = open();
      queue.submitFlow({ type: 'root', children: [{ type: 'mid', children: [{ type: 'leaf' }, { type: 'leaf' }] }, { type: 'other' }] });
      for (let attempt = 0; attempt < 2; attempt++) {
        const lease = mustPollSync(queue, 'J3');
        queue.fail(lease.jobId, lease.token, 'boom');
      }
      expect(queue.view('J3').status).toBe('DEAD');
      expect(flowState(queue.view('J2'))).toEqual({ status: 'DEAD', parentId: 'J1' });
      expect(queue.view('J2').lastError).toBe('child J3 is DEAD');
      expect(queue.view('J1').status).toBe('DEAD');
      expect(queue.view('J1').lastError).toBe('child J2 is DEAD');
      // The siblings run on; their ends change nothing of a dead parent.
      expect(runReady(queue)).toEqual(['J4', 'J5']);
      expect(queue.view('J1').status).toBe('DEAD');
      variant.close(queue);
    });

    it("count a child DEAD or CANCELLED as ended under onChildFailure 'ignore', and its result as missing", () => {
      const { queue } = open();
      queue.submitFlow(flowOf(3, { onChildFailure: 'ignore' }));
      queue.cancel('J2');
      expect(flowState(queue.view('J1'))).toEqual({ status: 'PENDING', waitingChildren: 2 });
      const leases = [mustPollSync(queue, 'J3'), mustPollSync(queue, 'J4')];
      queue.fail('J3', leases[0]!.token, 'x', { permanent: true });
      expect(queue.poll('w', LEASE)).toBeUndefined();
      queue.complete('J4', leases[1]!.token, 4);
      const parent = mustPollSync(queue, 'J1');
      expect(queue.childResults(parent.jobId)).toEqual({ J4: 4 });
      variant.close(queue);
    });

    it("dead-letter the parent when a child is cancelled, or removed while PENDING (onChildFailure 'fail')", () => {
      const { queue } = open();
      queue.submitFlow(flowOf(2));
      queue.cancel('J3');
      expect(queue.view('J1').status).toBe('DEAD');
      expect(queue.view('J1').lastError).toBe('child J3 was cancelled');
      queue.submitFlow(flowOf(1));
      queue.remove('J5');
      expect(queue.view('J4').lastError).toBe('child J5 was removed');
      variant.close(queue);
    });

    it("wait again for a child retried from the dead letters while its parent still waits (onChildFailure 'ignore')", () => {
      const { queue } = open();
      queue.submitFlow(flowOf(2, { onChildFailure: 'ignore' }));
      const first = mustPollSync(queue, 'J2');
      queue.fail('J2', first.token, 'x', { permanent: true });
      expect(queue.view('J1').waitingChildren).toBe(1);
      queue.retryDead('J2');
      expect(queue.view('J1').waitingChildren).toBe(2);
      // J3 succeeds: the parent still waits for J2's second run.
      expect(runReady(queue)).toEqual(['J2', 'J3', 'J1']);
      variant.close(queue);
    });

    it("make a parent retried from the dead letters wait again for its children not ended, a DEAD one under 'fail' among them", () => {
      const { queue } = open();
      queue.submitFlow(flowOf(3));
      queue.complete('J2', mustPollSync(queue, 'J2').token, 'two');
      queue.fail('J3', mustPollSync(queue, 'J3').token, 'x', { permanent: true });
      expect(queue.view('J1').status).toBe('DEAD');
      queue.retryDead('J1');
      // J2 SUCCEEDED; J3 DEAD and J4 PENDING are waited for.
      expect(flowState(queue.view('J1'))).toEqual({ status: 'PENDING', waitingChildren: 2 });
      queue.retryDead('J3');
      expect(queue.view('J1').waitingChildren).toBe(2);
      expect(runReady(queue, (payload) => payload)).toEqual(['J3', 'J4', 'J1']);
      expect(queue.childResults('J1')).toEqual({ J2: 'two', J3: 'c1', J4: 'c2' });
      variant.close(queue);
    });

    it('keep a waiting parent waiting through promote and changeDelay, and cancel it alone', () => {
      const { queue } = open();
      queue.submitFlow(flowOf(1));
      queue.promote('J1');
      queue.changeDelay('J1', 0);
      queue.changePriority('J1', 5);
      expect(flowState(queue.view('J1'))).toEqual({ status: 'PENDING', waitingChildren: 1 });
      expect(queue.poll('w', LEASE)?.jobId).toBe('J2');
      queue.cancel('J1');
      expect(queue.view('J1').status).toBe('CANCELLED');
      expect(queue.stats()).toMatchObject({ waitingChildren: 0, delayed: 0 });
      // Removing a waiting parent counts it out the same way.
      const [other] = queue.submitFlow(flowOf(1));
      expect(queue.stats().waitingChildren).toBe(1);
      queue.remove(other!);
      expect(queue.stats().waitingChildren).toBe(0);
      // The child runs on, and its end changes nothing of the cancelled parent.
      const child = queue.view('J2');
      expect(child.status).toBe('RUNNING');
      variant.close(queue);
    });

    it('refuse a bad flow anywhere in the tree, submitting nothing', () => {
      const { queue } = open();
      const bad: unknown[] = [
        null, { type: 'p' }, { type: 'p', children: [] }, { type: 'p', children: 'x' }, { type: ' ', children: [{ type: 'c' }] },
        { type: 'p', children: [{ type: 'c' }, { type: '' }] }, { type: 'p', children: [{ type: 'c', options: { key: 'k' } }] },
        { type: 'p', onChildFailure: 'retry', children: [{ type: 'c' }] }, { type: 'p', children: [{ type: 'c', extra: 1 }] },
        { type: 'p', children: [{ type: 'c', options: { priority: 1.5 } }] },
      ];
      for (const flow of bad) expectInvalidSync(() => queue.submitFlow(flow as FlowJob));
      const cyclic: { type: string; children: unknown[] } = { type: 'p', children: [] };
      cyclic.children.push({ type: 'c', children: [cyclic] });
      expect(expectInvalidSync(() => queue.submitFlow(cyclic as FlowJob)).message).toContain('ancestors');
      expect(expectInvalidSync(() => queue.submitFlow({ type: 'p', children: [{ type: 'c' }, { type: 'c', payload: 5 as unknown as string }] })).message).toContain('flow.children[1]');
      expect(queue.stats()).toMatchObject({ pending: 0 });
      expect(queue.submit('t', 'x')).toBe('J1');
      variant.close(queue);
    });

    it('refuse a flow the queue has no room for, all or none', () => {
      const { queue } = open(8);
      for (let i = 0; i < 5; i++) queue.submit('t', `${i}`);
      expectErrorSync(() => queue.submitFlow(flowOf(3)), QueueFullError, 'ERR_QUEUE_FULL');
      expect(queue.stats()).toMatchObject({ pending: 5 });
      expect(queue.submitFlow(flowOf(2))).toEqual(['J6', 'J7', 'J8']);
      variant.close(queue);
    });

    it('leave a child evicted for room out of childResults, and the others in', () => {
      const { queue } = open(8);
      queue.submitFlow(flowOf(3));
      for (const id of ['J2', 'J3', 'J4']) queue.complete(id, mustPollSync(queue, id).token, id);
      // Four more jobs fill the queue; the fifth evicts the oldest finished job, J2.
      for (let i = 0; i < 5; i++) queue.submit('later', `${i}`);
      expect(() => queue.view('J2')).toThrow(/evicted/);
      const parent = mustPollSync(queue, 'J1');
      expect(queue.childResults(parent.jobId)).toEqual({ J3: 'J3', J4: 'J4' });
      variant.close(queue);
    });

    it('give each parent of a nested flow its own children only, whatever was submitted around it', () => {
      const { queue } = open();
      queue.submit('before', 'x', { delayMillis: 60_000 });
      queue.submitFlow({ type: 'root', children: [{ type: 'mid', children: [{ type: 'leaf' }] }, { type: 'leaf' }] });
      queue.submitFlow({ type: 'other', children: [{ type: 'leaf' }] });
      queue.complete('J4', mustPollSync(queue, 'J4').token, 'J4');
      queue.complete('J3', mustPollSync(queue, 'J3').token, 'mid');
      queue.complete('J5', mustPollSync(queue, 'J5').token, 'J5');
      expect(queue.childResults('J2')).toEqual({ J3: 'mid', J5: 'J5' });
      expect(queue.childResults('J3')).toEqual({ J4: 'J4' });
      expect(queue.childResults('J6')).toEqual({});
      variant.close(queue);
    });

    it('refuse childResults of an unknown job, and give none for a job without children', () => {
      const { queue } = open();
      expect(queue.childResults(queue.submit('t', 'x'))).toEqual({});
      expectErrorSync(() => queue.childResults('J99'), Error, 'ERR_JOB_NOT_FOUND');
      expectInvalidSync(() => queue.submitFlow(undefined as unknown as FlowJob));
      variant.close(queue);
    });
  });
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
});
