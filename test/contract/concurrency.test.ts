import { expect, it } from 'vitest';
import type { Lease } from '../../dist/index.js';
import { describeEachBackend, describeEachBackendAnd, type ContractQueue } from '../support/backends.js';
import { bad, expectInvalid, mustPoll, setup, type Setup } from '../support/helpers.js';

const LEASE = 1_000;

/** A queue whose failed attempts are retried at once (no backoff), so that a retried job is ready again. */
function capped(backend: Parameters<typeof setup>[0]): Promise<Setup> {
  return setup(backend, { maxAttempts: 5, baseBackoffMillis: 0, maxBackoffMillis: 0 });
}

/** Polls until nothing is leased: the leases, in order. */
async function pollAll(queue: ContractQueue, workerId = 'w'): Promise<Lease[]> {
  const leases: Lease[] = [];
  for (let lease = await queue.poll(workerId, LEASE); lease !== undefined; lease = await queue.poll(workerId, LEASE)) leases.push(lease);
  return leases;
}

/** Each move out of RUNNING, and how many places it frees of the two leases `first` and `second`. */
const moves: [string, (s: Setup, first: Lease, second: Lease) => Promise<void>, number][] = [
  ['complete', async (s, l) => s.queue.complete(l.jobId, l.token), 1],
  ['complete with a result', async (s, l) => s.queue.complete(l.jobId, l.token, { ok: true }), 1],
  ['fail (retried)', async (s, l) => s.queue.fail(l.jobId, l.token, 'again'), 1],
  ['fail (dead)', async (s, l) => s.queue.fail(l.jobId, l.token, 'for good', { permanent: true }), 1],
  ['release', async (s, l) => s.queue.release(l.jobId, l.token), 1],
  ['snooze', async (s, l) => s.queue.release(l.jobId, l.token, { delayMillis: 10 }), 1],
  ['cancel of the running job', async (s, l) => s.queue.cancel(l.jobId), 1],
  ['lease expiry', async (s) => s.clock.advance(LEASE), 2],
];

// On the partitioned queue (2 partitions) every cap is split in shares: a cap of 2 is one place per partition,
// and 3 jobs in each partition leave each share something to lease. So these rules hold on it too.
describeEachBackendAnd('concurrency caps', (backend) => {
  for (const [name, end, freed] of moves) {
    for (const scope of ['queue', 'type'] as const) {
      it(`never leases past the ${scope} cap, and frees a place on ${name}`, async () => {
        const s = await capped(backend);
        if (scope === 'queue') await s.queue.setConcurrency(2);
        else await s.queue.setConcurrency('a', 2);
        for (let i = 0; i < 6; i++) await s.queue.submit('a', `p${i}`);
        const [first, second, ...more] = await pollAll(s.queue);
        expect(more).toEqual([]);
        expect((await s.queue.stats()).running).toBe(2);
        await end(s, first!, second!);
        // The snoozed job is due 10 ms later: the place it freed goes to another job now.
        expect(await pollAll(s.queue)).toHaveLength(freed);
        expect((await s.queue.stats()).running).toBe(2);
      });
    }
  }

  it('caps a type and leaves the other types alone', async () => {
    const s = await capped(backend);
    await s.queue.setConcurrency('a', 2);
    for (let i = 0; i < 4; i++) await s.queue.submit('a', `a${i}`);
    for (let i = 0; i < 4; i++) await s.queue.submit('b', `b${i}`);
    const leases = await pollAll(s.queue);
    expect(leases.filter((lease) => lease.type === 'a')).toHaveLength(2);
    expect(leases.filter((lease) => lease.type === 'b')).toHaveLength(4);
    expect(await s.queue.stats()).toMatchObject({ running: 6, ready: 2, pending: 2 });
  });

  it('stops no running job when lowered below the jobs RUNNING: new leases wait until fewer run', async () => {
    const s = await capped(backend);
    for (let i = 0; i < 8; i++) await s.queue.submit('a');
    const leases = [await mustPoll(s.queue), await mustPoll(s.queue), await mustPoll(s.queue), await mustPoll(s.queue)];
    await s.queue.setConcurrency('a', 2);
    expect((await s.queue.stats()).running).toBe(4);
    for (const lease of leases) expect((await s.queue.view(lease.jobId)).status).toBe('RUNNING');
    expect(await s.queue.poll('w', LEASE)).toBeUndefined();
    for (const lease of leases) await s.queue.complete(lease.jobId, lease.token);
    expect(await pollAll(s.queue)).toHaveLength(2);
  });

  it('lists the caps, and null removes one: what waited is leased at once', async () => {
    const s = await capped(backend);
    expect(await s.queue.concurrencyCaps()).toEqual({ queue: null, types: [] });
    await s.queue.setConcurrency('zeta', 4);
    await s.queue.setConcurrency('a', 2);
    await s.queue.setConcurrency(6);
    await s.queue.setConcurrency('zeta', 8);
    expect(await s.queue.concurrencyCaps()).toEqual({ queue: 6, types: [{ type: 'a', max: 2 }, { type: 'zeta', max: 8 }] });
    for (let i = 0; i < 6; i++) await s.queue.submit('a');
    expect(await pollAll(s.queue)).toHaveLength(2);
    await s.queue.setConcurrency('a', null);
    expect(await s.queue.concurrencyCaps()).toEqual({ queue: 6, types: [{ type: 'zeta', max: 8 }] });
    expect(await pollAll(s.queue)).toHaveLength(4);
    await s.queue.setConcurrency(null);
    await s.queue.setConcurrency('never-set', null);
    expect(await s.queue.concurrencyCaps()).toEqual({ queue: null, types: [{ type: 'zeta', max: 8 }] });
  });

  it('refuses a bad max or type naming it, and changes nothing', async () => {
    const s = await capped(backend);
    await s.queue.setConcurrency('a', 2);
    await s.queue.setConcurrency(4);
    for (const value of [0, -1, 1.5, Number.NaN, Infinity, 2 ** 31, '3', undefined]) {
      expect((await expectInvalid(() => s.queue.setConcurrency('a', bad(value)))).message).toMatch(/`max`/);
      expect((await expectInvalid(() => s.queue.setConcurrency(bad(value)))).message).toMatch(/`max`/);
    }
    for (const type of ['', '  ', 42, null]) {
      expect((await expectInvalid(() => s.queue.setConcurrency(bad(type), 2))).message).toMatch(/`type`/);
    }
    expect((await expectInvalid(() => (s.queue.setConcurrency as (...args: unknown[]) => unknown)())).message).toMatch(/setConcurrency/);
    expect((await expectInvalid(() => (s.queue.setConcurrency as (...args: unknown[]) => unknown)('a', 2, 3))).message).toMatch(/setConcurrency/);
    expect(await s.queue.concurrencyCaps()).toEqual({ queue: 4, types: [{ type: 'a', max: 2 }] });
  });
});

// Ordering is per partition on the partitioned queue: these rules run on the queues with one order.
describeEachBackend('concurrency caps: the order of waiting jobs', (backend) => {
  it('passes over a type at its cap to the next best job of another type, keeping its jobs in their order', async () => {
    const s = await capped(backend);
    await s.queue.setConcurrency('email', 1);
    const e1 = await s.queue.submit('email', 'e1', 5);
    const e2 = await s.queue.submit('email', 'e2', 5);
    const e3 = await s.queue.submit('email', 'e3', 5);
    const r1 = await s.queue.submit('resize', 'r1', 0);
    const first = await mustPoll(s.queue);
    expect(first.jobId).toBe(e1);
    expect((await s.queue.poll('w', LEASE))?.jobId).toBe(r1);
    expect(await s.queue.poll('w', LEASE)).toBeUndefined();
    expect((await s.queue.view(e2)).status).toBe('PENDING');
    expect(await s.queue.stats()).toMatchObject({ ready: 2, running: 2, pending: 2 });
    // A better email submitted while e2 and e3 wait comes first; then they, in their order.
    const e0 = await s.queue.submit('email', 'e0', 9);
    await s.queue.complete(first.jobId, first.token);
    const order: string[] = [];
    for (let lease = await s.queue.poll('w', LEASE); lease !== undefined; lease = await s.queue.poll('w', LEASE)) {
      order.push(lease.jobId);
      expect(await s.queue.poll('w', LEASE)).toBeUndefined();
      await s.queue.complete(lease.jobId, lease.token);
    }
    expect(order).toEqual([e0, e2, e3]);
  });

  it('frees the place on completeAndPoll, whose poll then leases under the cap', async () => {
    const s = await capped(backend);
    await s.queue.setConcurrency(1);
    const [a, b, c] = [await s.queue.submit('a'), await s.queue.submit('a'), await s.queue.submit('a')];
    const first = await mustPoll(s.queue, a);
    const next = await s.queue.completeAndPoll(first.jobId, first.token, 'w', LEASE);
    expect(next?.jobId).toBe(b);
    expect(await s.queue.poll('w', LEASE)).toBeUndefined();
    await s.queue.complete(next!.jobId, next!.token);
    expect((await s.queue.poll('w', LEASE))?.jobId).toBe(c);
  });

  it('lets a waiting job be cancelled, removed or edited: it leaves the wait, the others keep their order', async () => {
    const s = await capped(backend);
    await s.queue.setConcurrency('a', 1);
    const [a1, a2, a3, a4, a5] = [await s.queue.submit('a'), await s.queue.submit('a'), await s.queue.submit('a'), await s.queue.submit('a'), await s.queue.submit('a')];
    const first = await mustPoll(s.queue, a1);
    // Passed over: every job of `a` waits for the place.
    expect(await s.queue.poll('w', LEASE)).toBeUndefined();
    await s.queue.cancel(a2);
    await s.queue.remove(a3);
    await s.queue.changePriority(a5, 3);
    await s.queue.changeDelay(a4, 50);
    expect(await s.queue.stats()).toMatchObject({ ready: 1, delayed: 1, running: 1, cancelled: 1 });
    await s.queue.complete(first.jobId, first.token);
    const next = await mustPoll(s.queue, a5);
    expect(await s.queue.poll('w', LEASE)).toBeUndefined();
    await s.queue.complete(next.jobId, next.token);
    s.clock.advance(50);
    await mustPoll(s.queue, a4);
  });
});
