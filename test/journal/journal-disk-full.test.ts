/**
 * A journal write that fails (issue 9 item 6): on a real full disk
 * (a 3 MiB tmpfs), a file system that turns read-only under the queue (an
 * ext4 image with errors=remount-ro, sent an error), and a journal on a
 * read-only mount. Every failure is a typed JournalWriteError with a code;
 * the call that reported it left the queue and the journal as if it never
 * ran (in memory, and after a reopen); the queue works again once the disk
 * does; close releases the journal even when its last commit fails.
 *
 * Needs root (mount). Where mounting is refused, every test here is skipped
 * and says so loudly.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import {
  IllegalStateError, JobQueue, JobQueueError, JournalFullError, JournalIOError, JournalReadOnlyError, JournalWriteError, LEASE_LOST, ManualClock, RetryPolicy, StaleLeaseError,
  WorkerPool, type Lease,
} from '../../dist/index.js';
import { fillDisk, mountRefusal, mountTmpfs, tryMount, unmount, unmountAll } from '../support/full-disk.js';
import { T0, expectErrorSync, expectNotFoundSync, mustPollSync, prng, withTimeout } from '../support/helpers.js';

type JobView = ReturnType<JobQueue['view']>;
type ErrorClass<E extends Error> = abstract new (...args: never[]) => E;

const policy = (): RetryPolicy => new RetryPolicy(3, 100, 10_000);
/** A payload of about 1 KiB: a few dozen fill a small disk's last pages. */
const KIB = 'k'.repeat(1_000);

// ── mounts ────────────────────────────────────────────────────────────────

/** Directories of file system images, removed after the test (after their mounts). */
const imageDirs: string[] = [];
const queues = new Set<JobQueue>();

const canMount = mountRefusal === undefined;
if (mountRefusal !== undefined) {
  console.warn(
    `\n!!! SKIPPING test/journal/journal-disk-full.test.ts: cannot mount a tmpfs here (${mountRefusal.message}).\n` +
      '!!! The disk-full, read-only and I/O-error tests need root and mount(8).\n',
  );
}

afterEach(() => {
  for (const queue of queues) {
    try {
      queue.close();
    } catch {
      // the disk may still refuse; the mount goes next anyway
    }
  }
  queues.clear();
  unmountAll();
  for (const dir of imageDirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function open(path: string, clock: ManualClock, options?: Parameters<typeof JobQueue.open>[3]): JobQueue {
  const queue = JobQueue.open(path, clock, policy(), options);
  queues.add(queue);
  return queue;
}

function reopenOn(queue: JobQueue, path: string, clock: ManualClock): JobQueue {
  close(queue);
  return open(path, clock);
}

function close(queue: JobQueue): void {
  queues.delete(queue);
  queue.close();
}

/** What a thread of journal-full-submitter.mjs reports. */
interface Report {
  acknowledged?: string[];
  leased?: string[];
  errors: { name: string; code: string }[];
  refused?: string[];
  closeError?: { code: string } | null;
}

/** The rejection itself, checked: class, code, and never a raw SqliteError. */
function expectJournalError<E extends Error>(fn: () => unknown, cls: ErrorClass<E>, code: string): E {
  const error = expectErrorSync(fn, cls as never, code) as unknown as E;
  expect(error).toBeInstanceOf(JournalWriteError);
  expect(error).toBeInstanceOf(JobQueueError);
  expect(error.name).not.toBe('SqliteError');
  return error;
}

/** Everything the queue shows: counts, dead letters, and a view of each of `ids` (or 'not found'). */
function snapshot(queue: JobQueue, ids: readonly string[]): { stats: unknown; dead: unknown; views: Record<string, unknown> } {
  const views: Record<string, unknown> = {};
  for (const id of ids) {
    try {
      views[id] = { ...queue.view(id) } as JobView;
    } catch (error) {
      views[id] = `not found: ${(error as JobQueueError).code}`;
    }
  }
  return { stats: queue.stats(), dead: queue.deadLetters().map((view) => view.id), views };
}

/** The journal's rows, straight from a closed file: job numbers and their state. */
function journalRows(path: string): Map<string, { status: string; attempts: number; payload: string }> {
  const db = new Database(path, { readonly: true });
  try {
    const rows = db.prepare('SELECT num, status, attempts, payload FROM jobs ORDER BY num').all() as { num: number; status: string; attempts: number; payload: string }[];
    return new Map(rows.map((row) => [`J${row.num}`, { status: row.status, attempts: row.attempts, payload: row.payload }]));
  } finally {
    db.close();
  }
}

/** A fresh 3 MiB tmpfs, the journal path on it, and a clock at T0. */
function onTmpfs(): { dir: string; path: string; clock: ManualClock } {
  const dir = mountTmpfs();
  return { dir, path: join(dir, 'queue.db'), clock: new ManualClock(T0) };
}

/**
 * Leases and completes a warm-up job (priority 9), returning its id: the first
 * lease reserves a block of tokens in the journal, so later polls need no
 * write of their own.
 */
function reserveTokens(queue: JobQueue): string {
  const warm = queue.submit('warm', 'up', 9);
  queue.complete(warm, mustPollSync(queue, warm).token);
  return warm;
}

/**
 * On a fresh tmpfs, a queue of capacity 8 (a commit ring of 32 entries, all
 * free once the last submit here committed): job `id` RUNNING under `lease`
 * for a minute, job 'y' PENDING. Then the disk is filled.
 */
function leasedOnSmallRing(): { path: string; clock: ManualClock; queue: JobQueue; id: string; lease: Lease; freeSpace: () => void } {
  const { dir, path, clock } = onTmpfs();
  const queue = open(path, clock, { capacity: 8 });
  reserveTokens(queue);
  const id = queue.submit('job', 'x');
  const lease = mustPollSync(queue, id, 60_000);
  queue.submit('job', 'y');
  return { path, clock, queue, id, lease, freeSpace: fillDisk(dir, path) };
}

/** Submits until the journal refuses one: returns the ids that were acknowledged and the refusal. */
function submitUntilRefused(queue: JobQueue, limit = 5_000): { acknowledged: string[]; refusal: unknown } {
  const acknowledged: string[] = [];
  for (let i = 0; i < limit; i++) {
    try {
      acknowledged.push(queue.submit('fill', `${i}:${KIB}`));
    } catch (refusal) {
      return { acknowledged, refusal };
    }
  }
  throw new Error(`the disk never filled: ${limit} submits went through`);
}

// ── tests ─────────────────────────────────────────────────────────────────

describe.skipIf(!canMount)('a journal on a full disk', () => {
  it('refuses a submit with JournalFullError and leaves queue and journal as if it never ran; free space and it goes on', () => {
    const { dir, path, clock } = onTmpfs();
    let queue = open(path, clock);
    const warm = reserveTokens(queue);
    const before = [queue.submit('keep', 'a', 5), queue.submit('keep', 'b', 1)];
    const freeSpace = fillDisk(dir, path, 64 * 1024);

    const { acknowledged, refusal } = submitUntilRefused(queue);
    expect(refusal).toBeInstanceOf(JournalFullError);
    expect((refusal as JobQueueError).code).toBe('ERR_JOURNAL_FULL');
    expect((refusal as Error).name).toBe('JournalFullError');
    expect((refusal as Error).cause).toMatchObject({ code: 'SQLITE_FULL' });
    const known = [...before, ...acknowledged];
    const refusedId = `J${known.length + 2}`;

    // In memory: only the acknowledged jobs, and the refused one nowhere.
    const held = snapshot(queue, [...known, refusedId]);
    expect(held.stats).toMatchObject({ pending: known.length, ready: known.length, running: 0 });
    expect(held.views[refusedId]).toBe('not found: ERR_JOB_NOT_FOUND');
    // Another refusal, on the still-full disk: the same typed error, and still nothing changed.
    expectJournalError(() => queue.submit('fill', KIB), JournalFullError, 'ERR_JOURNAL_FULL');
    expect(snapshot(queue, [...known, refusedId])).toEqual(held);
    // What poll can lease: the best acknowledged job, never the refused one.
    const lease = mustPollSync(queue, before[0]);
    expect(lease.payload).toBe('a');

    freeSpace();
    const next = queue.submit('after', 'space came back');
    expect(queue.stats().pending).toBe(known.length); // J1 is RUNNING now, `next` took its place
    close(queue);

    const rows = journalRows(path);
    expect([...rows.keys()].sort()).toEqual([warm, ...known, next].sort());
    expect(rows.has(refusedId)).toBe(false);
    queue = open(path, clock);
    expectNotFoundSync(() => queue.view(refusedId));
    expect(queue.view(next)).toMatchObject({ status: 'PENDING', type: 'after', payload: 'space came back' });
    expect(queue.stats()).toMatchObject({ pending: known.length + 1, running: 0 });
  });

  it('leaves the key of a refused keyed submit free: once the disk works, that key makes a new job, and an older holder keeps its own', () => {
    const { dir, path, clock } = onTmpfs();
    let queue = open(path, clock);
    reserveTokens(queue);
    const held = queue.submit('keep', 'a', { key: 'held' });
    const freeSpace = fillDisk(dir, path, 64 * 1024);
    const { acknowledged } = submitUntilRefused(queue);
    const before = snapshot(queue, [held, ...acknowledged]);
    expectJournalError(() => queue.submit('keyed', KIB, { key: 'refused' }), JournalFullError, 'ERR_JOURNAL_FULL');
    // A taken key changes nothing, so it needs no commit: the holder's id, even on a full disk.
    expect(queue.submit('keyed', KIB, { key: 'held' })).toBe(held);
    expect(snapshot(queue, [held, ...acknowledged])).toEqual(before);
    freeSpace();
    const made = queue.submit('keyed', 'space came back', { key: 'refused' });
    expect(queue.view(made)).toMatchObject({ key: 'refused', payload: 'space came back' });
    expect(queue.submit('keyed', 'again', { key: 'refused' })).toBe(made);
    queue = reopenOn(queue, path, clock);
    expect(queue.submit('keyed', 'after reopen', { key: 'refused' })).toBe(made);
    expect(queue.submit('keyed', 'after reopen', { key: 'held' })).toBe(held);
    close(queue);
  });

  it("refuses a debounced submit with JournalFullError: the holder keeps its payload and runAt; once there is room the replace holds after a reopen", () => {
    const { dir, path, clock } = onTmpfs();
    let queue = open(path, clock);
    reserveTokens(queue);
    const held = queue.submit('index', 'v1', { key: 'doc', debounceMillis: 1_000 });
    const freeSpace = fillDisk(dir, path, 64 * 1024);
    const { acknowledged } = submitUntilRefused(queue);
    clock.advance(500);
    const before = snapshot(queue, [held, ...acknowledged]);
    expectJournalError(() => queue.submit('index', KIB, { key: 'doc', debounceMillis: 1_000 }), JournalFullError, 'ERR_JOURNAL_FULL');
    // Neither half of the edit stayed: the old payload and the old runAt.
    expect(snapshot(queue, [held, ...acknowledged])).toEqual(before);
    expect(queue.view(held)).toMatchObject({ payload: 'v1', nextRunAt: T0 + 1_000 });
    freeSpace();
    expect(queue.submit('index', 'v2', { key: 'doc', debounceMillis: 1_000 })).toBe(held);
    expect(queue.view(held)).toMatchObject({ payload: 'v2', nextRunAt: T0 + 1_500 });
    queue = reopenOn(queue, path, clock);
    expect(queue.view(held)).toMatchObject({ payload: 'v2', nextRunAt: T0 + 1_500, status: 'PENDING' });
    close(queue);
  });

  it("refuses the cancel of a RUNNING job with JournalFullError: the job stays RUNNING and its holder's lease works; once there is room the cancel holds after a reopen", () => {
    const { dir, path, clock } = onTmpfs();
    let queue = open(path, clock);
    reserveTokens(queue);
    const id = queue.submit('job', 'p');
    const lease = mustPollSync(queue, id);
    queue.flush();
    const held = snapshot(queue, [id]);
    expect(held.views[id]).toMatchObject({ status: 'RUNNING', attempts: 1 });
    const freeSpace = fillDisk(dir, path);
    expectJournalError(() => queue.cancel(id), JournalFullError, 'ERR_JOURNAL_FULL');
    expect(snapshot(queue, [id])).toEqual(held);
    // The undo gave the lease back: its holder extends it, and nothing was frozen.
    expect(queue.extend(id, lease.token, 5_000)).toBe(T0 + 5_000);
    freeSpace();
    queue.cancel(id);
    expectErrorSync(() => queue.complete(id, lease.token), StaleLeaseError, 'ERR_STALE_LEASE');
    close(queue);
    queue = open(path, clock);
    expect(queue.view(id)).toMatchObject({ status: 'CANCELLED', attempts: 1 });
    close(queue);
  });

  it('refuses complete, fail, cancel and retryDead with JournalFullError, each leaving every job as it was, in memory and after a reopen', () => {
    const { dir, path, clock } = onTmpfs();
    let queue = open(path, clock);
    const [a, b, c, d] = [['a', 10], ['b', 9], ['c', 1], ['d', 8]].map(([payload, priority]) => queue.submit('job', payload as string, priority as number));
    const leaseA = mustPollSync(queue, a);
    const leaseB = mustPollSync(queue, b);
    queue.fail(leaseB.jobId, leaseB.token, 'first failure');
    clock.advance(100);
    const leaseB2 = mustPollSync(queue, b);
    const leaseD = mustPollSync(queue, d);
    queue.fail(leaseD.jobId, leaseD.token, 'poison', { permanent: true });
    const ids = [a!, b!, c!, d!];
    const held = snapshot(queue, ids);
    expect(held.views[d!]).toMatchObject({ status: 'DEAD' });
    expect(held.views[b!]).toMatchObject({ status: 'RUNNING', attempts: 2, lastError: 'first failure' });

    const freeSpace = fillDisk(dir, path);
    expectJournalError(() => queue.complete(a!, leaseA.token), JournalFullError, 'ERR_JOURNAL_FULL');
    expect(snapshot(queue, ids)).toEqual(held);
    expectJournalError(() => queue.fail(b!, leaseB2.token, 'second failure'), JournalFullError, 'ERR_JOURNAL_FULL');
    expect(snapshot(queue, ids)).toEqual(held);
    expectJournalError(() => queue.cancel(c!), JournalFullError, 'ERR_JOURNAL_FULL');
    expect(snapshot(queue, ids)).toEqual(held);
    expectJournalError(() => queue.retryDead(d!), JournalFullError, 'ERR_JOURNAL_FULL');
    expect(snapshot(queue, ids)).toEqual(held);
    expectJournalError(() => queue.submitMany([{ type: 'x', payload: '1' }, { type: 'x', payload: '2' }]), JournalFullError, 'ERR_JOURNAL_FULL');
    expect(snapshot(queue, ids)).toEqual(held);
    expect(snapshot(queue, ['J5', 'J6']).views).toEqual({ J5: 'not found: ERR_JOB_NOT_FOUND', J6: 'not found: ERR_JOB_NOT_FOUND' });
    // The undone calls left nothing frozen: the leases still work, the pending job can be leased.
    expect(queue.extend(a!, leaseA.token, 5_000)).toBe(T0 + 100 + 5_000);

    freeSpace();
    queue.complete(a!, leaseA.token);
    queue.fail(b!, leaseB2.token, 'second failure');
    queue.cancel(c!);
    queue.retryDead(d!);
    const after = snapshot(queue, ids);
    expect(after.views).toMatchObject({
      [a!]: { status: 'SUCCEEDED' },
      [b!]: { status: 'PENDING', attempts: 2, lastError: 'second failure' },
      [c!]: { status: 'CANCELLED' },
      [d!]: { status: 'PENDING', attempts: 0, lastError: 'poison' },
    });
    close(queue);
    queue = open(path, clock);
    expect(snapshot(queue, ids)).toEqual(after);
  });

  it('refuses remove with JournalFullError: the job is back as it was, its key held, in memory and after a reopen', () => {
    const { dir, path, clock } = onTmpfs();
    let queue = open(path, clock);
    const pending = queue.submit('job', 'p', { key: 'held' });
    const done = queue.submit('job', 'd', 5);
    queue.complete(done, mustPollSync(queue, done).token, { kept: true });
    const ids = [pending, done];
    const held = snapshot(queue, ids);

    const freeSpace = fillDisk(dir, path);
    expectJournalError(() => queue.remove(pending), JournalFullError, 'ERR_JOURNAL_FULL');
    expect(snapshot(queue, ids)).toEqual(held);
    expectJournalError(() => queue.remove(done), JournalFullError, 'ERR_JOURNAL_FULL');
    expect(snapshot(queue, ids)).toEqual(held);
    // The key is held still: a keyed submit gets the job back, and writes nothing.
    expect(queue.submit('job', 'again', { key: 'held' })).toBe(pending);

    freeSpace();
    queue.remove(pending);
    close(queue);
    queue = open(path, clock);
    const after = snapshot(queue, ids);
    expect(after.views).toMatchObject({ [pending]: 'not found: ERR_JOB_NOT_FOUND', [done]: { status: 'SUCCEEDED', result: { kept: true } } });
  });

  it('refuses an updatePayload between text and bytes with JournalFullError, the old payload stored again as it was', () => {
    const { dir, path, clock } = onTmpfs();
    let queue = open(path, clock);
    reserveTokens(queue);
    // Several chunks each, not valid UTF-8: the undo stores the freed chain's raw bytes again.
    const bytes = Uint8Array.from({ length: 1_000 }, (_, i) => (i * 7 + 0xf0) & 0xff);
    const binary = queue.submit('job', bytes);
    const text = queue.submit('job', `text:${KIB}`);
    // One chunk of text: an exclusive queue keeps it as a string, not encoded (Arena#keepStrings); the undo saves its bytes all the same.
    const short = queue.submit('job', 'tiny');
    const ids = [binary, text, short];
    const held = snapshot(queue, ids);

    const freeSpace = fillDisk(dir, path);
    expectJournalError(() => queue.updatePayload(binary, `new:${KIB}`), JournalFullError, 'ERR_JOURNAL_FULL');
    expectJournalError(() => queue.updatePayload(text, bytes.slice(0, 900)), JournalFullError, 'ERR_JOURNAL_FULL');
    expectJournalError(() => queue.updatePayload(short, bytes.slice(0, 10)), JournalFullError, 'ERR_JOURNAL_FULL');
    expect(snapshot(queue, ids)).toEqual(held);
    expect(queue.view(short).payload).toBe('tiny');
    expect(queue.view(binary).payload).toEqual(bytes);
    expect(queue.view(text).payload).toBe(`text:${KIB}`);
    freeSpace();
    queue.updatePayload(text, bytes.slice(0, 900));
    close(queue);
    queue = open(path, clock);
    expect(mustPollSync(queue, binary).payload).toEqual(bytes);
    expect(mustPollSync(queue, text).payload).toEqual(bytes.slice(0, 900));
  });

  it('refuses each edit of a PENDING job and a snooze with JournalFullError, leaving every job as it was, in memory and after a reopen', () => {
    const { dir, path, clock } = onTmpfs();
    let queue = open(path, clock);
    reserveTokens(queue);
    // A payload of several chunks, so an undone updatePayload must store the old one again.
    const ready = queue.submit('job', `ready:${KIB}`, 2);
    const delayed = queue.submit('job', 'delayed', { runAt: T0 + 60_000 });
    const waiting = queue.submit('job', 'waiting', 1);
    const lease = mustPollSync(queue, ready, 60_000);
    const ids = [ready, delayed, waiting];
    const held = snapshot(queue, ids);

    const freeSpace = fillDisk(dir, path);
    for (const edit of [
      () => queue.changePriority(delayed, 9), () => queue.changeDelay(waiting, 5_000), () => queue.promote(delayed),
      () => queue.updatePayload(waiting, `new:${KIB}`), () => queue.release(ready, lease.token, { delayMillis: 1_000 }),
    ]) {
      expectJournalError(edit, JournalFullError, 'ERR_JOURNAL_FULL');
      expect(snapshot(queue, ids)).toEqual(held);
    }
    expect(journalRows(path).get(waiting)?.payload).toBe('waiting');
    // Nothing was left frozen: the edits go through once the disk works, and stay after a reopen.
    freeSpace();
    queue.updatePayload(waiting, `new:${KIB}`);
    queue.changePriority(delayed, 9);
    queue.promote(delayed);
    queue.release(ready, lease.token, { delayMillis: 1_000 });
    const after = snapshot(queue, ids);
    expect(after.views).toMatchObject({
      [ready]: { status: 'PENDING', attempts: 0, nextRunAt: T0 + 1_000 },
      [delayed]: { status: 'PENDING', priority: 9, nextRunAt: T0 },
      [waiting]: { status: 'PENDING', payload: `new:${KIB}` },
    });
    close(queue);
    queue = open(path, clock);
    expect(snapshot(queue, ids)).toEqual(after);
    expect(mustPollSync(queue, delayed).payload).toBe('delayed');
    expect(mustPollSync(queue, waiting).payload).toBe(`new:${KIB}`);
  });

  it('reopens after a refused call with exactly what the queue held (the undo reached the journal too)', () => {
    const { dir, path, clock } = onTmpfs();
    let queue = open(path, clock);
    const id = queue.submit('job', 'x');
    const lease = mustPollSync(queue, id);
    queue.submit('other', 'y'); // commits the lease along
    const held = snapshot(queue, [id, 'J2', 'J3']);
    const freeSpace = fillDisk(dir, path);
    expectJournalError(() => queue.complete(id, lease.token), JournalFullError, 'ERR_JOURNAL_FULL');
    expectJournalError(() => queue.submit('refused', 'z'), JournalFullError, 'ERR_JOURNAL_FULL');
    freeSpace();
    close(queue);
    queue = open(path, clock);
    const reopened = snapshot(queue, [id, 'J2', 'J3']);
    // The lease died with the closed queue: that attempt counts (retried after its backoff); nothing else differs.
    expect(reopened.views[id]).toMatchObject({ status: 'PENDING', attempts: 1, nextRunAt: clock.now() + 100, lastError: LEASE_LOST });
    expect(reopened.views.J2).toEqual(held.views.J2);
    expect(reopened.views.J3).toBe('not found: ERR_JOB_NOT_FOUND');
    expect(reopened.stats).toMatchObject({ pending: 2, running: 0, succeeded: 0 });
  });

  it('puts back the finished job a refused submit evicted to make room: its view, its key and the counts, also after a reopen', () => {
    const { dir, path, clock } = onTmpfs();
    let queue = open(path, clock, { capacity: 3 });
    // Finished first, so evicted first: a keyed job whose key stays taken for a minute after it finished.
    const keyed = queue.submit('done', 'payload', { key: 'kept', keyTtlMillis: 60_000 });
    queue.complete(keyed, mustPollSync(queue, keyed).token, { pages: 3 });
    const other = queue.submit('done', 'b');
    queue.complete(other, mustPollSync(queue, other).token);
    const pending = queue.submit('pending', 'p');
    const ids = [keyed, other, pending, 'J4'];
    const held = snapshot(queue, ids);
    expect(held.stats).toMatchObject({ pending: 1, succeeded: 2 });

    const freeSpace = fillDisk(dir, path);
    // The queue is full: the submit evicts the oldest finished job for its slot, and then its commit fails.
    expectJournalError(() => queue.submit('refused', 'z'), JournalFullError, 'ERR_JOURNAL_FULL');
    expect(snapshot(queue, ids)).toEqual(held);
    // The key is still its holder's: no new job, so nothing to commit on the full disk.
    expect(queue.submit('again', 'x', { key: 'kept' })).toBe(keyed);

    freeSpace();
    close(queue);
    queue = open(path, clock, { capacity: 3 });
    expect(snapshot(queue, ids)).toEqual(held);
    // Once the disk works, a submit evicts it as it would have.
    queue.submit('after', 'q');
    expect(() => queue.view(keyed)).toThrow(/was evicted/);
  });

  it('leases nothing in a completeAndPoll whose complete is refused: the next job stays PENDING, its attempt and its rate limit unspent', () => {
    const { dir, path, clock } = onTmpfs();
    const queue = open(path, clock);
    reserveTokens(queue);
    const first = queue.submit('job', 'a', 5);
    const second = queue.submit('next', 'b', 1);
    const lease = mustPollSync(queue, first);
    // One lease of 'next' a minute: the refused call's lease of it must not use that one up.
    queue.setRateLimit('next', { max: 1, windowMillis: 60_000 });
    queue.submit('other', 'c', 0); // commits the lease along
    const ids = [first, second];
    const held = snapshot(queue, ids);

    const freeSpace = fillDisk(dir, path);
    expectJournalError(() => queue.completeAndPoll(first, lease.token, 'w1', 1_000), JournalFullError, 'ERR_JOURNAL_FULL');
    expect(snapshot(queue, ids)).toEqual(held);
    expect(held.views[second]).toMatchObject({ status: 'PENDING', attempts: 0 });

    freeSpace();
    expect(queue.completeAndPoll(first, lease.token, 'w1', 1_000)).toMatchObject({ jobId: second, attempt: 1 });
    expect(queue.view(first).status).toBe('SUCCEEDED');
  });

  it('answers reads and polls on a full disk after an expiry they bring up to now, and commits the expiry with the next write that goes through', () => {
    const { dir, path, clock } = onTmpfs();
    const queue = open(path, clock);
    reserveTokens(queue);
    const expiring = queue.submit('job', 'x', 5);
    const next = queue.submit('job', 'y', 1);
    mustPollSync(queue, expiring, 1_000);
    queue.submit('other', 'z', 0); // commits the lease along

    const freeSpace = fillDisk(dir, path);
    clock.advance(1_000);
    // The expiry is a failed attempt that no call waits to commit: a crash before it brings the job back RUNNING, and the reopen fails that attempt all the same.
    expect(queue.stats()).toMatchObject({ running: 0, pending: 3 });
    expect(queue.view(expiring)).toMatchObject({ status: 'PENDING', attempts: 1, lastError: 'lease expired' });
    expect(queue.poll('w1', 1_000)).toMatchObject({ jobId: next, attempt: 1 });
    expect(journalRows(path).get(expiring)).toMatchObject({ status: 'RUNNING', attempts: 1 });

    freeSpace();
    queue.submit('job', 'after');
    expect(journalRows(path).get(expiring)).toMatchObject({ status: 'PENDING', attempts: 1 });
  });

  it('carries a lease made on a full disk to the journal with the next commit that goes through', () => {
    const { dir, path, clock } = onTmpfs();
    const queue = open(path, clock);
    reserveTokens(queue);
    const id = queue.submit('job', 'x');
    const freeSpace = fillDisk(dir, path);
    const lease = mustPollSync(queue, id); // lazy: no commit waited for
    expectJournalError(() => queue.submit('job', 'refused'), JournalFullError, 'ERR_JOURNAL_FULL');
    expect(journalRows(path).get(id)).toMatchObject({ status: 'PENDING', attempts: 0 });
    freeSpace();
    queue.submit('job', 'after');
    // Read while the queue is open (WAL readers see every commit): the lease went with that submit.
    expect(journalRows(path).get(id)).toMatchObject({ status: 'RUNNING', attempts: 1 });
    queue.complete(id, lease.token);
    expect(journalRows(path).get(id)).toMatchObject({ status: 'SUCCEEDED' });
  });

  it('stays unchanged through many refused calls, also once the commit ring fills and commits under the lock', () => {
    // The notes of refused calls and lazy heartbeats fill the small commit ring soon.
    const leased = leasedOnSmallRing();
    const { path, clock, id, lease, freeSpace } = leased;
    let queue = leased.queue;
    const ids = [id, 'J3', 'J4'];
    let leaseUntil = lease.leaseUntil;
    let refusedHeartbeats = 0;
    for (let round = 0; round < 100; round++) {
      expectJournalError(() => queue.submit('job', `refused ${round}`), JournalFullError, 'ERR_JOURNAL_FULL');
      expectJournalError(() => queue.fail(id, lease.token, 'no'), JournalFullError, 'ERR_JOURNAL_FULL');
      clock.advance(1);
      // A heartbeat is lazy: it goes through until the ring is full, then is refused like the rest.
      try {
        leaseUntil = queue.extend(id, lease.token, 60_000);
      } catch (error) {
        expect(error).toBeInstanceOf(JournalFullError);
        refusedHeartbeats++;
      }
      expect(queue.view(id)).toMatchObject({ status: 'RUNNING', attempts: 1, leaseUntil, lastError: null });
      expect(queue.stats()).toMatchObject({ pending: 1, running: 1, succeeded: 1 });
    }
    expect(refusedHeartbeats).toBeGreaterThan(0);
    expectJournalError(() => queue.submitMany([{ type: 'a', payload: '1' }]), JournalFullError, 'ERR_JOURNAL_FULL');
    const held = snapshot(queue, ids);
    freeSpace();
    queue.complete(id, lease.token);
    const next = queue.submit('job', 'after');
    close(queue);
    queue = open(path, clock, { capacity: 8 });
    expect(queue.view(id)).toMatchObject({ status: 'SUCCEEDED' });
    expect(queue.view('J3')).toEqual(held.views.J3);
    expect(queue.view(next)).toMatchObject({ status: 'PENDING', payload: 'after' });
    expect(queue.stats()).toMatchObject({ pending: 2, running: 0, succeeded: 2 });
  });

  it('undoes a refused submit whose note took the last entry of the commit ring: the undo itself needs no entry there', () => {
    const { path, queue, id, lease, freeSpace } = leasedOnSmallRing();
    // A lazy heartbeat takes one entry; then each refused submit takes one, until one takes the last.
    queue.extend(id, lease.token, 60_000);
    for (let round = 0; round < 40; round++) {
      expectJournalError(() => queue.submit('job', `refused ${round}`), JournalFullError, 'ERR_JOURNAL_FULL');
      expect(queue.stats()).toMatchObject({ pending: 1, running: 1 });
    }
    freeSpace();
    const next = queue.submit('job', 'after');
    expect(queue.jobs({ status: 'PENDING' }).jobs.map((job) => job.payload)).toEqual(['y', 'after']);
    expect(journalRows(path).get(next)).toMatchObject({ status: 'PENDING', payload: 'after' });
  });

  it('refuses to open a journal on a full disk with JournalFullError, changing nothing; with space back it opens, the lost lease counted', () => {
    const { dir, path, clock } = onTmpfs();
    let queue = open(path, clock);
    const [leased, waiting] = [queue.submit('job', 'a', 5), queue.submit('job', 'b')];
    mustPollSync(queue, leased);
    queue.flush();
    close(queue);
    const freeSpace = fillDisk(dir, path);
    expectJournalError(() => open(path, clock), JournalFullError, 'ERR_JOURNAL_FULL');
    freeSpace();
    // The refused open wrote nothing: the lease is still RUNNING in the file.
    expect(journalRows(path).get(leased)).toMatchObject({ status: 'RUNNING', attempts: 1 });
    queue = open(path, clock);
    expect(queue.view(leased)).toMatchObject({ status: 'PENDING', attempts: 1, lastError: LEASE_LOST });
    expect(queue.view(waiting)).toMatchObject({ status: 'PENDING', attempts: 0 });
  });

  it('throws JournalFullError from a close whose last commit fails, yet releases the journal: a reopen in this process works', () => {
    const { dir, path, clock } = onTmpfs();
    let queue = open(path, clock);
    const id = queue.submit('job', 'x');
    mustPollSync(queue, id); // a lease: committed lazily, so still to commit at close
    const freeSpace = fillDisk(dir, path);
    queues.delete(queue);
    expectJournalError(() => queue.close(), JournalFullError, 'ERR_JOURNAL_FULL');
    expectErrorSync(() => queue.stats(), IllegalStateError, 'ERR_ILLEGAL_STATE');

    // Still full: the reopen needs no write, and the lease close could not commit is simply not there.
    queue = open(path, clock);
    expect(queue.view(id)).toMatchObject({ status: 'PENDING', attempts: 0 });
    expectJournalError(() => queue.submit('job', 'refused'), JournalFullError, 'ERR_JOURNAL_FULL');
    freeSpace();
    const next = queue.submit('job', 'after');
    close(queue);
    expect([...journalRows(path).keys()]).toEqual([id, next]);
  });

  it('has a pool relaunch threads whose every poll fails after a growing pause, not hundreds a second, and run every job once space comes back', async () => {
    const { dir, path, clock } = onTmpfs();
    const queue = open(path, clock);
    const logDir = mkdtempSync(join(tmpdir(), 'leasehold-pool-log-'));
    const ids = Array.from({ length: 40 }, () => queue.submit('greet', JSON.stringify({ dir: logDir })));
    const freeSpace = fillDisk(dir, path);
    const pool = new WorkerPool(queue, { handlers: new URL('../fixtures/pool-default.mjs', import.meta.url), threads: 2, leaseMillis: 10_000 });
    const errors: string[] = [];
    pool.on('error', (event) => errors.push(event.error));
    try {
      await pool.start();
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      const restartsWhileFull = pool.stats().restarts;
      freeSpace();
      await withTimeout(pool.drain(), 30_000, 'the pool draining once space came back');
      // Each thread dies at its first poll; relaunched after 250, 500, 1000 ms: about 3 deaths each in 2 s (at once: hundreds).
      expect(restartsWhileFull).toBeGreaterThan(0);
      expect(restartsWhileFull).toBeLessThanOrEqual(10);
      expect(errors.filter((error) => !error.startsWith('the worker thread died while it held no job: '))).toEqual([]);
      expect(errors.some((error) => error.includes('SQLITE_FULL'))).toBe(true);
    } finally {
      await pool.close();
      rmSync(logDir, { recursive: true, force: true });
    }
    expect(ids.map((id) => queue.view(id).status)).toEqual(ids.map(() => 'SUCCEEDED'));
  });

  it('keeps every acknowledged job and none of the refused ones while 3 threads submit as the disk fills, and a poller never leases a refused one', async () => {
    const { dir, path, clock } = onTmpfs();
    const queue = open(path, clock);
    const warm = reserveTokens(queue);
    fillDisk(dir, path, 768 * 1024);
    const go = new Int32Array(new SharedArrayBuffer(8));
    const roles = ['poll', 'submit', 'submit', 'submit'];
    const workers = roles.map((role, thread) =>
      new Worker(new URL('../fixtures/journal-full-submitter.mjs', import.meta.url), {
        workerData: { handle: queue.share(), thread, go, refusals: 3, padding: KIB, role },
      }),
    );
    const reports = workers.map((worker) => new Promise<Report>((resolve, reject) => {
      worker.on('message', (message) => {
        if (message.kind === 'done') resolve(message);
      });
      worker.once('error', reject);
      worker.once('exit', (code) => reject(new Error(`thread exited with ${code} before reporting`)));
    }));
    await withTimeout(
      Promise.all(workers.map((worker) => new Promise<void>((resolve) => worker.once('message', () => resolve())))),
      30_000,
      'threads starting',
    );
    // Release every thread waiting for the start.
    Atomics.store(go, 0, 1);
    Atomics.notify(go, 0);
    const submitters = await withTimeout(Promise.all(reports.slice(1)), 120_000, 'submitter threads');
    Atomics.store(go, 1, 1);
    const poller = await withTimeout(reports[0]!, 30_000, 'poller thread');

    const acknowledged = submitters.flatMap((report) => report.acknowledged!);
    for (const report of submitters) {
      expect(report.closeError === null || report.closeError!.code === 'ERR_JOURNAL_FULL').toBe(true);
      expect(report.errors).toHaveLength(3);
      for (const error of report.errors) expect(error).toMatchObject({ name: 'JournalFullError', code: 'ERR_JOURNAL_FULL' });
    }
    expect(poller.errors).toEqual([]);
    expect(new Set(acknowledged).size).toBe(acknowledged.length);
    expect(acknowledged.length).toBeGreaterThan(0);
    const ackedSet = new Set(acknowledged);
    // A job is leasable only once its submit committed: never one whose submit was refused.
    expect(poller.leased!.filter((id) => !ackedSet.has(id))).toEqual([]);
    const stats = queue.stats();
    expect(stats.pending + stats.running).toBe(acknowledged.length);
    expect(stats.running).toBe(poller.leased!.length);
    const refusedPayloads = new Set(submitters.flatMap((report) => report.refused!));

    execFileSync('rm', ['-f', join(dir, 'filler')]);
    close(queue);
    const rows = journalRows(path);
    expect([...rows.keys()].sort()).toEqual([warm, ...acknowledged].sort());
    for (const row of rows.values()) expect(refusedPayloads.has(row.payload)).toBe(false);
    const reopened = open(path, clock);
    expect(reopened.stats()).toMatchObject({ pending: acknowledged.length, succeeded: 1 });
  }, 180_000);
});

/**
 * Random calls on a journaled queue whose disk fills and frees at random,
 * beside an in-memory twin that runs only the calls the journal accepted: a
 * refused call (a JournalWriteError) must leave the queue as it was; an
 * accepted one must answer as the twin does (up to ids and fencing tokens,
 * which a refused call may have used up) and leave the same state; and a
 * reopen must bring back what the twin holds.
 */
describe.skipIf(!canMount)('a journal on a disk that fills and frees at random, beside an in-memory twin', () => {
  const RUNS = 12;
  const STEPS = 150;
  const CALLS = [
    'submit', 'submit', 'submitMany', 'keyed', 'delayed', 'poll', 'poll', 'complete', 'result', 'fail', 'extend', 'release', 'completeAndPoll', 'cancel',
    'retryDead', 'clock', 'rate', 'pause', 'resume',
  ] as const;

  it(`answers as the twin does and, refused, changes nothing: ${RUNS} seeded runs of ${STEPS} calls, each ending in a reopen`, () => {
    const seed = 20261204;
    const random = prng(seed);
    const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
    let refusals = 0;
    for (let run = 0; run < RUNS; run++) {
      const { dir, path } = onTmpfs();
      const clocks = [new ManualClock(T0), new ManualClock(T0)] as const;
      const options = { capacity: pick([8, 40]) };
      let journaled = open(path, clocks[0], options);
      const twin = new JobQueue(clocks[1], policy(), options);
      queues.add(twin);
      /** Each of the twin's ids, with the journaled queue's id of the same job. */
      const idOf = new Map<string, string>();
      /** Each lease both queues made of one job: the journaled queue's, the twin's. */
      const leases: Array<[Lease, Lease]> = [];
      const state = (queue: JobQueue) => {
        const views = [...idOf].map(([twinId, journaledId]) => {
          try {
            const { id: _, ...view } = queue.view(queue === twin ? twinId : journaledId);
            return view;
          } catch (error) {
            return (error as JobQueueError).code;
          }
        });
        return { stats: queue.stats(), views, rateLimits: queue.rateLimits() };
      };
      let freeSpace: (() => void) | undefined;
      for (let step = 0; step < STEPS; step++) {
        if (random() < 0.08) {
          if (freeSpace === undefined) freeSpace = fillDisk(dir, path);
          else [freeSpace(), (freeSpace = undefined)];
        }
        const call = pick(CALLS);
        const pair = leases.length > 0 ? pick(leases) : undefined;
        const target = idOf.size > 0 ? pick([...idOf.keys()]) : 'J1';
        const [type, priority, payload, key, leaseMillis, by] = [pick(['t', 'u']), pick([0, 1, 5]), random() < 0.3 ? KIB : 'p', pick(['a', 'b']), pick([50, 1_000]), pick([10, 100, 400])];
        const where = `seed ${seed}, run ${run}, step ${step}: ${call}`;
        if (call === 'clock') {
          for (const clock of clocks) clock.advance(by);
          continue;
        }
        const make = (queue: JobQueue, lease: Lease | undefined, id: string): unknown => {
          switch (call) {
            case 'submit': return queue.submit(type, payload, priority);
            case 'submitMany': return queue.submitMany([{ type, payload }, { type: 'u', payload: 'x', key }, { type: 'u', payload: 'y', key }]);
            case 'keyed': return queue.submit('k', payload, { key, keyTtlMillis: 500 });
            case 'delayed': return queue.submit('d', payload, { delayMillis: 300 });
            case 'poll': return queue.poll('w', leaseMillis);
            case 'complete': return lease && queue.complete(lease.jobId, lease.token);
            case 'result': return lease && queue.complete(lease.jobId, lease.token, { step });
            case 'fail': return lease && queue.fail(lease.jobId, lease.token, 'no', { permanent: step % 5 === 0 });
            case 'extend': return lease && queue.extend(lease.jobId, lease.token, 400);
            case 'release': return lease && queue.release(lease.jobId, lease.token);
            case 'completeAndPoll': return lease && queue.completeAndPoll(lease.jobId, lease.token, 'w', 500);
            case 'cancel': return queue.cancel(id);
            case 'retryDead': return queue.retryDead(id);
            case 'rate': return queue.setRateLimit('t', { max: 2, windowMillis: 300 });
            case 'pause': return queue.pause();
            case 'resume': return queue.resume();
          }
        };
        const outcome = (queue: JobQueue, lease: Lease | undefined, id: string): { answer?: unknown; error?: unknown } => {
          try {
            return { answer: make(queue, lease, id) };
          } catch (error) {
            return { error };
          }
        };
        const before = state(journaled);
        const mine = outcome(journaled, pair?.[0], idOf.get(target) ?? target);
        expect(mine.error === undefined || mine.error instanceof JobQueueError, `${where} threw ${String(mine.error)}`).toBe(true);
        if (mine.error instanceof JournalWriteError) {
          refusals++;
          expect(state(journaled), `${where}, refused with ${mine.error.code}`).toEqual(before);
          continue;
        }
        const theirs = outcome(twin, pair?.[1], target);
        expect((mine.error as JobQueueError | undefined)?.code, where).toBe((theirs.error as JobQueueError | undefined)?.code);
        expect(withoutIds(mine.answer), where).toEqual(withoutIds(theirs.answer));
        const made = [mine.answer].flat();
        [theirs.answer].flat().forEach((one, i) => {
          if (typeof one === 'string') idOf.set(one, made[i] as string);
          else if (isLease(one)) {
            idOf.set(one.jobId, (made[i] as Lease).jobId);
            leases.push([made[i] as Lease, one]);
          }
        });
        expect(state(journaled), where).toEqual(state(twin));
      }
      // The disk back, and a reopen: the journal holds what the twin holds, a RUNNING job back as a failed attempt.
      freeSpace?.();
      const held = state(twin);
      close(journaled);
      journaled = open(path, clocks[0], options);
      const reopened = state(journaled);
      expect(reopened.rateLimits).toEqual(held.rateLimits);
      held.views.forEach((view, i) => {
        const where = `seed ${seed}, run ${run}, after the reopen: ${[...idOf.keys()][i]}`;
        if (typeof view === 'object' && view.status === 'RUNNING') expect(reopened.views[i], where).toMatchObject({ attempts: view.attempts, lastError: LEASE_LOST });
        else expect(reopened.views[i], where).toEqual(view);
      });
      close(journaled);
      queues.delete(twin);
      twin.close();
    }
    // The disk was full often enough for the runs to mean something.
    expect(refusals).toBeGreaterThan(RUNS * 5);
  });
});

function isLease(value: unknown): value is Lease {
  return typeof value === 'object' && value !== null && 'jobId' in value;
}

/** A call's answer without what a refused call before it may have used up: ids (ids of jobs, and of leases) and fencing tokens. */
function withoutIds(answer: unknown): unknown {
  if (Array.isArray(answer)) return answer.map(withoutIds);
  if (typeof answer === 'string') return 'an id';
  if (!isLease(answer)) return answer;
  const { jobId: _, token: __, ...rest } = answer;
  return rest;
}

describe.skipIf(!canMount)('a journal whose file system fails', () => {
  it('refuses with JournalIOError when the file system turns read-only under the queue, changing nothing; a new mount reopens it', () => {
    const imageDir = mkdtempSync(join(tmpdir(), 'leasehold-image-'));
    imageDirs.push(imageDir);
    const image = join(imageDir, 'fs.img');
    execFileSync('truncate', ['-s', '16M', image]);
    execFileSync('mkfs.ext4', ['-q', '-F', image], { stdio: 'pipe' });
    const dir = tryMount(['-o', 'loop,errors=remount-ro', image]);
    if (dir instanceof Error) {
      console.warn(`\n!!! SKIPPING the remount-ro test: cannot mount an ext4 image (${dir.message})\n`);
      return;
    }
    const path = join(dir, 'queue.db');
    const clock = new ManualClock(T0);
    // FULL: what was acknowledged is on the device before the file system fails (NORMAL leaves it in the page cache).
    let queue = open(path, clock, { synchronous: 'FULL' });
    const id = queue.submit('job', 'x');
    const lease = mustPollSync(queue, id);
    queue.submit('job', 'y');
    const held = snapshot(queue, [id, 'J2', 'J3']);
    // ext4 with errors=remount-ro turns itself read-only at the first error: here, one we report to it.
    const device = readdirSync('/sys/fs/ext4').filter((name) => name.startsWith('loop'));
    for (const name of device) {
      const mountOf = execFileSync('findmnt', ['-n', '-o', 'TARGET', `/dev/${name}`]).toString().trim();
      if (mountOf === dir) writeFileSync(`/sys/fs/ext4/${name}/trigger_fs_error`, 'leasehold test\n');
    }
    expectJournalError(() => queue.complete(id, lease.token), JournalIOError, 'ERR_JOURNAL_IO');
    expectJournalError(() => queue.submit('job', 'refused'), JournalIOError, 'ERR_JOURNAL_IO');
    expect(snapshot(queue, [id, 'J2', 'J3'])).toEqual(held);
    queues.delete(queue);
    expectJournalError(() => queue.close(), JournalIOError, 'ERR_JOURNAL_IO');

    // Remounted (after fsck), the journal holds what was acknowledged, and opens in this very process.
    unmount(dir);
    // e2fsck exits 1 when it repaired something: the error we injected is one.
    expect(spawnSync('e2fsck', ['-f', '-y', image]).status).toBeLessThanOrEqual(1);
    const again = tryMount(['-o', 'loop', image], dir);
    if (again instanceof Error) throw again;
    queue = open(path, clock);
    expect(queue.view(id)).toMatchObject({ status: 'PENDING', attempts: 1, lastError: LEASE_LOST });
    expect(queue.view('J2')).toMatchObject({ status: 'PENDING', payload: 'y' });
    expectNotFoundSync(() => queue.view('J3'));
    close(queue);
  });

  it('refuses to open a journal on a read-only mount with JournalReadOnlyError, not as a damaged file', () => {
    const { dir, path, clock } = onTmpfs();
    const queue = open(path, clock);
    queue.submit('job', 'x');
    close(queue);
    execFileSync('mount', ['-o', 'remount,ro', dir]);
    expectJournalError(() => open(path, clock), JournalReadOnlyError, 'ERR_JOURNAL_READONLY');
    execFileSync('mount', ['-o', 'remount,rw', dir]);
    expect(open(path, clock).view('J1')).toMatchObject({ status: 'PENDING', payload: 'x' });
  });
});
