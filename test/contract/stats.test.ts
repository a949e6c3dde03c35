import { describe, expect, it } from 'vitest';
import { JobStatus, type QueueStats } from '../../dist/index.js';
import { describeEachBackend, type ContractQueue } from '../support/backends.js';
import { T0, mustPoll, setup } from '../support/helpers.js';

const ZERO: QueueStats = { pending: 0, ready: 0, delayed: 0, running: 0, succeeded: 0, dead: 0, cancelled: 0, paused: false };

/** Asserts the exact stats and that queueDepth / dlqDepth agree with them. */
async function expectCounts(queue: ContractQueue, counts: Partial<QueueStats>): Promise<void> {
  const expected = { ...ZERO, ...counts };
  expect(await queue.stats()).toEqual(expected);
  expect(await queue.queueDepth()).toBe(expected.pending);
  expect(await queue.dlqDepth()).toBe(expected.dead);
}

describe('JobStatus', () => {
  it('is exported with values equal to their names', () => {
    expect(JobStatus).toEqual({
      PENDING: 'PENDING',
      RUNNING: 'RUNNING',
      SUCCEEDED: 'SUCCEEDED',
      DEAD: 'DEAD',
      CANCELLED: 'CANCELLED',
    });
  });
});

describeEachBackend('stats', (backend) => {
  it('is all zeros for an empty queue', async () => {
    const { queue } = await setup(backend);
    await expectCounts(queue, {});
  });

  it('counts exactly through a scripted lifecycle', async () => {
    const { queue, clock } = await setup(backend, { maxAttempts: 2 }); // backoff 100, 200
    await queue.submit('t', 'a'); // J1 ready
    await queue.submit('t', 'b'); // J2 ready
    await queue.submit('t', 'c', 0, T0 + 500); // J3 delayed
    await queue.submit('t', 'd', 0, T0 + 10_000); // J4 delayed
    await queue.submit('t', 'e', -1); // J5 ready
    await expectCounts(queue, { pending: 5, ready: 3, delayed: 2 });

    const l1 = await mustPoll(queue, 'J1', 1000);
    await expectCounts(queue, { pending: 4, ready: 2, delayed: 2, running: 1 });

    const l2 = await mustPoll(queue, 'J2', 300);
    await expectCounts(queue, { pending: 3, ready: 1, delayed: 2, running: 2 });

    await queue.complete('J1', l1.token);
    await expectCounts(queue, { pending: 3, ready: 1, delayed: 2, running: 1, succeeded: 1 });

    await queue.fail('J2', l2.token, 'x'); // J2 back, delayed until T0 + 100
    await expectCounts(queue, { pending: 4, ready: 1, delayed: 3, running: 0, succeeded: 1 });

    await queue.cancel('J5');
    await expectCounts(queue, { pending: 3, ready: 0, delayed: 3, succeeded: 1, cancelled: 1 });

    clock.advance(100); // J2 ready
    await expectCounts(queue, { pending: 3, ready: 1, delayed: 2, succeeded: 1, cancelled: 1 });

    const l2b = await mustPoll(queue, 'J2', 1000);
    await expectCounts(queue, { pending: 2, ready: 0, delayed: 2, running: 1, succeeded: 1, cancelled: 1 });

    await queue.fail('J2', l2b.token, 'y'); // second attempt: DEAD
    await expectCounts(queue, { pending: 2, ready: 0, delayed: 2, succeeded: 1, dead: 1, cancelled: 1 });

    clock.set(T0 + 500); // J3 ready
    await expectCounts(queue, { pending: 2, ready: 1, delayed: 1, succeeded: 1, dead: 1, cancelled: 1 });

    await mustPoll(queue, 'J3', 1000); // leased until T0 + 1500
    await expectCounts(queue, { pending: 1, ready: 0, delayed: 1, running: 1, succeeded: 1, dead: 1, cancelled: 1 });

    clock.set(T0 + 1500); // J3 expires: PENDING again, runAt T0 + 1600
    await expectCounts(queue, { pending: 2, ready: 0, delayed: 2, succeeded: 1, dead: 1, cancelled: 1 });

    clock.set(T0 + 1600);
    await expectCounts(queue, { pending: 2, ready: 1, delayed: 1, succeeded: 1, dead: 1, cancelled: 1 });

    await queue.retryDead('J2');
    await expectCounts(queue, { pending: 3, ready: 2, delayed: 1, succeeded: 1, dead: 0, cancelled: 1 });

    clock.set(T0 + 10_000); // everything ready
    await expectCounts(queue, { pending: 3, ready: 3, delayed: 0, succeeded: 1, cancelled: 1 });

    for (let lease = await queue.poll('w', 1000); lease !== undefined; lease = await queue.poll('w', 1000)) {
      await queue.complete(lease.jobId, lease.token);
    }
    await expectCounts(queue, { succeeded: 4, cancelled: 1 });
  });

  it('moves a delayed job to ready as the clock passes its runAt, with no other call', async () => {
    const { queue, clock } = await setup(backend);
    await queue.submit('t', '', 0, T0 + 10);
    await queue.submit('t', '', 0, T0 + 20);
    await expectCounts(queue, { pending: 2, delayed: 2 });
    clock.advance(9);
    await expectCounts(queue, { pending: 2, delayed: 2 });
    clock.advance(1);
    await expectCounts(queue, { pending: 2, ready: 1, delayed: 1 });
    clock.advance(10);
    await expectCounts(queue, { pending: 2, ready: 2 });
  });

  it('moves an expired lease out of running, into delayed, then ready', async () => {
    const { queue, clock } = await setup(backend);
    await queue.submit('t', '');
    await mustPoll(queue, 'J1', 1000);
    await expectCounts(queue, { running: 1 });
    clock.advance(999);
    await expectCounts(queue, { running: 1 });
    clock.advance(1); // expired at T0 + 1000; runAt T0 + 1100
    await expectCounts(queue, { pending: 1, delayed: 1 });
    clock.advance(100);
    await expectCounts(queue, { pending: 1, ready: 1 });
  });

  it('counts an expiry on the last attempt as dead', async () => {
    const { queue, clock } = await setup(backend, { maxAttempts: 1 });
    await queue.submit('t', '');
    await queue.submit('t', '');
    await mustPoll(queue, 'J1', 1000);
    await mustPoll(queue, 'J2', 2000);
    clock.advance(1500);
    await expectCounts(queue, { running: 1, dead: 1 });
    clock.advance(500);
    await expectCounts(queue, { dead: 2 });
  });

  it('keeps counting exactly over many jobs', async () => {
    const { queue, clock } = await setup(backend, { maxAttempts: 1 });
    for (let i = 0; i < 300; i++) await queue.submit('t', `${i}`, i % 3, T0 + (i % 2) * 1000);
    await expectCounts(queue, { pending: 300, ready: 150, delayed: 150 });
    let done = 0;
    let failed = 0;
    for (let lease = await queue.poll('w', 1000); lease !== undefined; lease = await queue.poll('w', 1000)) {
      if (Number(lease.jobId.slice(1)) % 3 === 0) {
        await queue.fail(lease.jobId, lease.token, 'x');
        failed++;
      } else {
        await queue.complete(lease.jobId, lease.token);
        done++;
      }
    }
    expect(done + failed).toBe(150);
    expect(failed).toBe(50);
    await expectCounts(queue, { pending: 150, delayed: 150, succeeded: done, dead: failed });
    clock.advance(1000);
    await expectCounts(queue, { pending: 150, ready: 150, succeeded: done, dead: failed });
  });

  it('returns a fresh object each time (not a live view that later calls change)', async () => {
    const { queue } = await setup(backend);
    const before = await queue.stats();
    await queue.submit('t', '');
    expect(before).toEqual(ZERO);
    expect((await queue.stats()).pending).toBe(1);
  });

  it('returns views and dead-letter lists that later calls do not change', async () => {
    const { queue } = await setup(backend, { maxAttempts: 1 });
    const id = await queue.submit('t', 'p');
    const pendingView = await queue.view(id);
    const emptyDead = await queue.deadLetters();
    await queue.fail(id, (await mustPoll(queue, id)).token, 'x');
    expect(pendingView).toMatchObject({ status: 'PENDING', attempts: 0, lastError: null });
    expect(emptyDead).toEqual([]);
    expect((await queue.deadLetters()).map((v) => v.id)).toEqual([id]);
  });
});
