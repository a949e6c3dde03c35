import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { InvalidArgumentError, JobQueue, ManualClock, QueueFullError, RetryPolicy, type Lease } from '../../dist/index.js';
import { T0, expectErrorSync, expectInvalidSync } from '../support/helpers.js';
import { SCHEMA_VERSION, closeJournal, openJournal, tempJournal } from '../support/journal-harness.js';

const LEASE = 600_000;

interface Variant {
  name: string;
  open(clock: ManualClock): JobQueue;
  close(queue: JobQueue): void;
}

const policy = () => new RetryPolicy(5, 0, 0);

/** The queue as its own thread has it, as another thread has it (attached), and journaled. */
const VARIANTS: Variant[] = [
  { name: 'memory', open: (clock) => new JobQueue(clock, policy()), close: (queue) => void queue.close() },
  {
    name: 'shared',
    open: (clock) => {
      const owner = new JobQueue(clock, policy());
      const attached = JobQueue.attach(owner.share(), clock);
      owners.set(attached, owner);
      return attached;
    },
    close: (queue) => {
      void queue.close();
      void owners.get(queue)?.close();
    },
  },
  { name: 'journal', open: (clock) => openJournal(tempJournal(), clock, policy()), close: (queue) => closeJournal(queue) },
];
const owners = new Map<JobQueue, JobQueue>();

/** Polls `count` times; the payloads leased (undefined where a poll found nothing). */
function pollPayloads(queue: JobQueue, count: number): (string | undefined)[] {
  return Array.from({ length: count }, () => queue.poll('w', LEASE)?.payload as string | undefined);
}

for (const variant of VARIANTS) {
  const open = () => {
    const clock = new ManualClock(T0);
    return { queue: variant.open(clock), clock };
  };

  describe(`groups [${variant.name}]`, () => {
    it('take turns: 5 jobs of B submitted after 1,000 of A are all leased within the first 10 polls', () => {
      const { queue } = open();
      queue.submitMany(Array.from({ length: 1_000 }, (_, i) => ({ type: 't', payload: `A${i}`, group: 'A' })));
      for (let i = 0; i < 5; i++) queue.submit('t', `B${i}`, { group: 'B' });
      const first = pollPayloads(queue, 10);
      expect(first.filter((p) => p?.startsWith('B'))).toEqual(['B0', 'B1', 'B2', 'B3', 'B4']);
      // A's own jobs keep their submission order.
      expect(first.filter((p) => p?.startsWith('A'))).toEqual(['A0', 'A1', 'A2', 'A3', 'A4']);
      variant.close(queue);
    });

    it('give a group that starts late its turns at once, however far the others are', () => {
      const { queue } = open();
      for (let i = 0; i < 300; i++) queue.submit('t', `A${i}`, { group: 'A' });
      for (let i = 0; i < 300; i++) queue.submit('t', `B${i}`, { group: 'B' });
      expect(pollPayloads(queue, 100).length).toBe(100);
      queue.submit('t', 'C0', { group: 'C' });
      queue.submit('t', 'C1', { group: 'C' });
      expect(pollPayloads(queue, 6).filter((p) => p?.startsWith('C'))).toEqual(['C0', 'C1']);
      variant.close(queue);
    });

    it('count the ungrouped jobs as one more group', () => {
      const { queue } = open();
      for (let i = 0; i < 200; i++) queue.submit('t', `U${i}`);
      for (let i = 0; i < 3; i++) queue.submit('t', `G${i}`, { group: 'G' });
      expect(pollPayloads(queue, 6)).toEqual(['U0', 'G0', 'U1', 'G1', 'U2', 'G2']);
      variant.close(queue);
    });

    it('serve the highest priority first, and each group its own jobs by priority, then submission', () => {
      const { queue } = open();
      queue.submit('t', 'A-low-1', { group: 'A' });
      queue.submit('t', 'A-low-2', { group: 'A' });
      queue.submit('t', 'A-high', { group: 'A', priority: 5 });
      queue.submit('t', 'B-low', { group: 'B' });
      queue.submit('t', 'B-high', { group: 'B', priority: 5 });
      expect(pollPayloads(queue, 6)).toEqual(['A-high', 'B-high', 'A-low-1', 'B-low', 'A-low-2', undefined]);
      variant.close(queue);
    });

    it('show the group in a view, null for a job without one', () => {
      const { queue } = open();
      const grouped = queue.submit('t', 'x', { group: 'tenant-1' });
      const plain = queue.submit('t', 'y');
      expect(queue.view(grouped).group).toBe('tenant-1');
      expect(queue.view(plain).group).toBeNull();
      variant.close(queue);
    });

    it('run at most n of a capped group, pass over it to the next group in turn, and run n again once one leaves RUNNING', () => {
      const { queue } = open();
      queue.setGroupConcurrency('A', 2);
      for (let i = 0; i < 5; i++) queue.submit('t', `A${i}`, { group: 'A' });
      for (let i = 0; i < 5; i++) queue.submit('t', `B${i}`, { group: 'B' });
      const leases = Array.from({ length: 6 }, () => queue.poll('w', LEASE)!);
      expect(leases.map((l) => l.payload)).toEqual(['A0', 'B0', 'A1', 'B1', 'B2', 'B3']);
      queue.complete(leases[0]!.jobId, leases[0]!.token);
      expect(queue.poll('w', LEASE)?.payload).toBe('A2');
      expect(queue.poll('w', LEASE)?.payload).toBe('B4');
      expect(queue.poll('w', LEASE)).toBeUndefined();
      variant.close(queue);
    });

    it('keep the turn of a job held back by its group cap: a capped group is served first once it has room', () => {
      const { queue } = open();
      queue.setGroupConcurrency('A', 1);
      for (let i = 0; i < 20; i++) queue.submit('t', `A${i}`, { group: 'A' });
      for (let i = 0; i < 100; i++) queue.submit('t', `B${i}`, { group: 'B' });
      let running: Lease = queue.poll('w', LEASE)!;
      expect(running.payload).toBe('A0');
      for (let round = 1; round <= 5; round++) {
        // B runs meanwhile, and A's next jobs, whose turns come up, wait at A's cap (held back).
        for (let i = 0; i < 10; i++) expect(queue.poll('w', LEASE)?.payload).toMatch(/^B/);
        queue.complete(running.jobId, running.token);
        // A's next job had its turn long before B's next: it goes first, held back as it was.
        running = queue.poll('w', LEASE)!;
        expect(running.payload).toBe(`A${round}`);
      }
      variant.close(queue);
    });

    it('give turns by runAt in one catch-up: a retry due before a delayed job goes first, same-instant retries by job number', () => {
      const clock = new ManualClock(T0);
      const queue = variant.open(clock);
      for (let i = 0; i < 12; i++) queue.submit('t', `A${i}`, { group: 'A' });
      queue.submit('t', 'A-late', { group: 'A', delayMillis: 20 });
      // Twelve leases end at +10 (J1..J12, so J10 after J9): their retries are due before A-late.
      for (let i = 0; i < 12; i++) expect(queue.poll('w', 10)?.payload).toBe(`A${i}`);
      clock.advance(30);
      expect(pollPayloads(queue, 14)).toEqual([...Array.from({ length: 12 }, (_, i) => `A${i}`), 'A-late', undefined]);
      variant.close(queue);
    });

    it('hold group caps together with type caps and the queue cap', () => {
      const { queue } = open();
      queue.setGroupConcurrency('A', 2);
      queue.setConcurrency('x', 1);
      for (const [type, payload] of [['x', 'Ax1'], ['x', 'Ax2'], ['y', 'Ay1'], ['y', 'Ay2']]) queue.submit(type!, payload, { group: 'A' });
      queue.submit('y', 'By1', { group: 'B' });
      queue.submit('x', 'Bx1', { group: 'B' });
      // Ax2 waits for x's cap, Ay2 for A's; B's x waits for x's cap too.
      expect(pollPayloads(queue, 4)).toEqual(['Ax1', 'By1', 'Ay1', undefined]);
      queue.setConcurrency(3);
      queue.setConcurrency('x', null);
      // The queue's cap of 3 is reached: nothing more.
      expect(pollPayloads(queue, 1)).toEqual([undefined]);
      queue.setConcurrency(4);
      expect(pollPayloads(queue, 2)).toEqual(['Bx1', undefined]);
      variant.close(queue);
    });

    it('list group caps by group, and remove one with null', () => {
      const { queue } = open();
      queue.setGroupConcurrency('zeta', 3);
      queue.setGroupConcurrency('alpha', 1);
      queue.setConcurrency('t', 9);
      expect(queue.groupConcurrencyCaps()).toEqual([{ group: 'alpha', max: 1 }, { group: 'zeta', max: 3 }]);
      expect(queue.concurrencyCaps()).toEqual({ queue: null, types: [{ type: 't', max: 9 }] });
      queue.setGroupConcurrency('zeta', null);
      queue.setGroupConcurrency('never-named', null);
      expect(queue.groupConcurrencyCaps()).toEqual([{ group: 'alpha', max: 1 }]);
      variant.close(queue);
    });

    it('refuse a bad group with a typed error, and the submit changes nothing', () => {
      const { queue } = open();
      const kept = queue.submit('t', 'kept', { group: 'A' });
      const before = { stats: queue.stats(), view: queue.view(kept) };
      for (const bad of ['', '   ', 'x'.repeat(125), '\uD800', 5, null, {}]) {
        const error = expectInvalidSync(() => queue.submit('t', 'p', { group: bad as never }));
        expect(error.code).toBe('ERR_INVALID_ARGUMENT');
        expect(error.message).toMatch(/`group`/);
        expectInvalidSync(() => queue.submitMany([{ type: 't', payload: 'ok' }, { type: 't', group: bad as never }]));
      }
      expect({ stats: queue.stats(), view: queue.view(kept) }).toEqual(before);
      variant.close(queue);
    });

    it('refuse a bad group cap with a typed error, and the caps stay as they were', () => {
      const { queue } = open();
      queue.setGroupConcurrency('A', 2);
      const set = queue.setGroupConcurrency as (...args: unknown[]) => void;
      for (const bad of [0, -1, 1.5, Number.NaN, Infinity, 2 ** 31, '3', undefined]) {
        expect(expectInvalidSync(() => set.call(queue, 'A', bad)).message).toMatch(/`max`/);
      }
      for (const bad of ['', '  ', 'x'.repeat(125), 7]) expect(expectInvalidSync(() => set.call(queue, bad, 1)).message).toMatch(/`group`/);
      expect(expectInvalidSync(() => set.call(queue, 'A')).message).toMatch(/setGroupConcurrency/);
      expect(expectInvalidSync(() => set.call(queue, 'A', 1, 2)).message).toMatch(/setGroupConcurrency/);
      expect(queue.groupConcurrencyCaps()).toEqual([{ group: 'A', max: 2 }]);
      variant.close(queue);
    });
  });
}

describe('groups: the group table', () => {
  it('names at most 4096 groups; a submit naming one more is refused, all or none, and changes nothing', () => {
    const queue = new JobQueue(new ManualClock(T0), policy(), { capacity: 8_192 });
    queue.submitMany(Array.from({ length: 4_096 }, (_, i) => ({ type: 't', group: `g${i}` })));
    const before = queue.stats();
    const error = expectInvalidSync(() => queue.submit('t', 'p', { group: 'one too many' }));
    expect(error).toBeInstanceOf(InvalidArgumentError);
    expect(error.message).toMatch(/at most 4096 groups/);
    expectInvalidSync(() => queue.submitMany([{ type: 't', group: 'g1' }, { type: 't', group: 'one too many' }]));
    expectInvalidSync(() => queue.setGroupConcurrency('one too many', 1));
    expect(queue.stats()).toEqual(before);
    // A group already named still takes jobs.
    queue.submit('t', 'p', { group: 'g7' });
    expect(queue.stats().pending).toBe(before.pending + 1);
    queue.close();
  });
});

describe('groups: a queue without them', () => {
  it('polls lock-free as before: no job is filed by turn until a group is named', () => {
    const queue = new JobQueue(new ManualClock(T0), policy());
    queue.submit('t', 'late', 0, T0 - 5);
    queue.submit('t', 'early', 0, T0 - 10);
    // The usual order (runAt, then submission): no turns.
    expect(pollPayloads(queue, 2)).toEqual(['early', 'late']);
    queue.close();
  });
});

describe('groups: a refused call', () => {
  it('leaves a queue without groups in its usual order: a submit naming a group refused for room starts no turns', () => {
    const queue = new JobQueue(new ManualClock(T0), policy(), { capacity: 3 });
    for (const at of [1, 2, 3]) queue.submit('t', `x${at}`, 0, T0 - at);
    expectErrorSync(() => queue.submit('t', 'grouped', { group: 'A' }), QueueFullError, 'ERR_QUEUE_FULL');
    const first = queue.poll('w', LEASE)!;
    expect(first.payload).toBe('x3');
    queue.complete(first.jobId, first.token);
    queue.submit('t', 'x4', 0, T0 - 4);
    // The usual order (runAt first): with turns, x4 would wait its turn behind x2 and x1.
    expect(pollPayloads(queue, 3)).toEqual(['x4', 'x2', 'x1']);
    queue.close();
  });
});

describe('groups of a journaled queue', () => {
  it('keep each job\'s group, the group caps and the turns across close and reopen', () => {
    const path = tempJournal();
    const clock = new ManualClock(T0);
    let queue = openJournal(path, clock, policy());
    queue.setGroupConcurrency('A', 1);
    queue.setGroupConcurrency('B', 4);
    queue.setGroupConcurrency('B', null);
    for (let i = 0; i < 50; i++) queue.submit('t', `A${i}`, { group: 'A' });
    for (let i = 0; i < 3; i++) queue.submit('t', `B${i}`, { group: 'B' });
    const running = queue.poll('w', LEASE)!;
    expect(running.payload).toBe('A0');
    closeJournal(queue);
    queue = openJournal(path, clock, policy());
    expect(queue.groupConcurrencyCaps()).toEqual([{ group: 'A', max: 1 }]);
    expect(queue.view('J1').group).toBe('A');
    expect(queue.view('J53').group).toBe('B');
    // A0 died with its process and is retried: A runs one (A0 again, the first in its group's turns), B the rest.
    const polled = pollPayloads(queue, 5);
    expect(polled.filter((p) => p?.startsWith('A'))).toEqual(['A0']);
    expect(polled.filter((p) => p?.startsWith('B'))).toEqual(['B0', 'B1', 'B2']);
    expect(polled[4]).toBeUndefined();
    closeJournal(queue);
  });
  it('open a journal of schema 9 (no group column): its jobs are ungrouped, and new ones keep their groups', () => {
    const path = tempJournal();
    const clock = new ManualClock(T0);
    let queue = openJournal(path, clock, policy());
    const old = queue.submit('t', 'old');
    closeJournal(queue);
    const db = new Database(path);
    // Schema 9 had neither groups (10) nor flows (11).
    db.exec('ALTER TABLE jobs DROP COLUMN group_name; ALTER TABLE jobs DROP COLUMN flow_parent; ALTER TABLE jobs DROP COLUMN waiting_children');
    db.pragma('user_version = 9');
    db.close();
    queue = openJournal(path, clock, policy());
    expect(queue.view(old).group).toBeNull();
    const grouped = queue.submit('t', 'new', { group: 'A' });
    closeJournal(queue);
    const columns = new Database(path, { readonly: true });
    expect(columns.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION);
    columns.close();
    queue = openJournal(path, clock, policy());
    expect(queue.view(grouped).group).toBe('A');
    expect(pollPayloads(queue, 3)).toEqual(['old', 'new', undefined]);
    closeJournal(queue);
  });
});
