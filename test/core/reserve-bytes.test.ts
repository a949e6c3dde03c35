/**
 * Payloads written in place (`reserveBytes`, I30 in src/shm/README.md), in
 * the shared memory itself: the reservation is a view onto the arena, a
 * submit of it makes that very memory the job's payload (the lease's view is
 * the producer's, same buffer and offset, and no chunk more is taken), a
 * release or a close gives its chunks back, a rebuild keeps it, and one
 * whose owner is known gone is reclaimed and its submit refused with nothing
 * changed. The contract every backend keeps is test/contract/reserve-bytes.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { JobQueue, ManualClock, ReservationLostError, RetryPolicy, type FlowJob } from '../../dist/index.js';
import { QueueMemory, REBUILDS, ROW_OWNED, ROW_REVOKED, ROW_STATE, ROW_WORDS, beforeFilings, maintenanceOf } from '../../dist/testing/core-internals.js';
import { bytesOf, expectError } from '../support/helpers.js';

const START = 1_767_225_600_000;
const MIB = 1 << 20;
/** Chunks a payload of `bytes` bytes takes (64 data bytes a chunk). */
const chunksFor = (bytes: number) => Math.ceil(bytes / 64);
/** A threadId no thread of this test has. */
const GONE_THREAD = 987_654;

/** A shared queue, and a second view of its memory to look at the arena and to take the lock as another holder. */
function sharedQueue(options: { arenaBytes?: number } = {}) {
  const clock = new ManualClock(START);
  const policy = new RetryPolicy(3, 0, 0);
  const queue = new JobQueue(clock, policy, { lockTimeoutMillis: 20, ...options });
  const handle = queue.share();
  const memory = new QueueMemory(handle.buffers, 20);
  return { clock, policy, queue, handle, memory, free: () => memory.arena.freeChunks };
}

/** A rebuild by another holder, as one that took the lock over makes: every chunk no slot or reservation holds is freed. */
function rebuildAsAnotherHolder(memory: QueueMemory, policy: RetryPolicy, clock: ManualClock): void {
  memory.lock.acquire();
  try {
    maintenanceOf(memory, policy, clock).rebuild(clock.now());
  } finally {
    memory.lock.release();
  }
}

/** The rows of `memory` owned now. */
function ownedRows(memory: QueueMemory): number[] {
  const rows: number[] = [];
  for (let row = 1; row < 128; row++) if (Atomics.load(memory.rows.words, row * ROW_WORDS + ROW_STATE) === ROW_OWNED) rows.push(row);
  return rows;
}

function same(a: unknown, b: Uint8Array): boolean {
  return a instanceof Uint8Array && Buffer.from(a.buffer, a.byteOffset, a.length).equals(Buffer.from(b.buffer, b.byteOffset, b.length));
}

describe('payloads written in place', () => {
  it("makes the producer's memory the job's payload: the lease's view is the same buffer and offset, and the submit takes no chunk", () => {
    const { queue, free } = sharedQueue();
    const before = free();
    const bytes = queue.reserveBytes(MIB);
    expect(bytes.buffer).toBeInstanceOf(SharedArrayBuffer);
    expect(before - free()).toBe(chunksFor(MIB));
    bytes.set(bytesOf(MIB, 4));
    const taken = free();
    const id = queue.submit('t', bytes);
    expect(free(), 'chunks taken by the submit').toBe(taken);
    const lease = queue.poll('w', 60_000)!;
    expect(lease.jobId).toBe(id);
    const payload = lease.payload as Uint8Array;
    expect({ buffer: payload.buffer === bytes.buffer, offset: payload.byteOffset, length: payload.length }).toEqual({ buffer: true, offset: bytes.byteOffset, length: MIB });
    expect(same(payload, bytesOf(MIB, 4))).toBe(true);
    // The job's own, as any job's: its chunks go back when it leaves memory.
    queue.complete(id, lease.token);
    queue.remove(id);
    expect(free()).toBe(before);
  });

  it('adopts reservations in submitMany, and a second job with the same view is a copy of it', () => {
    const { queue, free } = sharedQueue();
    const [a, b] = [queue.reserveBytes(8192), queue.reserveBytes(MIB)];
    a.set(bytesOf(8192, 1));
    b.set(bytesOf(MIB, 2));
    const taken = free();
    queue.submitMany([{ type: 't', payload: a }, { type: 't', payload: b }, { type: 't', payload: a }]);
    expect(taken - free(), 'only the copy takes chunks').toBe(chunksFor(8192));
    const leases = [queue.poll('w', 60_000)!, queue.poll('w', 60_000)!, queue.poll('w', 60_000)!];
    const views = leases.map((lease) => lease.payload as Uint8Array);
    expect(views.map((view) => view.byteOffset === a.byteOffset || view.byteOffset === b.byteOffset)).toEqual([true, true, false]);
    expect([same(views[0], bytesOf(8192, 1)), same(views[1], bytesOf(MIB, 2)), same(views[2], bytesOf(8192, 1))]).toEqual([true, true, true]);
  });

  it("adopts a flow's reservations", () => {
    const { queue } = sharedQueue();
    const [parent, child] = [queue.reserveBytes(8192), queue.reserveBytes(8192)];
    parent.fill(1);
    child.fill(2);
    const flow: FlowJob = { type: 'p', payload: parent, children: [{ type: 'c', payload: child }] };
    queue.submitFlow(flow);
    const first = queue.poll('w', 60_000)!;
    expect((first.payload as Uint8Array).byteOffset).toBe(child.byteOffset);
    queue.complete(first.jobId, first.token);
    expect((queue.poll('w', 60_000)!.payload as Uint8Array).byteOffset).toBe(parent.byteOffset);
  });

  it('gives the chunks back on release, and after many reserve and release cycles the free count is where it was', () => {
    const { queue, free } = sharedQueue();
    const before = free();
    for (let i = 0; i < 300; i++) {
      const bytes = queue.reserveBytes(4096 + i * 517);
      expect(bytes.buffer).toBeInstanceOf(SharedArrayBuffer);
      bytes.fill(i & 0xff);
      queue.releaseBytes(bytes);
    }
    expect(free()).toBe(before);
    // A job submitted next is stored where the reservations were, and holds its own bytes.
    const id = queue.submit('t', bytesOf(5000, 8));
    expect(same(queue.view(id).payload, bytesOf(5000, 8))).toBe(true);
  });

  it("gives an instance's reservations back at its close, and a submit never needs them", () => {
    const { queue, handle, free } = sharedQueue();
    const before = free();
    const other = JobQueue.attach(handle);
    for (let i = 0; i < 5; i++) other.reserveBytes(MIB / 4);
    expect(before - free()).toBe(5 * chunksFor(MIB / 4));
    other.close();
    expect(free()).toBe(before);
    queue.close();
  });

  it('hands out a plain Uint8Array where no run can be had: under 64 chunks, or 256 reservations held', () => {
    const { queue, free } = sharedQueue();
    expect(queue.reserveBytes(4032).buffer).not.toBeInstanceOf(SharedArrayBuffer);
    expect(queue.reserveBytes(4033).buffer).toBeInstanceOf(SharedArrayBuffer);
    const held = Array.from({ length: 255 }, () => queue.reserveBytes(4096));
    expect(held.every((bytes) => bytes.buffer instanceof SharedArrayBuffer)).toBe(true);
    const before = free();
    const plain = queue.reserveBytes(4096);
    expect(plain.buffer).not.toBeInstanceOf(SharedArrayBuffer);
    expect(free()).toBe(before);
    // A plain one is copied by its submit, and its release changes nothing.
    plain.fill(3);
    const id = queue.submit('t', plain);
    queue.releaseBytes(plain);
    expect(same(queue.view(id).payload, new Uint8Array(4096).fill(3))).toBe(true);
    queue.releaseBytes(held[0]!);
    expect(queue.reserveBytes(4096).buffer).toBeInstanceOf(SharedArrayBuffer);
  });

  it('fills a reservation (by words, see SharedBytes) exactly as a Uint8Array fills, for any value, start and end', () => {
    const { queue } = sharedQueue();
    const values = [0, 1, 255, 256, -1, 1.7, NaN, Infinity, -129];
    const indexes = [undefined, 0, 1, 3, -1, -7, 300, 4999, 5000, 6000, -6000, NaN, 2.5, -2.5, Infinity, -Infinity];
    const differing: unknown[] = [];
    for (const length of [4033, 5003]) {
      const bytes = queue.reserveBytes(length);
      for (const value of values) for (const start of indexes) for (const end of indexes) {
        const expected = new Uint8Array(length).fill(9).fill(value, start, end);
        bytes.fill(9).fill(value, start, end);
        if (!same(bytes, expected)) differing.push([length, value, start, end]);
      }
      expect(bytes.subarray(1, 3)).toBeInstanceOf(Uint8Array);
      expect(bytes.slice(0, 2).buffer).not.toBeInstanceOf(SharedArrayBuffer);
    }
    expect(differing).toEqual([]);
  });

  it("keeps a reservation across another holder's rebuild: it is not reused, and its submit holds what was written", () => {
    const { queue, policy, clock, memory, free } = sharedQueue();
    const filler = queue.submit('t', bytesOf(MIB, 1));
    const bytes = queue.reserveBytes(MIB);
    bytes.set(bytesOf(MIB, 6));
    queue.remove(filler);
    const before = free();
    rebuildAsAnotherHolder(memory, policy, clock);
    expect(free(), 'chunks freed by the rebuild').toBe(before);
    // Jobs stored after it take the lowest free stretch: the reservation's, had the rebuild freed it.
    const others = [queue.submit('t', bytesOf(MIB, 2)), queue.submit('t', bytesOf(MIB, 3))];
    const id = queue.submit('t', bytes);
    const leases = [queue.poll('w', 60_000)!, queue.poll('w', 60_000)!, queue.poll('w', 60_000)!];
    expect(leases.map((lease) => lease.jobId)).toEqual([...others, id]);
    expect(leases.map((lease, i) => same(lease.payload, bytesOf(MIB, [2, 3, 6][i]!)))).toEqual([true, true, true]);
    expect((leases[2]!.payload as Uint8Array).byteOffset).toBe(bytes.byteOffset);
  });

  it('keeps a reservation when its submit takes the lock over from a holder that died holding it, and rebuilds', () => {
    const { queue, memory, free } = sharedQueue();
    const filler = queue.submit('t', bytesOf(MIB, 1));
    const bytes = queue.reserveBytes(MIB);
    bytes.set(bytesOf(MIB, 7));
    queue.remove(filler);
    const [before, rebuilds] = [free(), memory.header[REBUILDS]!];
    // A holder that never lets go: the submit waits out the queue's patience, takes the lock over and rebuilds first.
    expect(memory.lock.acquire(), 'the lock was free').toBe(false);
    const id = queue.submit('t', bytes);
    expect(memory.header[REBUILDS]! - rebuilds, 'rebuilds').toBe(1);
    expect(free(), 'chunks taken or freed').toBe(before);
    const other = queue.submit('t', bytesOf(MIB, 2));
    const leases = [queue.poll('w', 60_000)!, queue.poll('w', 60_000)!];
    expect(leases.map((lease) => lease.jobId)).toEqual([id, other]);
    expect([same(leases[0]!.payload, bytesOf(MIB, 7)), same(leases[1]!.payload, bytesOf(MIB, 2))]).toEqual([true, true]);
    expect((leases[0]!.payload as Uint8Array).byteOffset).toBe(bytes.byteOffset);
  });

  it('adopts the run once when the submit is taken over right after its place: the next rebuild finds it in the slot', () => {
    const { queue, memory, free } = sharedQueue();
    const bytes = queue.reserveBytes(MIB);
    bytes.set(bytesOf(MIB, 5));
    const before = free();
    // The holder is taken for dead as it files the job its place made (as in holder-taken-over.test.ts).
    let takenOver = false;
    const id = beforeFilings('file', () => {
      if (!takenOver) takenOver = memory.lock.acquire();
    }, () => queue.submit('t', bytes));
    if (takenOver) memory.lock.release();
    expect(takenOver, 'a takeover').toBe(true);
    // Its release marked the hints stale: the next call rebuilds, and the run is the job's, kept once.
    const rebuilds = memory.header[REBUILDS]!;
    const other = queue.submit('t', bytesOf(MIB, 2));
    expect(memory.header[REBUILDS]! - rebuilds, 'rebuilds').toBe(1);
    expect({ free: before - free(), reservations: memory.reservations.live }).toEqual({ free: chunksFor(MIB), reservations: 0 });
    const leases = [queue.poll('w', 60_000)!, queue.poll('w', 60_000)!];
    expect(leases.map((lease) => lease.jobId)).toEqual([id, other]);
    expect([same(leases[0]!.payload, bytesOf(MIB, 5)), same(leases[1]!.payload, bytesOf(MIB, 2))]).toEqual([true, true]);
  });

  it('spends the reservation of a submit whose filing threw after its place: no release or second submit frees or shares the run', async () => {
    const { queue, memory, free } = sharedQueue();
    const bytes = queue.reserveBytes(MIB);
    bytes.set(bytesOf(MIB, 5));
    const before = free();
    const failure = new Error('filing failed');
    await expect(async () => beforeFilings('file', () => {
      throw failure;
    }, () => queue.submit('t', bytes))).rejects.toBe(failure);
    expect(memory.reservations.live, 'reservations').toBe(0);
    queue.releaseBytes(bytes);
    expect(free(), 'chunks freed by the release').toBe(before);
    const again = queue.submit('t', bytes);
    expect(before - free(), 'a second submit is a copy').toBe(chunksFor(MIB));
    expect(same(queue.view(again).payload, bytesOf(MIB, 5))).toBe(true);
  });

  it("drops at a rebuild an entry whose run a slot holds (a submit's holder lost between its place and the entry's clearing)", () => {
    const { queue, policy, clock, memory, free } = sharedQueue();
    const bytes = queue.reserveBytes(MIB);
    bytes.set(bytesOf(MIB, 5));
    const id = queue.submit('t', bytes);
    const before = free();
    // The entry as such a holder leaves it: still naming the run the job holds.
    memory.lock.acquire();
    memory.reservations.add((bytes.byteOffset - 4) / 68, MIB, 0, GONE_THREAD);
    memory.lock.release();
    rebuildAsAnotherHolder(memory, policy, clock);
    expect({ reservations: memory.reservations.live, free: free() }).toEqual({ reservations: 0, free: before });
    // Had the entry stayed, its owner's exit would free the job's run; the job's own chunks come back once, at its removal.
    queue.threadExited(GONE_THREAD);
    expect(same(queue.view(id).payload, bytesOf(MIB, 5))).toBe(true);
    queue.remove(id);
    expect(free() - before).toBe(chunksFor(MIB));
  });

  it('reclaims at a rebuild the reservations of an instance whose row was revoked; their submit is refused, changing nothing', async () => {
    const { queue, handle, policy, clock, memory, free } = sharedQueue();
    queue.submit('t', 'first');
    const before = free();
    const rowsBefore = ownedRows(memory);
    const other = JobQueue.attach(handle);
    const row = ownedRows(memory).find((r) => !rowsBefore.includes(r))!;
    const bytes = other.reserveBytes(MIB);
    const batch = other.reserveBytes(8192);
    const kept = queue.reserveBytes(8192);
    // Taken for dead (as a watcher presumes a silent thread), then a rebuild: its run is freed, the other instance's kept.
    Atomics.store(memory.rows.words, row * ROW_WORDS + ROW_STATE, ROW_REVOKED);
    rebuildAsAnotherHolder(memory, policy, clock);
    expect(before - free()).toBe(chunksFor(8192));
    const stats = queue.stats();
    await expectError(() => other.submit('t', bytes), ReservationLostError, 'ERR_RESERVATION_LOST');
    await expectError(() => other.submitMany([{ type: 't', payload: 'x' }, { type: 't', payload: batch }]), ReservationLostError, 'ERR_RESERVATION_LOST');
    expect(queue.stats()).toEqual(stats);
    expect(free()).toBe(before - chunksFor(8192));
    // No job number was taken; the instance that kept its reservation submits it.
    expect(queue.submit('t', kept)).toBe('J2');
  });
});
