/**
 * Groups (submit's `group`, setGroupConcurrency): fair turns between groups
 * and group caps, on every backend. The exact orders hold on one queue; on
 * the partitioned Redis queue each partition takes turns among its own jobs
 * and holds its share of a cap, so its rules are those of a cap split in
 * shares (the last describe).
 */
import { expect, it } from 'vitest';
import type { Lease, Payload } from '../../dist/index.js';
import { describeEachBackend, describeEachBackendAnd, type Backend, type ContractQueue } from '../support/backends.js';
import { expectInvalid, setup, type Setup } from '../support/helpers.js';

const LEASE = 600_000;

function open(backend: Backend): Promise<Setup> {
  return setup(backend, { maxAttempts: 5, baseBackoffMillis: 0, maxBackoffMillis: 0 });
}

/** Polls `count` times; the text payloads leased (undefined where a poll found nothing). */
async function pollPayloads(queue: ContractQueue, count: number): Promise<(string | undefined)[]> {
  const payloads: (string | undefined)[] = [];
  for (let i = 0; i < count; i++) {
    const lease = await queue.poll('w', LEASE);
    payloads.push(lease === undefined ? undefined : textOf(lease.payload));
  }
  return payloads;
}

/** A payload these tests submitted as text. */
function textOf(payload: Payload): string {
  if (typeof payload !== 'string') throw new TypeError('Expected a text payload');
  return payload;
}

describeEachBackend('groups', (backend) => {
  it('take turns: 5 jobs of B submitted after 1,000 of A are all leased within the first 10 polls', async () => {
    const { queue } = await open(backend);
    await queue.submitMany(Array.from({ length: 1_000 }, (_, i) => ({ type: 't', payload: `A${i}`, group: 'A' })));
    for (let i = 0; i < 5; i++) await queue.submit('t', `B${i}`, { group: 'B' });
    const first = await pollPayloads(queue, 10);
    expect(first.filter((p) => p?.startsWith('B'))).toEqual(['B0', 'B1', 'B2', 'B3', 'B4']);
    // A's own jobs keep their submission order.
    expect(first.filter((p) => p?.startsWith('A'))).toEqual(['A0', 'A1', 'A2', 'A3', 'A4']);
  });

  it('give a group that starts late its turns at once, however far the others are', async () => {
    const { queue } = await open(backend);
    await queue.submitMany(Array.from({ length: 300 }, (_, i) => ({ type: 't', payload: `A${i}`, group: 'A' })));
    await queue.submitMany(Array.from({ length: 300 }, (_, i) => ({ type: 't', payload: `B${i}`, group: 'B' })));
    expect((await pollPayloads(queue, 100)).filter((p) => p !== undefined)).toHaveLength(100);
    await queue.submit('t', 'C0', { group: 'C' });
    await queue.submit('t', 'C1', { group: 'C' });
    expect((await pollPayloads(queue, 6)).filter((p) => p?.startsWith('C'))).toEqual(['C0', 'C1']);
  });

  it('count the ungrouped jobs as one more group', async () => {
    const { queue } = await open(backend);
    await queue.submitMany(Array.from({ length: 200 }, (_, i) => ({ type: 't', payload: `U${i}` })));
    for (let i = 0; i < 3; i++) await queue.submit('t', `G${i}`, { group: 'G' });
    expect(await pollPayloads(queue, 6)).toEqual(['U0', 'G0', 'U1', 'G1', 'U2', 'G2']);
  });

  it('serve the highest priority first, and each group its own jobs by priority, then submission', async () => {
    const { queue } = await open(backend);
    await queue.submit('t', 'A-low-1', { group: 'A' });
    await queue.submit('t', 'A-low-2', { group: 'A' });
    await queue.submit('t', 'A-high', { group: 'A', priority: 5 });
    await queue.submit('t', 'B-low', { group: 'B' });
    await queue.submit('t', 'B-high', { group: 'B', priority: 5 });
    expect(await pollPayloads(queue, 6)).toEqual(['A-high', 'B-high', 'A-low-1', 'B-low', 'A-low-2', undefined]);
  });

  it('give a job that becomes ready later (delayed, retried) its turn then, at the end of its group\'s line', async () => {
    const { queue, clock } = await open(backend);
    await queue.submit('t', 'A-late', { group: 'A', delayMillis: 10 });
    for (let i = 0; i < 3; i++) await queue.submit('t', `A${i}`, { group: 'A' });
    for (let i = 0; i < 3; i++) await queue.submit('t', `B${i}`, { group: 'B' });
    expect(await pollPayloads(queue, 2)).toEqual(['A0', 'B0']);
    clock.advance(10);
    const retried = (await queue.poll('w', LEASE))!;
    expect(retried.payload).toBe('A1');
    await queue.fail(retried.jobId, retried.token, 'again');
    // A-late and A1 (retried now) queue behind A2; B goes on taking its turns.
    expect(await pollPayloads(queue, 6)).toEqual(['B1', 'A2', 'B2', 'A-late', 'A1', undefined]);
  });

  it('give an edited job a new turn, at the end of its group\'s line', async () => {
    const { queue } = await open(backend);
    const first = await queue.submit('t', 'A0', { group: 'A' });
    await queue.submit('t', 'A1', { group: 'A' });
    await queue.submit('t', 'B0', { group: 'B' });
    await queue.submit('t', 'B1', { group: 'B' });
    await queue.updatePayload(first, 'A0-edited');
    expect(await pollPayloads(queue, 4)).toEqual(['B0', 'A1', 'B1', 'A0-edited']);
  });

  it('show the group in a view and in jobs(), null for a job without one', async () => {
    const { queue } = await open(backend);
    const grouped = await queue.submit('t', 'x', { group: 'tenant-1' });
    const plain = await queue.submit('t', 'y');
    expect((await queue.view(grouped)).group).toBe('tenant-1');
    expect((await queue.view(plain)).group).toBeNull();
    const listed = (await queue.jobs()).jobs;
    expect(listed.map((job) => [job.id, job.group])).toEqual([[grouped, 'tenant-1'], [plain, null]]);
  });

  it('run at most n of a capped group, pass over it to the next group in turn, and run n again once one leaves RUNNING', async () => {
    const { queue } = await open(backend);
    await queue.setGroupConcurrency('A', 2);
    for (let i = 0; i < 5; i++) await queue.submit('t', `A${i}`, { group: 'A' });
    for (let i = 0; i < 5; i++) await queue.submit('t', `B${i}`, { group: 'B' });
    const leases: Lease[] = [];
    for (let i = 0; i < 6; i++) leases.push((await queue.poll('w', LEASE))!);
    expect(leases.map((l) => l.payload)).toEqual(['A0', 'B0', 'A1', 'B1', 'B2', 'B3']);
    await queue.complete(leases[0]!.jobId, leases[0]!.token);
    expect((await queue.poll('w', LEASE))?.payload).toBe('A2');
    expect((await queue.poll('w', LEASE))?.payload).toBe('B4');
    expect(await queue.poll('w', LEASE)).toBeUndefined();
    expect((await queue.stats()).pending).toBe(2);
  });

  it('keep the turn of a job held back by its group cap: a capped group is served first once it has room', async () => {
    const { queue } = await open(backend);
    await queue.setGroupConcurrency('A', 1);
    await queue.submitMany(Array.from({ length: 20 }, (_, i) => ({ type: 't', payload: `A${i}`, group: 'A' })));
    await queue.submitMany(Array.from({ length: 100 }, (_, i) => ({ type: 't', payload: `B${i}`, group: 'B' })));
    let running: Lease = (await queue.poll('w', LEASE))!;
    expect(running.payload).toBe('A0');
    for (let round = 1; round <= 5; round++) {
      // B runs meanwhile, and A's next jobs, whose turns come up, wait at A's cap (held back).
      for (let i = 0; i < 10; i++) expect((await queue.poll('w', LEASE))?.payload).toMatch(/^B/);
      await queue.complete(running.jobId, running.token);
      // A's next job had its turn long before B's next: it goes first, held back as it was.
      running = (await queue.poll('w', LEASE))!;
      expect(running.payload).toBe(`A${round}`);
    }
  });

  it('keep the turn of a job held back by its type\'s rate limit: it goes first once its window opens', async () => {
    const { queue, clock } = await open(backend);
    await queue.setRateLimit('h', { max: 1, windowMillis: 1_000 });
    for (let i = 0; i < 5; i++) await queue.submit('t', `B${i}`, { group: 'B' });
    await queue.submit('h', 'A0', { group: 'A' });
    await queue.submit('h', 'A1', { group: 'A' });
    // A1's turn (2) comes up in the fourth poll: held for h's window, B goes on.
    expect(await pollPayloads(queue, 4)).toEqual(['B0', 'A0', 'B1', 'B2']);
    clock.advance(1_000);
    // With its turn (2) it goes before B3 (turn 4); filed with a new turn (4) it would go after (submitted later).
    expect(await pollPayloads(queue, 3)).toEqual(['A1', 'B3', 'B4']);
  });

  /**
   * A0..A2 and B0, B1 take turns 1..3 and 1..2; A0 is served (turn 1), then C0 comes, at turn 2. Given
   * turns afresh in (runAt, submission) order, the jobs would go A1 B0 C0 A2 B1 instead.
   */
  async function servedOneThenC(queue: ContractQueue): Promise<void> {
    for (const payload of ['A0', 'A1', 'A2', 'B0', 'B1']) await queue.submit('t', payload, { group: payload[0] });
    expect(await pollPayloads(queue, 1)).toEqual(['A0']);
    await queue.submit('t', 'C0', { group: 'C' });
  }
  const IN_TURN = ['B0', 'A1', 'B1', 'C0', 'A2', undefined];

  it('keep every ready job\'s turn across the first cap, a type\'s or a group\'s', async () => {
    for (const cap of [(q: ContractQueue) => q.setConcurrency('other', 5), (q: ContractQueue) => q.setGroupConcurrency('Z', 5)]) {
      const { queue } = await open(backend);
      await servedOneThenC(queue);
      await cap(queue);
      expect(await pollPayloads(queue, 6)).toEqual(IN_TURN);
    }
  });

  it('keep each priority\'s turns across the first cap, whichever priority is ready first then', async () => {
    const { queue } = await open(backend);
    for (const payload of ['A0', 'A1', 'A2']) await queue.submit('t', payload, { group: 'A' });
    for (const payload of ['H0', 'H1']) await queue.submit('t', payload, { group: 'C', priority: 5 });
    expect(await pollPayloads(queue, 1)).toEqual(['H0']);
    await queue.setConcurrency('other', 5);
    // A3 takes A's next turn of priority 0 (4), after A2's (3).
    await queue.submit('t', 'A3', { group: 'A' });
    expect(await pollPayloads(queue, 6)).toEqual(['H1', 'A0', 'A1', 'A2', 'A3', undefined]);
  });

  it('keep the turn of every job still ready when the clock goes back', async () => {
    const { queue, clock } = await open(backend);
    await servedOneThenC(queue);
    clock.advance(100);
    await queue.stats();
    // Back, but not before any job's runAt: every job stays ready, in its turn.
    clock.advance(-50);
    expect(await pollPayloads(queue, 6)).toEqual(IN_TURN);
  });

  it('give turns by runAt to a delayed job and a retry that come due in one catch-up', async () => {
    const { queue, clock } = await open(backend);
    await queue.submit('t', 'A-late', { group: 'A', delayMillis: 10 });
    await queue.submit('t', 'A0', { group: 'A' });
    // A0's lease ends at +30, its retry due then (no backoff); A-late is due at +10: it became ready first.
    expect((await queue.poll('w', 30))?.payload).toBe('A0');
    clock.advance(40);
    expect(await pollPayloads(queue, 3)).toEqual(['A-late', 'A0', undefined]);
  });

  it('give turns by runAt to a retry that came due before a delayed job, in one catch-up', async () => {
    const { queue, clock } = await open(backend);
    await queue.submit('t', 'A0', { group: 'A' });
    // A0's lease ends at +10, its retry due then (no backoff); A-late is due at +30, after it.
    expect((await queue.poll('w', 10))?.payload).toBe('A0');
    await queue.submit('t', 'A-late', { group: 'A', delayMillis: 30 });
    clock.advance(40);
    expect(await pollPayloads(queue, 3)).toEqual(['A0', 'A-late', undefined]);
  });

  it('give turns by runAt to many retries and delayed jobs interleaved, more than one catch-up step holds', async () => {
    const { queue, clock } = await open(backend);
    for (let i = 0; i < 60; i++) await queue.submit('t', `R${i}`, { group: 'A' });
    // R<i>'s lease ends at +(2i + 1), its retry due then; D<i> is due at +(2i + 2): due times alternate.
    for (let i = 0; i < 60; i++) expect((await queue.poll('w', 2 * i + 1))?.payload).toBe(`R${i}`);
    for (let i = 0; i < 60; i++) await queue.submit('t', `D${i}`, { group: 'A', delayMillis: 2 * i + 2 });
    clock.advance(200);
    const expected = Array.from({ length: 60 }, (_, i) => [`R${i}`, `D${i}`]).flat();
    expect(await pollPayloads(queue, 121)).toEqual([...expected, undefined]);
  });

  it('retry leases that expire at one instant by job number, each taking its group\'s next turn', async () => {
    const { queue, clock } = await open(backend);
    for (let i = 0; i < 5; i++) await queue.submit('t', `A${i}`, { group: 'A' });
    for (let i = 0; i < 5; i++) await queue.poll('w', 30);
    clock.advance(40);
    expect(await pollPayloads(queue, 6)).toEqual(['A0', 'A1', 'A2', 'A3', 'A4', undefined]);
  });

  it('hold group caps together with type caps and the queue cap', async () => {
    const { queue } = await open(backend);
    await queue.setGroupConcurrency('A', 2);
    await queue.setConcurrency('x', 1);
    for (const [type, payload] of [['x', 'Ax1'], ['x', 'Ax2'], ['y', 'Ay1'], ['y', 'Ay2']]) await queue.submit(type!, payload, { group: 'A' });
    await queue.submit('y', 'By1', { group: 'B' });
    await queue.submit('x', 'Bx1', { group: 'B' });
    // Ax2 waits for x's cap, Ay2 for A's; B's x waits for x's cap too.
    expect(await pollPayloads(queue, 4)).toEqual(['Ax1', 'By1', 'Ay1', undefined]);
    await queue.setConcurrency(3);
    await queue.setConcurrency('x', null);
    // The queue's cap of 3 is reached: nothing more.
    expect(await pollPayloads(queue, 1)).toEqual([undefined]);
    await queue.setConcurrency(4);
    expect(await pollPayloads(queue, 2)).toEqual(['Bx1', undefined]);
  });
});

describeEachBackendAnd('group caps', (backend) => {
  it('list group caps by group, and remove one with null', async () => {
    const { queue } = await open(backend);
    await queue.setGroupConcurrency('zeta', 4);
    await queue.setGroupConcurrency('alpha', 2);
    await queue.setConcurrency('t', 9);
    expect(await queue.groupConcurrencyCaps()).toEqual([{ group: 'alpha', max: 2 }, { group: 'zeta', max: 4 }]);
    expect(await queue.concurrencyCaps()).toEqual({ queue: null, types: [{ type: 't', max: 9 }] });
    await queue.setGroupConcurrency('zeta', null);
    await queue.setGroupConcurrency('never-named', null);
    expect(await queue.groupConcurrencyCaps()).toEqual([{ group: 'alpha', max: 2 }]);
  });

  // On the partitioned queue (2 partitions) a cap of 2 is one place per partition, and 3 jobs of the group in
  // each partition leave each share something to lease: these hold on it too.
  it('never lease past a group cap, and free a place on every move out of RUNNING', async () => {
    const s = await open(backend);
    await s.queue.setGroupConcurrency('A', 2);
    for (let i = 0; i < 8; i++) await s.queue.submit('t', `A${i}`, { group: 'A' });
    await s.queue.submit('t', 'free', { group: 'B' });
    const leases: Lease[] = [];
    for (let lease = await s.queue.poll('w', 1_000); lease !== undefined; lease = await s.queue.poll('w', 1_000)) leases.push(lease);
    expect(leases.filter((l) => textOf(l.payload).startsWith('A'))).toHaveLength(2);
    const free = leases.filter((l) => l.payload === 'free');
    expect(free).toHaveLength(1);
    await s.queue.complete(free[0]!.jobId, free[0]!.token);
    const [first, second] = leases.filter((l) => textOf(l.payload).startsWith('A'));
    const moves: ((l: Lease) => unknown)[] = [
      (l) => s.queue.complete(l.jobId, l.token),
      (l) => s.queue.fail(l.jobId, l.token, 'again'),
      (l) => s.queue.release(l.jobId, l.token),
      (l) => s.queue.cancel(l.jobId),
    ];
    let held: Lease[] = [first!, second!];
    for (const move of moves) {
      await move(held[0]!);
      const next = (await s.queue.poll('w', 1_000))!;
      expect(next.payload).toMatch(/^A/);
      expect(await s.queue.poll('w', 1_000)).toBeUndefined();
      held = [held[1]!, next];
    }
    // Lease expiry frees both places.
    s.clock.advance(1_000);
    expect((await pollPayloads(s.queue, 3)).filter((p) => p !== undefined)).toHaveLength(2);
    expect((await s.queue.stats()).running).toBe(2);
  });

  it('refuse a bad group with a typed error, and the submit changes nothing', async () => {
    const { queue } = await open(backend);
    const kept = await queue.submit('t', 'kept', { group: 'A' });
    const before = { stats: await queue.stats(), view: await queue.view(kept) };
    for (const bad of ['', '   ', 'x'.repeat(125), '\uD800', 5, null, {}]) {
      const error = await expectInvalid(() => queue.submit('t', 'p', { group: bad as never }));
      expect(error.code).toBe('ERR_INVALID_ARGUMENT');
      expect(error.message).toMatch(/`group`/);
      await expectInvalid(() => queue.submitMany([{ type: 't', payload: 'ok' }, { type: 't', group: bad as never }]));
    }
    expect({ stats: await queue.stats(), view: await queue.view(kept) }).toEqual(before);
  });

  it('refuse a bad group cap with a typed error, and the caps stay as they were', async () => {
    const { queue } = await open(backend);
    await queue.setGroupConcurrency('A', 2);
    const set = queue.setGroupConcurrency as (...args: unknown[]) => unknown;
    for (const bad of [0, -1, 1.5, Number.NaN, Infinity, 2 ** 31, '3', undefined]) {
      expect((await expectInvalid(() => set.call(queue, 'A', bad))).message).toMatch(/`max`/);
    }
    for (const bad of ['', '  ', 'x'.repeat(125), 7]) expect((await expectInvalid(() => set.call(queue, bad, 1))).message).toMatch(/`group`/);
    expect((await expectInvalid(() => set.call(queue, 'A'))).message).toMatch(/setGroupConcurrency/);
    expect((await expectInvalid(() => set.call(queue, 'A', 1, 2))).message).toMatch(/setGroupConcurrency/);
    expect(await queue.groupConcurrencyCaps()).toEqual([{ group: 'A', max: 2 }]);
  });
});
