import { expect, it } from 'vitest';
import { describeEachBackend } from '../support/backends.js';
import { T0, bad, expectInvalid, expectStale, mustPoll, setup, snapshot } from '../support/helpers.js';

describeEachBackend('per-job timeout', (backend) => {
  it("leases a job with timeoutMillis for that long, whatever the poll's leaseMillis", async () => {
    const { queue } = await setup(backend);
    const short = await queue.submit('t', 'short', { timeoutMillis: 50, priority: 1 });
    const plain = await queue.submit('t', 'plain');
    expect((await queue.view(short)).timeoutMillis).toBe(50);
    expect((await queue.view(plain)).timeoutMillis).toBeNull();
    const first = await mustPoll(queue, short, 10_000);
    expect([first.leaseUntil, first.timeoutMillis]).toEqual([T0 + 50, 50]);
    expect((await queue.view(short)).leaseUntil).toBe(T0 + 50);
    const second = await mustPoll(queue, plain, 10_000);
    expect([second.leaseUntil, second.timeoutMillis]).toEqual([T0 + 10_000, null]);
  });

  it('expires the lease at its own length: the attempt fails and the job retries', async () => {
    const { queue, clock } = await setup(backend, { baseBackoffMillis: 0, maxBackoffMillis: 0 });
    const id = await queue.submit('t', 'p', { timeoutMillis: 30 });
    const lease = await mustPoll(queue, id, 60_000);
    clock.advance(29);
    expect((await queue.view(id)).status).toBe('RUNNING');
    clock.advance(1);
    expect(await queue.view(id)).toMatchObject({ status: 'PENDING', lastError: 'lease expired', attempts: 1 });
    await expectStale(() => queue.complete(id, lease.token));
    // The retry's lease is the job's own length again.
    const retry = await mustPoll(queue, id, 60_000);
    expect([retry.attempt, retry.leaseUntil]).toEqual([2, T0 + 30 + 30]);
  });

  it("gives the job's own length to the lease completeAndPoll takes", async () => {
    const { queue } = await setup(backend);
    const a = await queue.submit('t', 'a');
    const b = await queue.submit('t', 'b', { timeoutMillis: 75 });
    const first = await mustPoll(queue, a, 5_000);
    const next = await queue.completeAndPoll(a, first.token, 'w1', 5_000);
    expect(next).toMatchObject({ jobId: b, leaseUntil: T0 + 75, timeoutMillis: 75 });
  });

  it('extends by the length extend is given: a heartbeat may keep the job longer than its own length', async () => {
    const { queue, clock } = await setup(backend);
    const id = await queue.submit('t', 'p', { timeoutMillis: 40 });
    const lease = await mustPoll(queue, id);
    clock.advance(30);
    expect(await queue.extend(id, lease.token, 500)).toBe(T0 + 30 + 500);
    clock.advance(100);
    expect((await queue.view(id)).status).toBe('RUNNING');
    await queue.complete(id, lease.token);
    expect((await queue.view(id)).timeoutMillis).toBe(40);
  });

  it('takes timeoutMillis per job in submitMany', async () => {
    const { queue } = await setup(backend);
    const ids = await queue.submitMany([{ type: 't', timeoutMillis: 20 }, { type: 't' }, { type: 't', timeoutMillis: 2 ** 32 - 1 }]);
    const lengths = [];
    for (const id of ids) lengths.push((await queue.view(id)).timeoutMillis);
    expect(lengths).toEqual([20, null, 2 ** 32 - 1]);
  });

  it.each([
    ['0', 0],
    ['a negative number', -5],
    ['a fraction', 1.5],
    ['2^32', 2 ** 32],
    ['a string', '100'],
    ['NaN', NaN],
  ])('refuses a timeoutMillis of %s and changes nothing', async (_name, timeoutMillis) => {
    const { queue } = await setup(backend);
    const kept = await queue.submit('t', 'kept', { timeoutMillis: 10 });
    const before = await snapshot(queue, [kept, 'J2']);
    const error = await expectInvalid(() => queue.submit('t', 'p', { timeoutMillis: bad(timeoutMillis) }));
    expect(error.message).toContain('timeoutMillis');
    await expectInvalid(() => queue.submitMany([{ type: 't' }, { type: 't', timeoutMillis: bad(timeoutMillis) }]));
    expect(await snapshot(queue, [kept, 'J2'])).toEqual(before);
    expect(await queue.submit('t')).toBe('J2');
  });
});
