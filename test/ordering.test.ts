import { describe, expect, it } from 'vitest';
import { T0, drainOrder, killJob, mustPoll, setup } from './helpers.js';

describe('best job: priority', () => {
  it('hands out the highest priority first, whatever the submission order', () => {
    const { queue } = setup();
    queue.submit('t', 'p1', 1); // J1
    queue.submit('t', 'p5', 5); // J2
    queue.submit('t', 'p3', 3); // J3
    queue.submit('t', 'p9', 9); // J4
    queue.submit('t', 'p0'); // J5, default 0
    expect(drainOrder(queue)).toEqual(['J4', 'J2', 'J3', 'J1', 'J5']);
  });

  it('ranks negative priorities below the default 0', () => {
    const { queue } = setup();
    queue.submit('t', '', -1); // J1
    queue.submit('t', '', 0); // J2
    queue.submit('t', '', -10); // J3
    queue.submit('t', '', 5); // J4
    queue.submit('t', '', -2); // J5
    expect(drainOrder(queue)).toEqual(['J4', 'J2', 'J1', 'J5', 'J3']);
  });

  it('puts priority before runAt: a newer high-priority job beats an older low one', () => {
    const { queue } = setup();
    queue.submit('t', '', 0, T0 - 10_000); // J1: long overdue, priority 0
    queue.submit('t', '', 1, T0); // J2: just ready, priority 1
    expect(drainOrder(queue)).toEqual(['J2', 'J1']);
  });

  it('orders large and small integer priorities numerically, not as strings', () => {
    const { queue } = setup();
    queue.submit('t', '', 10); // J1
    queue.submit('t', '', 9); // J2
    queue.submit('t', '', 100); // J3
    queue.submit('t', '', -100); // J4
    queue.submit('t', '', -9); // J5
    expect(drainOrder(queue)).toEqual(['J3', 'J1', 'J2', 'J5', 'J4']);
  });
});

describe('best job: runAt, then submission order', () => {
  it('among equal priorities hands out the earliest runAt first, even if submitted later', () => {
    const { queue } = setup();
    queue.submit('t', '', 0, T0 - 10); // J1
    queue.submit('t', '', 0, T0 - 30); // J2
    queue.submit('t', '', 0, T0); // J3
    queue.submit('t', '', 0, T0 - 20); // J4
    expect(drainOrder(queue)).toEqual(['J2', 'J4', 'J1', 'J3']);
  });

  it('among equal priority and runAt hands out in submission order', () => {
    const { queue } = setup();
    const ids = Array.from({ length: 50 }, () => queue.submit('t', '', 2, T0 - 1));
    expect(drainOrder(queue)).toEqual(ids);
  });

  it('keeps submission order for equal jobs submitted with the default runAt', () => {
    const { queue } = setup();
    const ids = Array.from({ length: 20 }, () => queue.submit('t', ''));
    expect(drainOrder(queue)).toEqual(ids);
  });

  it('combines all three keys', () => {
    const { queue } = setup();
    queue.submit('t', '', 1, T0 - 5); // J1
    queue.submit('t', '', 2, T0 - 1); // J2
    queue.submit('t', '', 1, T0 - 5); // J3
    queue.submit('t', '', 1, T0 - 9); // J4
    queue.submit('t', '', 2, T0 - 1); // J5
    queue.submit('t', '', 0, T0 - 99); // J6
    expect(drainOrder(queue)).toEqual(['J2', 'J5', 'J4', 'J1', 'J3', 'J6']);
  });

  it('orders a retried job by its new runAt, not its submission', () => {
    const s = setup(); // backoff after attempt 1: 100 ms
    const { queue, clock } = s;
    queue.submit('t', 'a'); // J1, runAt T0
    const lease = mustPoll(queue, 'J1');
    queue.fail('J1', lease.token, 'x'); // J1 runAt T0 + 100
    clock.advance(50);
    queue.submit('t', 'b'); // J2, runAt T0 + 50
    clock.advance(1000); // both ready
    expect(drainOrder(queue)).toEqual(['J2', 'J1']);
  });

  it('orders jobs whose leases expired by their retry time: leaseUntil + backoff', () => {
    const { queue, clock } = setup(); // backoff after attempt 1: 100 ms
    queue.submit('t', 'a'); // J1
    queue.submit('t', 'b'); // J2
    mustPoll(queue, 'J1', 5000); // expires at T0 + 5000, back at T0 + 5100
    mustPoll(queue, 'J2', 1000); // expires at T0 + 1000, back at T0 + 1100
    clock.advance(1_000_000);
    expect(drainOrder(queue)).toEqual(['J2', 'J1']);
  });

  it('orders extreme priorities and runAt values exactly', () => {
    const { queue } = setup();
    queue.submit('t', '', -Number.MAX_SAFE_INTEGER); // J1
    queue.submit('t', '', Number.MAX_SAFE_INTEGER, T0 - 0.5); // J2
    queue.submit('t', '', Number.MAX_SAFE_INTEGER, -1e15); // J3
    queue.submit('t', '', Number.MAX_SAFE_INTEGER - 1, -1e15); // J4
    queue.submit('t', '', 0, T0 - 0.25); // J5
    queue.submit('t', '', 0, T0 - 0.75); // J6
    expect(drainOrder(queue)).toEqual(['J3', 'J2', 'J4', 'J6', 'J5', 'J1']);
  });

  it('orders a job revived by retryDead by runAt = now', () => {
    const s = setup({ maxAttempts: 1 });
    const { queue, clock } = s;
    queue.submit('t', 'a'); // J1
    killJob(s, 'J1');
    clock.advance(10);
    queue.submit('t', 'b'); // J2, runAt = T0 + ~10 + backoffs
    clock.advance(10);
    queue.retryDead('J1'); // runAt = now, later than J2's
    queue.submit('t', 'c', 0, clock.now() - 1_000_000); // J3, far in the past
    expect(drainOrder(queue)).toEqual(['J3', 'J2', 'J1']);
  });
});

describe('delayed jobs', () => {
  it('does not hand out a job before its runAt, and hands it out when now == runAt', () => {
    const { queue, clock } = setup();
    const id = queue.submit('t', '', 0, T0 + 1000);
    expect(queue.poll('w', 100)).toBeUndefined();
    clock.advance(999);
    expect(queue.poll('w', 100)).toBeUndefined();
    clock.advance(1);
    expect(clock.now()).toBe(T0 + 1000);
    expect(mustPoll(queue).jobId).toBe(id);
  });

  it('lets a ready low-priority job go ahead of a delayed high-priority one', () => {
    const { queue, clock } = setup();
    queue.submit('t', '', 100, T0 + 500); // J1: delayed
    queue.submit('t', '', -5); // J2: ready now
    expect(mustPoll(queue).jobId).toBe('J2');
    expect(queue.poll('w', 100)).toBeUndefined();
    clock.advance(500);
    expect(mustPoll(queue).jobId).toBe('J1');
  });

  it('ranks a delayed job by priority once it becomes ready', () => {
    const { queue, clock } = setup();
    queue.submit('t', '', 0); // J1: ready, priority 0
    queue.submit('t', '', 0); // J2: ready, priority 0
    queue.submit('t', '', 7, T0 + 100); // J3: delayed, priority 7
    clock.advance(100);
    expect(drainOrder(queue)).toEqual(['J3', 'J1', 'J2']);
  });

  it('releases delayed jobs one by one as the clock reaches each runAt', () => {
    const { queue, clock } = setup();
    queue.submit('t', '', 0, T0 + 300); // J1
    queue.submit('t', '', 0, T0 + 100); // J2
    queue.submit('t', '', 0, T0 + 200); // J3
    const seen: Array<string | undefined> = [];
    for (let i = 0; i < 4; i++) {
      const lease = queue.poll('w', 10_000);
      seen.push(lease?.jobId);
      clock.advance(100);
    }
    expect(seen).toEqual([undefined, 'J2', 'J3', 'J1']);
  });

  it('returns undefined while every job is delayed, then hands out after a clock jump', () => {
    const { queue, clock } = setup();
    queue.submit('t', '', 0, T0 + 1_000_000); // J1
    queue.submit('t', '', 0, T0 + 2_000_000); // J2
    expect(queue.poll('w', 10)).toBeUndefined();
    clock.set(T0 + 5_000_000);
    expect(drainOrder(queue)).toEqual(['J1', 'J2']);
  });
});
