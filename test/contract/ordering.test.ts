import { expect, it } from 'vitest';
import { describeEachBackend } from '../support/backends.js';
import { T0, drainOrder, killJob, mustPoll, setup } from '../support/helpers.js';

describeEachBackend('best job: priority', (backend) => {
  it('hands out the highest priority first, whatever the submission order', async () => {
    const { queue } = await setup(backend);
    await queue.submit('t', 'p1', 1); // J1
    await queue.submit('t', 'p5', 5); // J2
    await queue.submit('t', 'p3', 3); // J3
    await queue.submit('t', 'p9', 9); // J4
    await queue.submit('t', 'p0'); // J5, default 0
    expect(await drainOrder(queue)).toEqual(['J4', 'J2', 'J3', 'J1', 'J5']);
  });

  it('ranks negative priorities below the default 0', async () => {
    const { queue } = await setup(backend);
    await queue.submit('t', '', -1); // J1
    await queue.submit('t', '', 0); // J2
    await queue.submit('t', '', -10); // J3
    await queue.submit('t', '', 5); // J4
    await queue.submit('t', '', -2); // J5
    expect(await drainOrder(queue)).toEqual(['J4', 'J2', 'J1', 'J5', 'J3']);
  });

  it('puts priority before runAt: a newer high-priority job beats an older low one', async () => {
    const { queue } = await setup(backend);
    await queue.submit('t', '', 0, T0 - 10_000); // J1: long overdue, priority 0
    await queue.submit('t', '', 1, T0); // J2: just ready, priority 1
    expect(await drainOrder(queue)).toEqual(['J2', 'J1']);
  });

  it('orders large and small integer priorities numerically, not as strings', async () => {
    const { queue } = await setup(backend);
    await queue.submit('t', '', 10); // J1
    await queue.submit('t', '', 9); // J2
    await queue.submit('t', '', 100); // J3
    await queue.submit('t', '', -100); // J4
    await queue.submit('t', '', -9); // J5
    expect(await drainOrder(queue)).toEqual(['J3', 'J1', 'J2', 'J5', 'J4']);
  });
});

describeEachBackend('best job: runAt, then submission order', (backend) => {
  it('among equal priorities hands out the earliest runAt first, even if submitted later', async () => {
    const { queue } = await setup(backend);
    await queue.submit('t', '', 0, T0 - 10); // J1
    await queue.submit('t', '', 0, T0 - 30); // J2
    await queue.submit('t', '', 0, T0); // J3
    await queue.submit('t', '', 0, T0 - 20); // J4
    expect(await drainOrder(queue)).toEqual(['J2', 'J4', 'J1', 'J3']);
  });

  it('among equal priority and runAt hands out in submission order', async () => {
    const { queue } = await setup(backend);
    const ids: string[] = [];
    for (let i = 0; i < 50; i++) ids.push(await queue.submit('t', '', 2, T0 - 1));
    expect(await drainOrder(queue)).toEqual(ids);
  });

  it('keeps submission order for equal jobs submitted with the default runAt', async () => {
    const { queue } = await setup(backend);
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) ids.push(await queue.submit('t', ''));
    expect(await drainOrder(queue)).toEqual(ids);
  });

  it('combines all three keys', async () => {
    const { queue } = await setup(backend);
    await queue.submit('t', '', 1, T0 - 5); // J1
    await queue.submit('t', '', 2, T0 - 1); // J2
    await queue.submit('t', '', 1, T0 - 5); // J3
    await queue.submit('t', '', 1, T0 - 9); // J4
    await queue.submit('t', '', 2, T0 - 1); // J5
    await queue.submit('t', '', 0, T0 - 99); // J6
    expect(await drainOrder(queue)).toEqual(['J2', 'J5', 'J4', 'J1', 'J3', 'J6']);
  });

  it('orders a retried job by its new runAt, not its submission', async () => {
    const s = await setup(backend); // backoff after attempt 1: 100 ms
    const { queue, clock } = s;
    await queue.submit('t', 'a'); // J1, runAt T0
    const lease = await mustPoll(queue, 'J1');
    await queue.fail('J1', lease.token, 'x'); // J1 runAt T0 + 100
    clock.advance(50);
    await queue.submit('t', 'b'); // J2, runAt T0 + 50
    clock.advance(1000); // both ready
    expect(await drainOrder(queue)).toEqual(['J2', 'J1']);
  });

  it('orders jobs whose leases expired by their retry time: leaseUntil + backoff', async () => {
    const { queue, clock } = await setup(backend); // backoff after attempt 1: 100 ms
    await queue.submit('t', 'a'); // J1
    await queue.submit('t', 'b'); // J2
    await mustPoll(queue, 'J1', 5000); // expires at T0 + 5000, back at T0 + 5100
    await mustPoll(queue, 'J2', 1000); // expires at T0 + 1000, back at T0 + 1100
    clock.advance(1_000_000);
    expect(await drainOrder(queue)).toEqual(['J2', 'J1']);
  });

  it('orders extreme priorities and runAt values exactly', async () => {
    const { queue } = await setup(backend);
    await queue.submit('t', '', -Number.MAX_SAFE_INTEGER); // J1
    await queue.submit('t', '', Number.MAX_SAFE_INTEGER, T0 - 0.5); // J2
    await queue.submit('t', '', Number.MAX_SAFE_INTEGER, -1e15); // J3
    await queue.submit('t', '', Number.MAX_SAFE_INTEGER - 1, -1e15); // J4
    await queue.submit('t', '', 0, T0 - 0.25); // J5
    await queue.submit('t', '', 0, T0 - 0.75); // J6
    expect(await drainOrder(queue)).toEqual(['J3', 'J2', 'J4', 'J6', 'J5', 'J1']);
  });

  it('orders a job revived by retryDead by runAt = now', async () => {
    const s = await setup(backend, { maxAttempts: 1 });
    const { queue, clock } = s;
    await queue.submit('t', 'a'); // J1
    await killJob(s, 'J1');
    clock.advance(10);
    await queue.submit('t', 'b'); // J2, runAt = T0 + ~10 + backoffs
    clock.advance(10);
    await queue.retryDead('J1'); // runAt = now, later than J2's
    await queue.submit('t', 'c', 0, clock.now() - 1_000_000); // J3, far in the past
    expect(await drainOrder(queue)).toEqual(['J3', 'J2', 'J1']);
  });
});

describeEachBackend('delayed jobs', (backend) => {
  it('does not hand out a job before its runAt, and hands it out when now == runAt', async () => {
    const { queue, clock } = await setup(backend);
    const id = await queue.submit('t', '', 0, T0 + 1000);
    expect(await queue.poll('w', 100)).toBeUndefined();
    clock.advance(999);
    expect(await queue.poll('w', 100)).toBeUndefined();
    clock.advance(1);
    expect(clock.now()).toBe(T0 + 1000);
    expect((await mustPoll(queue)).jobId).toBe(id);
  });

  it('lets a ready low-priority job go ahead of a delayed high-priority one', async () => {
    const { queue, clock } = await setup(backend);
    await queue.submit('t', '', 100, T0 + 500); // J1: delayed
    await queue.submit('t', '', -5); // J2: ready now
    expect((await mustPoll(queue)).jobId).toBe('J2');
    expect(await queue.poll('w', 100)).toBeUndefined();
    clock.advance(500);
    expect((await mustPoll(queue)).jobId).toBe('J1');
  });

  it('ranks a delayed job by priority once it becomes ready', async () => {
    const { queue, clock } = await setup(backend);
    await queue.submit('t', '', 0); // J1: ready, priority 0
    await queue.submit('t', '', 0); // J2: ready, priority 0
    await queue.submit('t', '', 7, T0 + 100); // J3: delayed, priority 7
    clock.advance(100);
    expect(await drainOrder(queue)).toEqual(['J3', 'J1', 'J2']);
  });

  it('releases delayed jobs one by one as the clock reaches each runAt', async () => {
    const { queue, clock } = await setup(backend);
    await queue.submit('t', '', 0, T0 + 300); // J1
    await queue.submit('t', '', 0, T0 + 100); // J2
    await queue.submit('t', '', 0, T0 + 200); // J3
    const seen: Array<string | undefined> = [];
    for (let i = 0; i < 4; i++) {
      const lease = await queue.poll('w', 10_000);
      seen.push(lease?.jobId);
      clock.advance(100);
    }
    expect(seen).toEqual([undefined, 'J2', 'J3', 'J1']);
  });

  it('returns undefined while every job is delayed, then hands out after a clock jump', async () => {
    const { queue, clock } = await setup(backend);
    await queue.submit('t', '', 0, T0 + 1_000_000); // J1
    await queue.submit('t', '', 0, T0 + 2_000_000); // J2
    expect(await queue.poll('w', 10)).toBeUndefined();
    clock.set(T0 + 5_000_000);
    expect(await drainOrder(queue)).toEqual(['J1', 'J2']);
  });
});
