import { describe, expect, it } from 'vitest';
import { JobStatus } from '../dist/index.js';
import { T0, mustPoll, setup } from './helpers.js';

type Stats = ReturnType<ReturnType<typeof setup>['queue']['stats']>;
const ZERO: Stats = { pending: 0, ready: 0, delayed: 0, running: 0, succeeded: 0, dead: 0, cancelled: 0 };

/** Asserts the exact stats and that queueDepth / dlqDepth agree with them. */
function expectCounts(queue: ReturnType<typeof setup>['queue'], counts: Partial<Stats>): void {
  const expected = { ...ZERO, ...counts };
  expect(expected.pending).toBe(expected.ready + expected.delayed); // the script itself is consistent
  expect(queue.stats()).toEqual(expected);
  expect(queue.queueDepth()).toBe(expected.pending);
  expect(queue.dlqDepth()).toBe(expected.dead);
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

describe('stats', () => {
  it('is all zeros for an empty queue', () => {
    const { queue } = setup();
    expectCounts(queue, {});
  });

  it('counts exactly through a scripted lifecycle', () => {
    const { queue, clock } = setup({ maxAttempts: 2 }); // backoff 100, 200
    queue.submit('t', 'a'); // J1 ready
    queue.submit('t', 'b'); // J2 ready
    queue.submit('t', 'c', 0, T0 + 500); // J3 delayed
    queue.submit('t', 'd', 0, T0 + 10_000); // J4 delayed
    queue.submit('t', 'e', -1); // J5 ready
    expectCounts(queue, { pending: 5, ready: 3, delayed: 2 });

    const l1 = mustPoll(queue, 'J1', 1000);
    expectCounts(queue, { pending: 4, ready: 2, delayed: 2, running: 1 });

    const l2 = mustPoll(queue, 'J2', 300);
    expectCounts(queue, { pending: 3, ready: 1, delayed: 2, running: 2 });

    queue.complete('J1', l1.token);
    expectCounts(queue, { pending: 3, ready: 1, delayed: 2, running: 1, succeeded: 1 });

    queue.fail('J2', l2.token, 'x'); // J2 back, delayed until T0 + 100
    expectCounts(queue, { pending: 4, ready: 1, delayed: 3, running: 0, succeeded: 1 });

    queue.cancel('J5');
    expectCounts(queue, { pending: 3, ready: 0, delayed: 3, succeeded: 1, cancelled: 1 });

    clock.advance(100); // J2 ready
    expectCounts(queue, { pending: 3, ready: 1, delayed: 2, succeeded: 1, cancelled: 1 });

    const l2b = mustPoll(queue, 'J2', 1000);
    expectCounts(queue, { pending: 2, ready: 0, delayed: 2, running: 1, succeeded: 1, cancelled: 1 });

    queue.fail('J2', l2b.token, 'y'); // second attempt: DEAD
    expectCounts(queue, { pending: 2, ready: 0, delayed: 2, succeeded: 1, dead: 1, cancelled: 1 });

    clock.set(T0 + 500); // J3 ready
    expectCounts(queue, { pending: 2, ready: 1, delayed: 1, succeeded: 1, dead: 1, cancelled: 1 });

    mustPoll(queue, 'J3', 1000); // leased until T0 + 1500
    expectCounts(queue, { pending: 1, ready: 0, delayed: 1, running: 1, succeeded: 1, dead: 1, cancelled: 1 });

    clock.set(T0 + 1500); // J3 expires: PENDING again, runAt T0 + 1600
    expectCounts(queue, { pending: 2, ready: 0, delayed: 2, succeeded: 1, dead: 1, cancelled: 1 });

    clock.set(T0 + 1600);
    expectCounts(queue, { pending: 2, ready: 1, delayed: 1, succeeded: 1, dead: 1, cancelled: 1 });

    queue.retryDead('J2');
    expectCounts(queue, { pending: 3, ready: 2, delayed: 1, succeeded: 1, dead: 0, cancelled: 1 });

    clock.set(T0 + 10_000); // everything ready
    expectCounts(queue, { pending: 3, ready: 3, delayed: 0, succeeded: 1, cancelled: 1 });

    for (let lease = queue.poll('w', 1000); lease !== undefined; lease = queue.poll('w', 1000)) {
      queue.complete(lease.jobId, lease.token);
    }
    expectCounts(queue, { succeeded: 4, cancelled: 1 });
  });

  it('moves a delayed job to ready as the clock passes its runAt, with no other call', () => {
    const { queue, clock } = setup();
    queue.submit('t', '', 0, T0 + 10);
    queue.submit('t', '', 0, T0 + 20);
    expectCounts(queue, { pending: 2, delayed: 2 });
    clock.advance(9);
    expectCounts(queue, { pending: 2, delayed: 2 });
    clock.advance(1);
    expectCounts(queue, { pending: 2, ready: 1, delayed: 1 });
    clock.advance(10);
    expectCounts(queue, { pending: 2, ready: 2 });
  });

  it('moves an expired lease out of running, into delayed, then ready', () => {
    const { queue, clock } = setup();
    queue.submit('t', '');
    mustPoll(queue, 'J1', 1000);
    expectCounts(queue, { running: 1 });
    clock.advance(999);
    expectCounts(queue, { running: 1 });
    clock.advance(1); // expired at T0 + 1000; runAt T0 + 1100
    expectCounts(queue, { pending: 1, delayed: 1 });
    clock.advance(100);
    expectCounts(queue, { pending: 1, ready: 1 });
  });

  it('counts an expiry on the last attempt as dead', () => {
    const { queue, clock } = setup({ maxAttempts: 1 });
    queue.submit('t', '');
    queue.submit('t', '');
    mustPoll(queue, 'J1', 1000);
    mustPoll(queue, 'J2', 2000);
    clock.advance(1500);
    expectCounts(queue, { running: 1, dead: 1 });
    clock.advance(500);
    expectCounts(queue, { dead: 2 });
  });

  it('keeps counting exactly over many jobs', () => {
    const { queue, clock } = setup({ maxAttempts: 1 });
    for (let i = 0; i < 300; i++) queue.submit('t', `${i}`, i % 3, T0 + (i % 2) * 1000);
    expectCounts(queue, { pending: 300, ready: 150, delayed: 150 });
    let done = 0;
    let failed = 0;
    for (let lease = queue.poll('w', 1000); lease !== undefined; lease = queue.poll('w', 1000)) {
      if (Number(lease.jobId.slice(1)) % 3 === 0) {
        queue.fail(lease.jobId, lease.token, 'x');
        failed++;
      } else {
        queue.complete(lease.jobId, lease.token);
        done++;
      }
    }
    expect(done + failed).toBe(150);
    expect(failed).toBe(50);
    expectCounts(queue, { pending: 150, delayed: 150, succeeded: done, dead: failed });
    clock.advance(1000);
    expectCounts(queue, { pending: 150, ready: 150, succeeded: done, dead: failed });
  });

  it('returns a fresh object each time (not a live view that later calls change)', () => {
    const { queue } = setup();
    const before = queue.stats();
    queue.submit('t', '');
    expect(before).toEqual(ZERO);
    expect(queue.stats().pending).toBe(1);
  });

  it('returns views and dead-letter lists that later calls do not change', () => {
    const { queue } = setup({ maxAttempts: 1 });
    const id = queue.submit('t', 'p');
    const pendingView = queue.view(id);
    const emptyDead = queue.deadLetters();
    queue.fail(id, mustPoll(queue, id).token, 'x');
    expect(pendingView).toMatchObject({ status: 'PENDING', attempts: 0, lastError: null });
    expect(emptyDead).toEqual([]);
    expect(queue.deadLetters().map((v) => v.id)).toEqual([id]);
  });
});
