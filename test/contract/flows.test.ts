/**
 * Flows (submitFlow, childResults): a parent waits, PENDING, until every child
 * has ended, on every backend (the journal's reopen: test/core/flows.test.ts;
 * Redis's races and restart: test/redis/redis-flows*.test.ts).
 */
import { expect, it } from 'vitest';
import { QueueFullError, type FlowJob, type JobView } from '../../dist/index.js';
import { describeEachBackend, type Backend, type ContractQueue } from '../support/backends.js';
import { expectError, expectInvalid, mustPoll, setup, thrownBy } from '../support/helpers.js';

const LEASE = 600_000;

function open(backend: Backend, capacity?: number) {
  return setup(backend, { maxAttempts: 2, baseBackoffMillis: 0, maxBackoffMillis: 0, options: capacity === undefined ? {} : { capacity } });
}

/** A parent of type 'parent' with `n` leaf children of type 'child' (payloads c0, c1, ...). */
function flowOf(n: number, extra: Partial<FlowJob> = {}): FlowJob {
  return { type: 'parent', payload: 'p', children: Array.from({ length: n }, (_, i) => ({ type: 'child', payload: `c${i}` })), ...extra };
}

/** Leases and completes every ready job (with `result(payload)`); the job ids leased, in order. */
async function runReady(queue: ContractQueue, result: (payload: string) => unknown = (payload) => ({ from: payload })): Promise<string[]> {
  const ran: string[] = [];
  for (let lease = await queue.poll('w', LEASE); lease !== undefined; lease = await queue.poll('w', LEASE)) {
    ran.push(lease.jobId);
    await queue.complete(lease.jobId, lease.token, result(String(lease.payload)));
  }
  return ran;
}

/** What the tests compare of a view: status, attempts, and the flow's fields. */
function flowState(view: JobView): Pick<JobView, 'status' | 'parentId' | 'waitingChildren'> {
  const { status, parentId, waitingChildren } = view;
  return { status, ...(parentId === undefined ? {} : { parentId }), ...(waitingChildren === undefined ? {} : { waitingChildren }) };
}

describeEachBackend('flows', (backend) => {
  it('return the ids of the tree, the parent first; the parent waits, PENDING, and is not leased before its last child succeeded', async () => {
    const { queue } = await open(backend);
    const ids = await queue.submitFlow(flowOf(3));
    expect(ids).toEqual(['J1', 'J2', 'J3', 'J4']);
    expect(flowState(await queue.view('J1'))).toEqual({ status: 'PENDING', waitingChildren: 3 });
    expect(flowState(await queue.view('J2'))).toEqual({ status: 'PENDING', parentId: 'J1' });
    const leases = [await mustPoll(queue), await mustPoll(queue), await mustPoll(queue)];
    expect(leases.map((lease) => lease.type)).toEqual(['child', 'child', 'child']);
    expect(await queue.poll('w', LEASE)).toBeUndefined();
    await queue.complete(leases[0]!.jobId, leases[0]!.token, 'r0');
    await queue.complete(leases[1]!.jobId, leases[1]!.token, 'r1');
    expect(flowState(await queue.view('J1'))).toEqual({ status: 'PENDING', waitingChildren: 1 });
    expect(await queue.poll('w', LEASE)).toBeUndefined();
    // Without a result, as a lock-free complete would be made.
    await queue.complete(leases[2]!.jobId, leases[2]!.token);
    expect(flowState(await queue.view('J1'))).toEqual({ status: 'PENDING' });
    const parent = await mustPoll(queue, 'J1');
    expect(await queue.childResults(parent.jobId)).toEqual({ J2: 'r0', J3: 'r1', J4: undefined });
    expect(Object.keys(await queue.childResults(parent.jobId))).toEqual(['J2', 'J3', 'J4']);
    await queue.complete(parent.jobId, parent.token);
    expect(await queue.stats()).toMatchObject({ pending: 0, running: 0, succeeded: 4 });
  });

  it('carry binary payloads and results: a child of bytes leases bytes, its parent reads the bytes it returned', async () => {
    const { queue } = await open(backend);
    const sent = new Uint8Array([0xff, 0x00, 0xfe]);
    await queue.submitFlow({ type: 'parent', payload: new Uint8Array([1]), children: [{ type: 'child', payload: sent }] });
    const child = await mustPoll(queue, 'J2');
    expect(child.payload).toEqual(sent);
    await queue.complete(child.jobId, child.token, new Uint8Array([7, 8]));
    const parent = await mustPoll(queue, 'J1');
    expect(parent.payload).toEqual(new Uint8Array([1]));
    expect(await queue.childResults(parent.jobId)).toEqual({ J2: new Uint8Array([7, 8]) });
  });

  it('run nested flows bottom up: a child that is a parent waits for its own children', async () => {
    const { queue } = await open(backend);
    const ids = await queue.submitFlow({
      type: 'root', children: [{ type: 'mid', children: [{ type: 'leaf', payload: 'a' }, { type: 'leaf', payload: 'b' }] }, { type: 'leaf', payload: 'c' }],
    });
    expect(ids).toEqual(['J1', 'J2', 'J3', 'J4', 'J5']);
    expect(flowState(await queue.view('J2'))).toEqual({ status: 'PENDING', parentId: 'J1', waitingChildren: 2 });
    // J2, ready once J4 succeeded, comes before J5 of the same runAt by submission order; J1 only after both.
    expect(await runReady(queue)).toEqual(['J3', 'J4', 'J2', 'J5', 'J1']);
  });

  it("dead-letter the parent when a child goes DEAD (onChildFailure 'fail'), naming the child, and up the tree", async () => {
    const { queue } = await open(backend);
    await queue.submitFlow({ type: 'root', children: [{ type: 'mid', children: [{ type: 'leaf' }, { type: 'leaf' }] }, { type: 'other' }] });
    for (let attempt = 0; attempt < 2; attempt++) {
      const lease = await mustPoll(queue, 'J3');
      await queue.fail(lease.jobId, lease.token, 'boom');
    }
    expect((await queue.view('J3')).status).toBe('DEAD');
    expect(flowState(await queue.view('J2'))).toEqual({ status: 'DEAD', parentId: 'J1' });
    expect((await queue.view('J2')).lastError).toBe('child J3 is DEAD');
    expect((await queue.view('J1')).status).toBe('DEAD');
    expect((await queue.view('J1')).lastError).toBe('child J2 is DEAD');
    // The siblings run on; their ends change nothing of a dead parent.
    expect(await runReady(queue)).toEqual(['J4', 'J5']);
    expect((await queue.view('J1')).status).toBe('DEAD');
  });

  it("count a child DEAD or CANCELLED as ended under onChildFailure 'ignore', and its result as missing", async () => {
    const { queue } = await open(backend);
    await queue.submitFlow(flowOf(3, { onChildFailure: 'ignore' }));
    await queue.cancel('J2');
    expect(flowState(await queue.view('J1'))).toEqual({ status: 'PENDING', waitingChildren: 2 });
    const leases = [await mustPoll(queue, 'J3'), await mustPoll(queue, 'J4')];
    await queue.fail('J3', leases[0]!.token, 'x', { permanent: true });
    expect(await queue.poll('w', LEASE)).toBeUndefined();
    await queue.complete('J4', leases[1]!.token, 4);
    const parent = await mustPoll(queue, 'J1');
    expect(await queue.childResults(parent.jobId)).toEqual({ J4: 4 });
  });

  it("dead-letter the parent when a child is cancelled, or removed while PENDING (onChildFailure 'fail')", async () => {
    const { queue } = await open(backend);
    await queue.submitFlow(flowOf(2));
    await queue.cancel('J3');
    expect((await queue.view('J1')).status).toBe('DEAD');
    expect((await queue.view('J1')).lastError).toBe('child J3 was cancelled');
    await queue.submitFlow(flowOf(1));
    await queue.remove('J5');
    expect((await queue.view('J4')).lastError).toBe('child J5 was removed');
  });

  it("wait again for a child retried from the dead letters while its parent still waits (onChildFailure 'ignore')", async () => {
    const { queue } = await open(backend);
    await queue.submitFlow(flowOf(2, { onChildFailure: 'ignore' }));
    const first = await mustPoll(queue, 'J2');
    await queue.fail('J2', first.token, 'x', { permanent: true });
    expect((await queue.view('J1')).waitingChildren).toBe(1);
    await queue.retryDead('J2');
    expect((await queue.view('J1')).waitingChildren).toBe(2);
    // J3 succeeds: the parent still waits for J2's second run.
    expect(await runReady(queue)).toEqual(['J2', 'J3', 'J1']);
  });

  it("make a parent retried from the dead letters wait again for its children not ended, a DEAD one under 'fail' among them", async () => {
    const { queue } = await open(backend);
    await queue.submitFlow(flowOf(3));
    await queue.complete('J2', (await mustPoll(queue, 'J2')).token, 'two');
    await queue.fail('J3', (await mustPoll(queue, 'J3')).token, 'x', { permanent: true });
    expect((await queue.view('J1')).status).toBe('DEAD');
    await queue.retryDead('J1');
    // J2 SUCCEEDED; J3 DEAD and J4 PENDING are waited for.
    expect(flowState(await queue.view('J1'))).toEqual({ status: 'PENDING', waitingChildren: 2 });
    await queue.retryDead('J3');
    expect((await queue.view('J1')).waitingChildren).toBe(2);
    expect(await runReady(queue, (payload) => payload)).toEqual(['J3', 'J4', 'J1']);
    expect(await queue.childResults('J1')).toEqual({ J2: 'two', J3: 'c1', J4: 'c2' });
  });

  it('keep a waiting parent waiting through promote and changeDelay, and cancel it alone', async () => {
    const { queue } = await open(backend);
    await queue.submitFlow(flowOf(1));
    await queue.promote('J1');
    await queue.changeDelay('J1', 0);
    await queue.changePriority('J1', 5);
    expect(flowState(await queue.view('J1'))).toEqual({ status: 'PENDING', waitingChildren: 1 });
    expect((await queue.poll('w', LEASE))?.jobId).toBe('J2');
    await queue.cancel('J1');
    expect((await queue.view('J1')).status).toBe('CANCELLED');
    expect(await queue.stats()).toMatchObject({ waitingChildren: 0, delayed: 0 });
    // Removing a waiting parent counts it out the same way.
    const [other] = await queue.submitFlow(flowOf(1));
    expect((await queue.stats()).waitingChildren).toBe(1);
    await queue.remove(other!);
    expect((await queue.stats()).waitingChildren).toBe(0);
    // The child runs on, and its end changes nothing of the cancelled parent.
    const child = await queue.view('J2');
    expect(child.status).toBe('RUNNING');
  });

  it('refuse a bad flow anywhere in the tree, submitting nothing', async () => {
    const { queue } = await open(backend);
    const bad: unknown[] = [
      null, { type: 'p' }, { type: 'p', children: [] }, { type: 'p', children: 'x' }, { type: ' ', children: [{ type: 'c' }] },
      { type: 'p', children: [{ type: 'c' }, { type: '' }] }, { type: 'p', children: [{ type: 'c', options: { key: 'k' } }] },
      { type: 'p', onChildFailure: 'retry', children: [{ type: 'c' }] }, { type: 'p', children: [{ type: 'c', extra: 1 }] },
      { type: 'p', children: [{ type: 'c', options: { priority: 1.5 } }] },
    ];
    for (const flow of bad) await expectInvalid(() => queue.submitFlow(flow as FlowJob));
    const cyclic: { type: string; children: unknown[] } = { type: 'p', children: [] };
    cyclic.children.push({ type: 'c', children: [cyclic] });
    expect((await expectInvalid(() => queue.submitFlow(cyclic as FlowJob))).message).toContain('ancestors');
    expect((await expectInvalid(() => queue.submitFlow({ type: 'p', children: [{ type: 'c' }, { type: 'c', payload: 5 as unknown as string }] }))).message).toContain('flow.children[1]');
    expect(await queue.stats()).toMatchObject({ pending: 0 });
    expect(await queue.submit('t', 'x')).toBe('J1');
  });

  it('refuse a flow the queue has no room for, all or none', async () => {
    const { queue } = await open(backend, 8);
    for (let i = 0; i < 5; i++) await queue.submit('t', `${i}`);
    await expectError(() => queue.submitFlow(flowOf(3)), QueueFullError, 'ERR_QUEUE_FULL');
    expect(await queue.stats()).toMatchObject({ pending: 5 });
    expect(await queue.submitFlow(flowOf(2))).toEqual(['J6', 'J7', 'J8']);
  });

  it('leave a child evicted for room out of childResults, and the others in', async () => {
    const { queue } = await open(backend, 8);
    await queue.submitFlow(flowOf(3));
    for (const id of ['J2', 'J3', 'J4']) await queue.complete(id, (await mustPoll(queue, id)).token, id);
    // Four more jobs fill the queue; the fifth evicts the oldest finished job, J2.
    for (let i = 0; i < 5; i++) await queue.submit('later', `${i}`);
    expect(String(await thrownBy(() => queue.view('J2')))).toMatch(/evicted/);
    const parent = await mustPoll(queue, 'J1');
    expect(await queue.childResults(parent.jobId)).toEqual({ J3: 'J3', J4: 'J4' });
  });

  it('give each parent of a nested flow its own children only, whatever was submitted around it', async () => {
    const { queue } = await open(backend);
    await queue.submit('before', 'x', { delayMillis: 60_000 });
    await queue.submitFlow({ type: 'root', children: [{ type: 'mid', children: [{ type: 'leaf' }] }, { type: 'leaf' }] });
    await queue.submitFlow({ type: 'other', children: [{ type: 'leaf' }] });
    await queue.complete('J4', (await mustPoll(queue, 'J4')).token, 'J4');
    await queue.complete('J3', (await mustPoll(queue, 'J3')).token, 'mid');
    await queue.complete('J5', (await mustPoll(queue, 'J5')).token, 'J5');
    expect(await queue.childResults('J2')).toEqual({ J3: 'mid', J5: 'J5' });
    expect(await queue.childResults('J3')).toEqual({ J4: 'J4' });
    expect(await queue.childResults('J6')).toEqual({});
  });

  it('refuse childResults of an unknown job, and give none for a job without children', async () => {
    const { queue } = await open(backend);
    expect(await queue.childResults(await queue.submit('t', 'x'))).toEqual({});
    await expectError(() => queue.childResults('J99'), Error, 'ERR_JOB_NOT_FOUND');
    await expectInvalid(() => queue.submitFlow(undefined as unknown as FlowJob));
  });
});
