/**
 * The SQLite journal within one process: `JobQueue.open` restores
 * everything a closed journal held; every kind of state change is journaled;
 * eviction deletes from the journal; one owner at a time (a stale owner killed
 * with SIGKILL does not lock the journal forever); corrupt and foreign files
 * are refused and left untouched; a version-1 journal is migrated; submitMany
 * is all or nothing.
 *
 * Crashes of a whole process are in journal-crash.test.ts; the WorkerPool on a
 * journal is in journal-pool.test.ts.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import {
  JobQueue,
  JournalBusyError,
  IllegalStateError,
  JournalCorruptError,
  JournalIOError,
  ManualClock,
  QueueFullError,
  RetryPolicy,
  StaleLeaseError,
} from '../../dist/index.js';
import { T0, expectErrorSync, expectInvalidSync, expectNotFoundSync, mustPollSync, prng, startWorker, withTimeout } from '../support/helpers.js';
import { SCHEMA_VERSION, children, closeJournal, openJournal as openTracked, tempDir, tempJournal } from '../support/journal-harness.js';

type JobView = ReturnType<JobQueue['view']>;
type Options = Parameters<typeof JobQueue.open>[3];

const LEASE_LOST = 'lease lost: the process stopped while the job ran';
/** 3 attempts; backoff 100, 200, 400 ... capped at 10 000 ms; no jitter. */
const policy = (): RetryPolicy => new RetryPolicy(3, 100, 10_000);

function openJournal(path: string, clock: ManualClock, options?: Options): JobQueue {
  return openTracked(path, clock, policy(), options);
}

/** Closes `queue` and opens its journal again on the same clock. */
function reopen(queue: JobQueue, path: string, clock: ManualClock, options?: Options): JobQueue {
  closeJournal(queue);
  return openJournal(path, clock, options);
}

/** Everything a view says, as plain data. */
function plain(view: JobView): Record<string, unknown> {
  return { ...view };
}

/** The one row of job Jn, read straight from a closed journal file. */
function row(path: string, num: number): Record<string, unknown> | undefined {
  const db = new Database(path);
  try {
    return db.prepare('SELECT * FROM jobs WHERE num = ?').get(num) as Record<string, unknown> | undefined;
  } finally {
    db.close();
  }
}

describe('reopening a closed journal', () => {
  it('restores every job with all its fields, and ids and tokens continue', () => {
    const path = tempJournal();
    const clock = new ManualClock(T0);
    let queue = openJournal(path, clock);
    const ids = [
      queue.submit('email', 'plain'),
      queue.submit('resize', '{"w":640,"h":480}', 7),
      queue.submit('report', 'later', -3, T0 + 5_000),
      queue.submit('unicode', 'ünïcødé 🚀 \u0000 nul and\nnewline', 2),
      queue.submit('empty', null),
      queue.submit('big', 'x'.repeat(100_000), 1),
    ];
    expect(ids).toEqual(['J1', 'J2', 'J3', 'J4', 'J5', 'J6']);
    const tokens: number[] = [];
    // J2 (priority 7) succeeds; J4 (priority 2) fails once and waits out its backoff.
    let lease = mustPollSync(queue, 'J2');
    tokens.push(lease.token);
    clock.advance(3);
    queue.complete('J2', lease.token);
    lease = mustPollSync(queue, 'J4');
    tokens.push(lease.token);
    queue.fail('J4', lease.token, 'first failure');
    clock.advance(7);

    const before = ids.map((id) => plain(queue.view(id)));
    const statsBefore = queue.stats();
    queue = reopen(queue, path, clock);

    expect(ids.map((id) => plain(queue.view(id)))).toEqual(before);
    expect(queue.stats()).toEqual(statsBefore);
    expect(queue.submit('next', 'one')).toBe('J7');
    clock.advance(1_000); // J4's backoff is over
    lease = mustPollSync(queue, 'J4');
    expect(lease.attempt).toBe(2);
    expect(lease.token).toBeGreaterThan(Math.max(...tokens));
    tokens.push(lease.token);

    // And once more, across a second reopen.
    queue.complete('J4', lease.token);
    queue = reopen(queue, path, clock);
    expect(queue.view('J4')).toMatchObject({ status: 'SUCCEEDED', attempts: 2, lastError: 'first failure' });
    expect(queue.submit('next', 'two')).toBe('J8');
    expect(mustPollSync(queue).token).toBeGreaterThan(Math.max(...tokens));
  });

  it('opens a journal that does not exist yet as an empty queue', () => {
    const queue = openJournal(tempJournal(), new ManualClock(T0));
    expect(queue.stats()).toEqual({ pending: 0, ready: 0, delayed: 0, running: 0, succeeded: 0, dead: 0, cancelled: 0, paused: false });
    expect(queue.poll('w', 1_000)).toBeUndefined();
    expectNotFoundSync(() => queue.view('J1'));
    expect(queue.submit('a', 'b')).toBe('J1');
  });

  it('accepts synchronous FULL and NORMAL, and refuses anything else with InvalidArgumentError', () => {
    const clock = new ManualClock(T0);
    for (const synchronous of ['FULL', 'NORMAL'] as const) {
      const path = tempJournal();
      let queue = openJournal(path, clock, { synchronous });
      const id = queue.submit('t', synchronous);
      queue = reopen(queue, path, clock, { synchronous });
      expect(queue.view(id).payload).toBe(synchronous);
    }
    expectInvalidSync(() => openJournal(tempJournal(), clock, { synchronous: 'OFF' as never }));
  });
});

describe('reopening a closed journal: order and limits', () => {
  it('hands jobs out in the same order after a reopen: priority, then runAt, then submission order', () => {
    const path = tempJournal();
    const clock = new ManualClock(T0);
    const random = prng(7);
    let queue = openJournal(path, clock);
    for (let i = 0; i < 60; i++) {
      queue.submit('t', `p${i}`, Math.floor(random() * 3), T0 - Math.floor(random() * 3) * 10);
    }
    const twin = openJournal(tempJournal(), clock); // the same jobs, never reopened
    for (let i = 1; i <= 60; i++) {
      const v = queue.view(`J${i}`);
      twin.submit(v.type, v.payload, v.priority, v.nextRunAt);
    }
    queue = reopen(queue, path, clock);
    const order = (q: JobQueue): string[] => {
      const ids: string[] = [];
      for (let lease = q.poll('w', 1_000); lease !== undefined; lease = q.poll('w', 1_000)) {
        ids.push(lease.jobId);
        q.complete(lease.jobId, lease.token);
      }
      return ids;
    };
    expect(order(queue)).toEqual(order(twin));
  });

  it('refuses to open with a capacity too small for the jobs it holds, and loses none of them', () => {
    const path = tempJournal();
    const clock = new ManualClock(T0);
    const queue = openJournal(path, clock);
    for (let i = 1; i <= 10; i++) queue.submit('t', `p${i}`);
    closeJournal(queue);
    const before = readFileSync(path);
    expectErrorSync(() => openJournal(path, clock, { capacity: 4 }), QueueFullError, 'ERR_QUEUE_FULL');
    expect(Buffer.compare(readFileSync(path), before), 'the file changed').toBe(0);
    const again = openJournal(path, clock);
    expect(again.stats().pending).toBe(10);
    expect(again.view('J10').payload).toBe('p10');
  });

  it('refuses every call on a closed queue with IllegalStateError; its journal is unharmed', () => {
    const path = tempJournal();
    const clock = new ManualClock(T0);
    const queue = openJournal(path, clock);
    queue.submit('t', 'p');
    closeJournal(queue);
    expectErrorSync(() => queue.submit('t', 'q'), IllegalStateError, 'ERR_ILLEGAL_STATE');
    expectErrorSync(() => queue.poll('w', 1_000), IllegalStateError, 'ERR_ILLEGAL_STATE');
    const again = openJournal(path, clock);
    expect(again.stats().pending).toBe(1);
    expect(again.submit('t', 'r')).toBe('J2');
  });
});

describe('retry policies per job type, across a reopen', () => {
  it("keeps each type's policy, and a job RUNNING at the close waits its type's backoff", () => {
    const path = tempJournal();
    const clock = new ManualClock(T0);
    let queue = openJournal(path, clock);
    queue.setRetryPolicy('email', new RetryPolicy(5, 4_000, 4_000, { jitter: 'none' }));
    queue.setRetryPolicy('thumb', new RetryPolicy(2, 0, 0, { jitter: 'equal' }));
    queue.setRetryPolicy('thumb', null);
    const email = queue.submit('email', 'a');
    mustPollSync(queue, email, 60_000);
    queue = reopen(queue, path, clock);
    expect(queue.retryPolicies().map(({ type, policy }) => [type, policy.maxAttempts, policy.baseBackoffMillis, policy.maxBackoffMillis, policy.jitter]))
      .toEqual([['email', 5, 4_000, 4_000, 'none']]);
    expect(queue.view(email)).toMatchObject({ status: 'PENDING', attempts: 1, maxAttempts: 5, nextRunAt: clock.now() + 4_000, lastError: LEASE_LOST });
    // And its next failure too.
    clock.advance(4_000);
    const lease = mustPollSync(queue, email);
    queue.fail(email, lease.token, 'again');
    expect(queue.view(email).nextRunAt).toBe(clock.now() + 4_000);
  });

  it.each([
    ['a maxAttempts of 0', "UPDATE meta SET value = 0 WHERE key = 'retry_policy.max_attempts:email'"],
    ['a backoff cap below its base', "UPDATE meta SET value = 1 WHERE key = 'retry_policy.max_backoff:email'"],
    ['a jitter past the known ones', "UPDATE meta SET value = 7 WHERE key = 'retry_policy.jitter:email'"],
    ['a missing row', "DELETE FROM meta WHERE key = 'retry_policy.base_backoff:email'"],
  ])('refuses to open a journal whose policy has %s, with JournalCorruptError naming the type', (_, sql) => {
    const path = tempJournal();
    const clock = new ManualClock(T0);
    const queue = openJournal(path, clock);
    queue.setRetryPolicy('email', new RetryPolicy(3, 10, 20));
    void queue.close();
    sqliteFile(path, sql);
    expect(expectErrorSync(() => openJournal(path, clock), JournalCorruptError, 'ERR_JOURNAL_CORRUPT').message).toContain('retry policy of type "email"');
  });
});

describe('every state change is journaled', () => {
  it('poll: a job RUNNING when the journal closed has lost that attempt: retried after its backoff, lastError LEASE_LOST', () => {
    const path = tempJournal();
    const clock = new ManualClock(T0);
    let queue = openJournal(path, clock);
    const id = queue.submit('t', 'p');
    const lease = mustPollSync(queue, id, 60_000);
    expect(queue.view(id)).toMatchObject({ status: 'RUNNING', attempts: 1 });
    clock.advance(50);
    queue = reopen(queue, path, clock);
    expect(queue.view(id)).toMatchObject({ status: 'PENDING', attempts: 1, nextRunAt: clock.now() + 100, lastError: LEASE_LOST });
    expect(queue.poll('w', 1_000)).toBeUndefined();
    clock.advance(100);
    const again = mustPollSync(queue, id);
    expect(again.attempt).toBe(2);
    expect(again.token).toBeGreaterThan(lease.token);
  });

  it('poll: a job RUNNING on its last attempt when the journal closed is DEAD after the reopen, lastError LEASE_LOST', () => {
    const path = tempJournal();
    const clock = new ManualClock(T0);
    let queue = openJournal(path, clock);
    const id = queue.submit('t', 'p');
    for (let attempt = 1; attempt <= 2; attempt++) {
      clock.advance(10_000);
      queue.fail(id, mustPollSync(queue, id).token, `e${attempt}`);
    }
    clock.advance(10_000);
    mustPollSync(queue, id, 60_000);
    queue = reopen(queue, path, clock);
    expect(queue.view(id)).toMatchObject({ status: 'DEAD', attempts: 3, lastError: LEASE_LOST });
    expect(queue.deadLetters().map((v) => v.id)).toEqual([id]);
    // And it stays so: the reopen journaled it.
    queue = reopen(queue, path, clock);
    expect(queue.view(id)).toMatchObject({ status: 'DEAD', attempts: 3, lastError: LEASE_LOST });
  });

  it('flush: a lease is in the journal once flush() returns, before any other commit', () => {
    const path = tempJournal();
    const clock = new ManualClock(T0);
    const queue = openJournal(path, clock);
    const id = queue.submit('t', 'p');
    mustPollSync(queue, id, 60_000);
    queue.flush();
    // Read by another connection while this queue still owns the journal: the lease is committed.
    expect(row(path, 1)).toMatchObject({ status: 'RUNNING', attempts: 1 });
  });

  it('complete: SUCCEEDED stays SUCCEEDED', () => {
    const path = tempJournal();
    const clock = new ManualClock(T0);
    let queue = openJournal(path, clock);
    const id = queue.submit('t', 'p');
    const lease = mustPollSync(queue, id);
    queue.complete(id, lease.token);
    queue = reopen(queue, path, clock);
    expect(queue.view(id)).toMatchObject({ status: 'SUCCEEDED', attempts: 1, lastError: null });
    expect(queue.poll('w', 1_000)).toBeUndefined();
  });

  it('fail: the retry keeps its backoff (runAt), attempts and lastError', () => {
    const path = tempJournal();
    const clock = new ManualClock(T0);
    let queue = openJournal(path, clock);
    const id = queue.submit('t', 'p');
    let lease = mustPollSync(queue, id);
    clock.advance(10);
    queue.fail(id, lease.token, 'e1');
    const failedAt = clock.now();
    queue = reopen(queue, path, clock);
    expect(queue.view(id)).toMatchObject({ status: 'PENDING', attempts: 1, nextRunAt: failedAt + 100, lastError: 'e1' });
    clock.advance(99);
    expect(queue.poll('w', 1_000)).toBeUndefined();
    clock.advance(1);
    lease = mustPollSync(queue, id);
    expect(lease.attempt).toBe(2);
  });

  it('fail: DEAD stays DEAD, in the dead letters, with its attempts and lastError', () => {
    const path = tempJournal();
    const clock = new ManualClock(T0);
    let queue = openJournal(path, clock);
    const id = queue.submit('t', 'p');
    for (let attempt = 1; attempt <= 3; attempt++) {
      clock.advance(10_000);
      const lease = mustPollSync(queue, id);
      queue.fail(id, lease.token, `e${attempt}`);
    }
    queue = reopen(queue, path, clock);
    expect(queue.view(id)).toMatchObject({ status: 'DEAD', attempts: 3, lastError: 'e3' });
    expect(queue.deadLetters().map((v) => v.id)).toEqual([id]);
    expect(queue.dlqDepth()).toBe(1);
  });

  it('extend: the journal holds the extended lease, so a lease extended past the close is not counted as expired', () => {
    const path = tempJournal();
    const clock = new ManualClock(T0);
    let queue = openJournal(path, clock);
    const id = queue.submit('t', 'p');
    const lease = mustPollSync(queue, id, 1_000);
    clock.advance(500);
    const leaseUntil = queue.extend(id, lease.token, 10_000);
    expect(leaseUntil).toBe(T0 + 10_500);
    clock.advance(1_000); // past the first lease, within the extended one
    expect(queue.view(id).status).toBe('RUNNING');
    closeJournal(queue);
    expect(row(path, 1)).toMatchObject({ status: 'RUNNING', lease_until: T0 + 10_500, attempts: 1 });
    queue = openJournal(path, clock);
    expect(queue.view(id)).toMatchObject({ status: 'PENDING', attempts: 1, lastError: LEASE_LOST });
  });

  it('cancel: CANCELLED stays CANCELLED', () => {
    const path = tempJournal();
    const clock = new ManualClock(T0);
    let queue = openJournal(path, clock);
    const id = queue.submit('t', 'p');
    const other = queue.submit('t', 'q');
    queue.cancel(id);
    queue = reopen(queue, path, clock);
    expect(queue.view(id)).toMatchObject({ status: 'CANCELLED', attempts: 0 });
    expect(mustPollSync(queue).jobId).toBe(other);
  });

  it('cancel of a RUNNING job: CANCELLED after a reopen with its attempt counted, the old lease refused', () => {
    const path = tempJournal();
    const clock = new ManualClock(T0);
    let queue = openJournal(path, clock);
    const id = queue.submit('t', 'p');
    const other = queue.submit('t', 'q');
    const lease = mustPollSync(queue, id);
    queue.cancel(id);
    queue = reopen(queue, path, clock);
    expect(queue.view(id)).toMatchObject({ status: 'CANCELLED', attempts: 1, lastError: null });
    expectErrorSync(() => queue.complete(id, lease.token), StaleLeaseError, 'ERR_STALE_LEASE');
    expect(mustPollSync(queue).jobId).toBe(other);
    expect(queue.poll('w', 1_000)).toBeUndefined();
  });

  it('retryDead: the job is PENDING again with attempts 0, runAt then, and its lastError kept', () => {
    const path = tempJournal();
    const clock = new ManualClock(T0);
    let queue = openJournal(path, clock);
    const id = queue.submit('t', 'p');
    for (let attempt = 1; attempt <= 3; attempt++) {
      clock.advance(10_000);
      queue.fail(id, mustPollSync(queue, id).token, `e${attempt}`);
    }
    clock.advance(5);
    queue.retryDead(id);
    const retriedAt = clock.now();
    clock.advance(5);
    queue = reopen(queue, path, clock);
    expect(queue.view(id)).toMatchObject({ status: 'PENDING', attempts: 0, nextRunAt: retriedAt, lastError: 'e3' });
    expect(queue.dlqDepth()).toBe(0);
    expect(mustPollSync(queue, id).attempt).toBe(1);
  });

  it('lease expiry: the failed attempt is journaled with lastError "lease expired" and its backoff', () => {
    const path = tempJournal();
    const clock = new ManualClock(T0);
    let queue = openJournal(path, clock);
    const id = queue.submit('t', 'p');
    mustPollSync(queue, id, 1_000);
    clock.advance(1_000);
    expect(queue.view(id)).toMatchObject({ status: 'PENDING', attempts: 1, nextRunAt: T0 + 1_000 + 100, lastError: 'lease expired' });
    queue = reopen(queue, path, clock);
    expect(queue.view(id)).toMatchObject({ status: 'PENDING', attempts: 1, nextRunAt: T0 + 1_000 + 100, lastError: 'lease expired' });
  });
});

describe('state changes made by attached threads', () => {
  it('keeps a completion made by a thread that ends right after it: SUCCEEDED after a clean close and reopen', async () => {
    const path = tempJournal();
    const clock = new ManualClock(T0);
    let queue = openJournal(path, clock);
    const id = queue.submit('t', 'p');
    const thread = await startWorker('journal-thread.mjs', { handle: queue.share() });
    expect(await withTimeout(thread.exited, 10_000, 'the thread')).toBe(0);
    expect(queue.view(id)).toMatchObject({ status: 'SUCCEEDED', attempts: 1 });
    queue = reopen(queue, path, clock);
    expect(queue.view(id), 'after the reopen').toMatchObject({ status: 'SUCCEEDED', attempts: 1, lastError: null });
  });
});

describe('group commit', () => {
  /** A job's row as another connection reads it: only what is committed. */
  type Row = { status: string; payload: string; attempts: number; lastError: string | null };
  function committedRow(path: string, num: number): Row | undefined {
    const db = new Database(path, { readonly: true });
    try {
      return db.prepare('SELECT status, payload, attempts, last_error AS lastError FROM jobs WHERE num = ?').get(num) as Row | undefined;
    } finally {
      db.close();
    }
  }

  it('returns from submit, complete, fail, cancel and retryDead only once the change is committed; an expiry rides along with the next commit', () => {
    const path = tempJournal();
    const clock = new ManualClock(T0);
    const journaled = openTracked(path, clock, new RetryPolicy(2, 100, 100));
    const a = journaled.submit('t', 'a');
    expect(committedRow(path, 1)).toMatchObject({ status: 'PENDING', payload: 'a' });
    let lease = mustPollSync(journaled, a, 100);
    journaled.complete(a, lease.token);
    expect(committedRow(path, 1)).toMatchObject({ status: 'SUCCEEDED', attempts: 1 });
    const b = journaled.submit('t', 'b');
    lease = mustPollSync(journaled, b, 100);
    journaled.fail(b, lease.token, 'no');
    expect(committedRow(path, 2)).toMatchObject({ status: 'PENDING', attempts: 1, lastError: 'no' });
    clock.advance(100);
    mustPollSync(journaled, b, 100);
    clock.advance(100); // the lease ends: its expiry is the last attempt
    expect(journaled.stats().dead).toBe(1);
    // Lazy, as the lease before it: a crash now brings the job back as the journal last knew it (docs/durability.md).
    expect(committedRow(path, 2)).not.toMatchObject({ status: 'DEAD' });
    journaled.flush();
    expect(committedRow(path, 2)).toMatchObject({ status: 'DEAD', attempts: 2, lastError: 'lease expired' });
    journaled.retryDead(b);
    expect(committedRow(path, 2)).toMatchObject({ status: 'PENDING', attempts: 0 });
    journaled.cancel(b);
    expect(committedRow(path, 2)).toMatchObject({ status: 'CANCELLED' });
  });

  it('returns from the cancel of a RUNNING job only once it is committed', () => {
    const path = tempJournal();
    const journaled = openTracked(path, new ManualClock(T0), new RetryPolicy(2, 100, 100));
    const id = journaled.submit('t', 'a');
    mustPollSync(journaled, id, 60_000);
    journaled.cancel(id);
    expect(committedRow(path, 1)).toMatchObject({ status: 'CANCELLED', attempts: 1 });
  });

  it('writes a lease within milliseconds, though no call waits for it', async () => {
    const path = tempJournal();
    const queue = openJournal(path, new ManualClock(T0));
    const id = queue.submit('t', 'p');
    mustPollSync(queue, id, 60_000);
    const deadline = Date.now() + 5_000;
    while (committedRow(path, 1)?.status !== 'RUNNING' && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(committedRow(path, 1)).toMatchObject({ status: 'RUNNING', attempts: 1 });
  });

  it('commits the changes of every thread: a thread\'s poll is in the journal once another thread\'s submit returns', async () => {
    const path = tempJournal();
    const queue = openJournal(path, new ManualClock(T0));
    const id = queue.submit('t', 'p');
    const flag = new Int32Array(new SharedArrayBuffer(8));
    const thread = await startWorker('journal-group-thread.mjs', { handle: queue.share(), mode: 'poll-then-block', flag });
    try {
      const lease = (await withTimeout(thread.result, 10_000, 'the thread\'s poll')) as { jobId: string };
      expect(lease.jobId).toBe(id);
      // A lease waits for the next commit; the thread, blocked, makes none itself.
      expect(committedRow(path, 1)?.status).toBe('PENDING');
      queue.submit('t', 'q');
      expect(committedRow(path, 1)?.status, 'after the main thread\'s submit').toBe('RUNNING');
      expect(committedRow(path, 2)?.status).toBe('PENDING');
    } finally {
      Atomics.store(flag, 0, 1);
      Atomics.notify(flag, 0);
    }
    expect(await withTimeout(thread.exited, 10_000, 'the thread')).toBe(0);
  });

  it('writes the journal outside the queue lock: other threads go on while a commit waits for SQLite', async () => {
    const path = tempJournal();
    const queue = openJournal(path, new ManualClock(T0));
    const flag = new Int32Array(new SharedArrayBuffer(12));
    const thread = await startWorker('journal-group-thread.mjs', { handle: queue.share(), mode: 'submit', flag });
    const attached = Atomics.waitAsync(flag, 0, 0, 10_000);
    if (attached.async) await attached.value;
    expect(Atomics.load(flag, 0), 'the thread attached').toBe(1);
    const blocker = new Database(path);
    blocker.exec('BEGIN IMMEDIATE'); // holds SQLite's write lock
    Atomics.store(flag, 2, 1);
    Atomics.notify(flag, 2);
    try {
      const deadline = Date.now() + 10_000;
      while (queue.stats().pending === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 5));
      // The job is in memory and the queue answers, while its submit still waits for the commit.
      expect(queue.view('J1')).toMatchObject({ status: 'PENDING', payload: 'for the write lock' });
      expect(Atomics.load(flag, 1), 'submit returned before its job was committed').toBe(0);
      expect(committedRow(path, 1)).toBeUndefined();
    } finally {
      blocker.exec('ROLLBACK');
      blocker.close();
    }
    expect(await withTimeout(thread.result, 15_000, 'the blocked submit')).toBe('J1');
    expect(Atomics.load(flag, 1)).toBe(1);
    expect(committedRow(path, 1)).toMatchObject({ status: 'PENDING', payload: 'for the write lock' });
  });
});

describe('eviction', () => {
  it('deletes evicted finished jobs from the journal: after a reopen they are not found, the rest are there', () => {
    const path = tempJournal();
    const clock = new ManualClock(T0);
    let queue = openJournal(path, clock, { capacity: 4 });
    for (let i = 1; i <= 4; i++) queue.submit('t', `p${i}`);
    for (const id of ['J1', 'J2']) {
      queue.complete(id, mustPollSync(queue, id).token);
      clock.advance(1);
    }
    expect(queue.submit('t', 'p5')).toBe('J5'); // evicts J1, the oldest finished
    expect(queue.submit('t', 'p6')).toBe('J6'); // evicts J2
    expectNotFoundSync(() => queue.view('J1'));
    expectNotFoundSync(() => queue.view('J2'));

    closeJournal(queue);
    const db = new Database(path);
    const nums = (db.prepare('SELECT num FROM jobs ORDER BY num').all() as Array<{ num: number }>).map((r) => r.num);
    db.close();
    expect(nums).toEqual([3, 4, 5, 6]);

    queue = openJournal(path, clock, { capacity: 4 });
    expectNotFoundSync(() => queue.view('J1'));
    expectNotFoundSync(() => queue.view('J2'));
    for (let i = 3; i <= 6; i++) expect(queue.view(`J${i}`)).toMatchObject({ status: 'PENDING', payload: `p${i}` });
    expect(queue.stats()).toMatchObject({ pending: 4, succeeded: 0 });
  });
});

describe('eviction on reopen', () => {
  it('never reuses the id of a job dropped for room, even the newest one', () => {
    const path = tempJournal();
    const clock = new ManualClock(T0);
    let queue = openJournal(path, clock);
    queue.submit('t', 'one', 0);
    queue.submit('t', 'two', 1);
    queue.submit('t', 'three', 2);
    // J3 finishes first, so it is the oldest finished job: the first to go when room is needed.
    queue.complete('J3', mustPollSync(queue, 'J3').token);
    clock.advance(1);
    queue.complete('J2', mustPollSync(queue, 'J2').token);
    queue = reopen(queue, path, clock, { capacity: 2 });
    expectNotFoundSync(() => queue.view('J3'));
    expect(queue.view('J2').status).toBe('SUCCEEDED');
    expect(queue.submit('t', 'four')).toBe('J4');
    queue = reopen(queue, path, clock);
    expect(queue.submit('t', 'five')).toBe('J5');
  });
});

// ── ownership ────────────────────────────────────────────────────────────────

/** A journal-owner.mjs child: its first stdout line, and `line(k)` its k-th (from 0), each bounded by a hang guard. */
function owner(mode: 'hold' | 'try' | 'race', path: string, ...more: string[]): {
  proc: ChildProcess; firstLine: Promise<string>; line(k: number): Promise<string>; output: () => string;
} {
  const proc = spawn(process.execPath, [new URL('../fixtures/journal-owner.mjs', import.meta.url).pathname, mode, path, ...more], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  children.push(proc);
  let out = '';
  let err = '';
  proc.stdout!.setEncoding('utf8');
  proc.stderr!.setEncoding('utf8');
  proc.stderr!.on('data', (chunk: string) => {
    err += chunk;
  });
  proc.stdout!.on('data', (chunk: string) => {
    out += chunk;
  });
  const line = (k: number): Promise<string> => {
    const read = new Promise<string>((resolve, reject) => {
      const look = () => {
        const lines = out.split('\n');
        if (lines.length > k + 1) resolve(lines[k]!);
      };
      look();
      proc.stdout!.on('data', look);
      proc.once('close', (code, signal) => reject(new Error(`journal-owner ${mode} ended (${code ?? signal}) before printing line ${k}; stderr: ${err}`)));
    });
    read.catch(() => undefined);
    // A hang guard only: a loaded machine starts a process in seconds, not minutes.
    return withTimeout(read, 120_000, `journal-owner ${mode}, line ${k}`);
  };
  return { proc, firstLine: line(0), line, output: () => out };
}

async function killAndWait(proc: ChildProcess): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null) return;
  const gone = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  proc.kill('SIGKILL');
  await withTimeout(gone, 10_000, 'the killed child to exit');
}

interface TryResult { ok: boolean; name?: string; code?: string; message?: string; elapsedMillis: number }

// Hang guards only: each test waits on its processes by handshake, and a loaded machine starts a process in seconds.
describe('one owner at a time', { timeout: 300_000 }, () => {
  it('refuses a second open in the same process at once with JournalBusyError naming the holder, and allows it after close', () => {
    const path = tempJournal();
    const clock = new ManualClock(T0);
    const first = openJournal(path, clock);
    const id = first.submit('t', 'p');
    const started = performance.now();
    const error = expectErrorSync(() => openJournal(path, clock), JournalBusyError, 'ERR_JOURNAL_BUSY');
    expect(performance.now() - started, 'the refusal comes at once, without waiting').toBeLessThan(1_000);
    expect(error.message).toContain(String(process.pid));
    // The refused open changed nothing for the owner.
    expect(first.view(id).status).toBe('PENDING');
    expect(first.submit('t', 'q')).toBe('J2');
    closeJournal(first);
    const second = openJournal(path, clock);
    expect(second.view('J2').payload).toBe('q');
  });

  it('refuses the calls of a view attached to a journal once its opener closed it, so that a later opener\'s jobs are never written over', () => {
    const path = tempJournal();
    const clock = new ManualClock(T0);
    const first = openJournal(path, clock);
    const handle = first.share();
    const attached = JobQueue.attach(handle, clock);
    expect(attached.submit('t', 'while the opener is open')).toBe('J1');
    closeJournal(first);
    const second = openJournal(path, clock);
    // The attached view would write to a journal this process no longer owns, beside the second opener.
    const calls = [
      () => attached.submit('t', 'stale'), () => attached.poll('w', 1_000), () => attached.stats(), () => attached.view('J1'), () => attached.isPaused(),
      () => attached.schedule('tick', { type: 't', everyMillis: 1_000 }), () => attached.flush(), () => JobQueue.attach(handle, clock),
    ];
    for (const call of calls) {
      expect(expectErrorSync(call, IllegalStateError, 'ERR_ILLEGAL_STATE').message).toContain('was closed by the view that opened it');
    }
    attached.close(); // closing it still works, and writes nothing
    expect(second.schedules()).toEqual([]);
    expect(second.submit('t', 'from the second opener')).toBe('J2');
    closeJournal(second);
    const third = openJournal(path, clock);
    expect(third.jobs().jobs.map((view) => [view.id, view.payload])).toEqual([['J1', 'while the opener is open'], ['J2', 'from the second opener']]);
  });

  it('refuses another process while this one holds the journal', async () => {
    const path = tempJournal();
    openJournal(path, new ManualClock(T0)).submit('t', 'p');
    const result = JSON.parse(await owner('try', path).firstLine) as TryResult;
    expect(result).toMatchObject({ ok: false, name: 'JournalBusyError', code: 'ERR_JOURNAL_BUSY' });
    expect(result.message).toContain(String(process.pid));
    expect(result.elapsedMillis).toBeLessThan(1_000);
  });

  it('refuses this process while another holds the journal; after the holder closes, opens', async () => {
    const path = tempJournal();
    const holder = owner('hold', path);
    const held = await holder.firstLine;
    expect(held).toBe(`held ${holder.proc.pid}`);
    const error = expectErrorSync(() => openJournal(path, new ManualClock(T0)), JournalBusyError, 'ERR_JOURNAL_BUSY');
    expect(error.message).toContain(String(holder.proc.pid));
    holder.proc.stdin!.write('close\n');
    const exited = new Promise<number | null>((resolve) => holder.proc.once('exit', (code) => resolve(code)));
    expect(await withTimeout(exited, 10_000, 'the holder to close and exit')).toBe(0);
    expect(holder.output()).toContain('closed');
    const queue = openJournal(path, new ManualClock(T0));
    expect(queue.submit('t', 'p')).toBe('J1');
  });

  it('opens a journal whose holder was killed with SIGKILL (a stale lock)', async () => {
    const path = tempJournal();
    const holder = owner('hold', path);
    await holder.firstLine;
    expectErrorSync(() => openJournal(path, new ManualClock(T0)), JournalBusyError, 'ERR_JOURNAL_BUSY');
    await killAndWait(holder.proc);
    const queue = openJournal(path, new ManualClock(T0));
    expect(queue.submit('t', 'p')).toBe('J1');
    // And this process now owns it: another process is refused.
    const result = JSON.parse(await owner('try', path).firstLine) as TryResult;
    expect(result).toMatchObject({ ok: false, code: 'ERR_JOURNAL_BUSY' });
  });

  it.each([
    ['a journal nobody holds', false],
    ['a journal whose holder was killed (a stale lock)', true],
  ])('lets exactly one of 6 processes that open %s at the same instant own it', async (_, stale) => {
    for (let round = 0; round < 5; round++) {
      const path = tempJournal();
      if (stale) {
        const holder = owner('hold', path);
        await holder.firstLine;
        await killAndWait(holder.proc);
      }
      const racers = Array.from({ length: 6 }, () => owner('race', path));
      // Every racer started and waiting, then all let go at once: none opens while another is still starting.
      expect(await Promise.all(racers.map((r) => r.firstLine))).toEqual(Array(6).fill('ready'));
      for (const r of racers) r.proc.stdin!.write('go\n');
      const results = await Promise.all(racers.map(async (r) => JSON.parse(await r.line(1)) as TryResult));
      for (const r of racers) await killAndWait(r.proc);
      const winners = results.filter((r) => r.ok).length;
      expect(results.filter((r) => !r.ok && r.code !== 'ERR_JOURNAL_BUSY'), 'racers refused other than as busy').toEqual([]);
      expect(winners, `owners at once in round ${round}: ${JSON.stringify(results)}`).toBe(1);
    }
  });
});

// ── corrupt and foreign files ───────────────────────────────────────────────

function randomBytes(size: number, seed: number): Buffer {
  const random = prng(seed);
  return Buffer.from(Array.from({ length: size }, () => Math.floor(random() * 256)));
}

function sqliteFile(path: string, sql: string): void {
  const db = new Database(path);
  db.exec(sql);
  db.close();
}

describe('a corrupt or foreign file', () => {
  it('refuses a path in a directory that does not exist with InvalidArgumentError, creating nothing', () => {
    const missing = join(tmpdir(), `leasehold-no-such-dir-${process.pid}`, 'queue.db');
    expectInvalidSync(() => JobQueue.open(missing, new ManualClock(T0), new RetryPolicy(3, 100, 1_000)));
    expect(() => readdirSync(join(missing, '..'))).toThrow();
  });

  it('refuses a directory with InvalidArgumentError, leaving it as it was', () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'other'), 'x');
    const error = expectInvalidSync(() => JobQueue.open(dir, new ManualClock(T0), policy()));
    expect(error.message).toBe(`${dir} is a directory, not a journal file`);
    expect(readdirSync(dir)).toEqual(['other']);
  });

  it('refuses a path under a file, as one in a directory that does not exist', () => {
    const file = join(tempDir(), 'a-file');
    writeFileSync(file, 'x');
    expect(expectInvalidSync(() => JobQueue.open(join(file, 'queue.db'), new ManualClock(T0), policy())).message).toContain('No directory for the journal');
    expect(readFileSync(file, 'utf8')).toBe('x');
  });

  it('turns a failure of the file system while reading the header into JournalIOError, not a raw Node error', () => {
    const dir = tempDir();
    const path = join(dir, 'queue.db');
    symlinkSync(path, path); // a link to itself: every stat of it fails with ELOOP
    const error = expectErrorSync(() => JobQueue.open(path, new ManualClock(T0), policy()), JournalIOError, 'ERR_JOURNAL_IO');
    expect(error.message).toContain('ELOOP');
    expect(readdirSync(dir)).toEqual(['queue.db']);
  });

  it.each<[string, (path: string) => void]>([
    ['random bytes', (path: string) => writeFileSync(path, randomBytes(16_384, 42))],
    ['a text file', (path: string) => writeFileSync(path, 'id,name\n1,not a journal\n2,still not one\n'.repeat(50))],
    ['a SQLite database with unrelated tables', (path: string) => sqliteFile(path,
      "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO users (name) VALUES ('ada'), ('grace');")],
    ['a SQLite database with its own, different `jobs` table', (path: string) => sqliteFile(path,
      "CREATE TABLE jobs (id TEXT PRIMARY KEY, body BLOB); INSERT INTO jobs VALUES ('a', x'00ff');")],
    ['a SQLite database whose first page is damaged', (path: string) => {
      sqliteFile(path, 'CREATE TABLE t (x); INSERT INTO t VALUES (1);');
      const bytes = readFileSync(path);
      randomBytes(60, 7).copy(bytes, 40); // the header after the magic string
      writeFileSync(path, bytes);
    }],
    ['a journal of a newer schema version than this leasehold knows', (path: string) => {
      const db = new Database(path);
      db.exec("CREATE TABLE jobs (num INTEGER PRIMARY KEY); CREATE TABLE meta (key TEXT PRIMARY KEY, value REAL NOT NULL);");
      db.pragma('user_version = 99');
      db.close();
    }],
    ['a journal with a job row whose status is not a job status', (path: string) => {
      const queue = JobQueue.open(path, new ManualClock(T0), policy());
      queue.submit('t', 'one');
      queue.submit('t', 'two');
      void queue.close();
      sqliteFile(path, "UPDATE jobs SET status = 'BOGUS' WHERE num = 2");
    }],
    // Counts past 2^53 stop counting: the next token would equal the last, and fence nothing.
    ...([
      ['whose token is past 2^53', 'UPDATE jobs SET token = 1e300 WHERE num = 1'],
      ['whose finish order is negative', 'UPDATE jobs SET finish_seq = -1 WHERE num = 1'],
      ['whose token sequence is not a number', "UPDATE meta SET value = 'x' WHERE key = 'token_seq'"],
      ['whose job sequence is negative', "UPDATE meta SET value = -1 WHERE key = 'job_seq'"],
      ['whose job sequence is past 2^53', "UPDATE meta SET value = 1e300 WHERE key = 'job_seq'"],
    ] as const).map(([what, sql]): [string, (path: string) => void] => [`a journal ${what}`, (path: string) => {
      const queue = JobQueue.open(path, new ManualClock(T0), policy());
      queue.complete('J1', mustPollSync(queue, queue.submit('t', 'one')).token);
      void queue.close();
      sqliteFile(path, sql);
    }]),
  ])('is refused with JournalCorruptError and left byte-for-byte unchanged: %s', (_, make) => {
    const dir = tempDir();
    const path = join(dir, 'queue.db');
    make(path);
    const before = readFileSync(path);
    const listing = readdirSync(dir).sort();
    expectErrorSync(() => openJournal(path, new ManualClock(T0)), JournalCorruptError, 'ERR_JOURNAL_CORRUPT');
    expect(Buffer.compare(readFileSync(path), before), 'the file changed').toBe(0);
    expect(readdirSync(dir).sort(), 'files left beside it').toEqual(listing);
    // The refusal released everything: the same error again, not JournalBusyError.
    expectErrorSync(() => openJournal(path, new ManualClock(T0)), JournalCorruptError, 'ERR_JOURNAL_CORRUPT');
    expect(Buffer.compare(readFileSync(path), before), 'the file changed').toBe(0);
  });
});

describe('a journal with a damaged schedule row', () => {
  it.each([
    ['a definition that is not JSON', "INSERT INTO schedules VALUES ('broken', 'not json', 0)"],
    ['a definition schedule() would refuse', "INSERT INTO schedules VALUES ('broken', '{\"type\":5}', 0)"],
    ['a next tick that is not a number', "UPDATE schedules SET next_tick = 'soon'"],
  ])('refuses %s with JournalCorruptError naming it, and the queue goes on', (_, sql) => {
    const path = tempJournal();
    const clock = new ManualClock(T0);
    const queue = openJournal(path, clock);
    queue.schedule('every-second', { type: 'tick', everyMillis: 1000 });
    void queue.close();
    sqliteFile(path, sql);
    const reopened = openJournal(path, clock);
    expect(expectErrorSync(() => reopened.schedules(), JournalCorruptError, 'ERR_JOURNAL_CORRUPT').message).toMatch(/damaged schedule row "(broken|every-second)"/);
    // A due one is read by a run too (a next tick of text is never due: SQLite orders text after numbers).
    if (!sql.includes('soon')) expectErrorSync(() => reopened.runSchedules(), JournalCorruptError, 'ERR_JOURNAL_CORRUPT');
    expect(reopened.submit('t', 'still works')).toMatch(/^J\d+$/);
  });
});

// ── migrations ──────────────────────────────────────────────────────────────

/** A new journal file of schema `version` as an older leasehold wrote it, open for the test to fill. */
function oldJournal(path: string, version: 1 | 2): Database.Database {
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.exec(`
    CREATE TABLE jobs (num INTEGER PRIMARY KEY, type TEXT NOT NULL, payload TEXT NOT NULL, priority REAL NOT NULL,
      status TEXT NOT NULL, attempts INTEGER NOT NULL, run_at REAL NOT NULL, last_error TEXT, token REAL NOT NULL,
      lease_until REAL NOT NULL, finish_seq REAL NOT NULL);
    CREATE TABLE meta (key TEXT PRIMARY KEY, value REAL NOT NULL);
  `);
  if (version === 2) db.exec('ALTER TABLE jobs ADD COLUMN worker_id TEXT; ALTER TABLE jobs ADD COLUMN moves INTEGER NOT NULL DEFAULT 0;');
  db.pragma(`user_version = ${version}`);
  return db;
}

describe('schema migrations', () => {
  it('migrates a version-1 journal to the current version, keeping its jobs and sequences', () => {
    const path = tempJournal();
    const db = oldJournal(path, 1);
    const insert = db.prepare('INSERT INTO jobs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)');
    insert.run(1, 'email', 'to: ada', 2, 'PENDING', 1, T0 + 100, 'smtp timeout', 0, 0, 0);
    insert.run(2, 'resize', '{"w":1}', 0, 'DEAD', 3, T0, 'bad image', 0, 0, 0);
    insert.run(3, 'email', 'to: grace', 1, 'SUCCEEDED', 1, T0, null, 0, 0, 1);
    const meta = db.prepare('INSERT INTO meta VALUES (?, ?)');
    meta.run('job_seq', 3);
    meta.run('token_seq', 5);
    meta.run('finish_seq', 1);
    db.close();

    const clock = new ManualClock(T0 + 1_000);
    const queue = openJournal(path, clock);
    expect(queue.view('J1')).toMatchObject({ type: 'email', payload: 'to: ada', priority: 2, status: 'PENDING', attempts: 1, nextRunAt: T0 + 100, lastError: 'smtp timeout' });
    expect(queue.view('J2')).toMatchObject({ type: 'resize', payload: '{"w":1}', priority: 0, status: 'DEAD', attempts: 3, lastError: 'bad image' });
    expect(queue.view('J3')).toMatchObject({ type: 'email', payload: 'to: grace', priority: 1, status: 'SUCCEEDED', attempts: 1, lastError: null });
    expect(queue.deadLetters().map((v) => v.id)).toEqual(['J2']);
    expect(queue.submit('new', 'job')).toBe('J4');
    const lease = mustPollSync(queue, 'J1');
    expect(lease.attempt).toBe(2);
    expect(lease.token).toBeGreaterThan(5);
    queue.complete('J1', lease.token);
    closeJournal(queue);

    const after = new Database(path);
    expect(after.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION);
    expect(after.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'schedules'").get()).toEqual({ name: 'schedules' });
    const columns = (after.prepare('PRAGMA table_info(jobs)').all() as Array<{ name: string }>).map((c) => c.name);
    expect(columns).toContain('worker_id');
    expect(columns).toContain('max_attempts');
    expect(columns).toContain('result');
    expect(columns).toContain('idem_key');
    expect(columns).toContain('headers');
    after.close();
    const again = openJournal(path, clock);
    expect(again.view('J1')).toMatchObject({ status: 'SUCCEEDED', attempts: 2 });
    expect(again.submit('newer', 'job')).toBe('J5');
  });

  it("opens a version-2 journal: its jobs take the policy's maxAttempts, new ones keep their own across reopens", () => {
    const path = tempJournal();
    const db = oldJournal(path, 2);
    db.prepare('INSERT INTO jobs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)').run(1, 'old', 'p', 0, 'DEAD', 3, T0, 'boom', 0, 0, 0, null, 1);
    db.close();

    const clock = new ManualClock(T0);
    let queue = openJournal(path, clock);
    expect(queue.view('J1').maxAttempts).toBe(3);
    const own = queue.submit('new', 'p', { maxAttempts: 5 });
    // Its lease is lost with the process: the lost attempt counts against its own limit, not the policy's 3.
    for (let attempt = 1; attempt <= 4; attempt++) {
      mustPollSync(queue, own);
      queue.flush();
      queue = reopen(queue, path, clock);
      expect(queue.view(own)).toMatchObject({ status: 'PENDING', attempts: attempt, maxAttempts: 5, lastError: LEASE_LOST });
      clock.advance(10_000);
    }
    mustPollSync(queue, own);
    queue.flush();
    queue = reopen(queue, path, clock);
    expect(queue.view(own)).toMatchObject({ status: 'DEAD', attempts: 5, maxAttempts: 5 });
    closeJournal(queue);
    expect(row(path, 2)).toMatchObject({ max_attempts: 5 });
    expect(row(path, 1)).toMatchObject({ max_attempts: 0 });
  });
});

// ── submitMany ──────────────────────────────────────────────────────────────

describe('submitMany', () => {
  it('stores every item in one go and returns the ids in order; they survive a reopen', () => {
    const path = tempJournal();
    const clock = new ManualClock(T0);
    let queue = openJournal(path, clock);
    const ids = queue.submitMany([
      { type: 'a' },
      { type: 'b', payload: 'two', priority: 5 },
      { type: 'c', payload: 'three', runAtMillis: T0 + 500 },
    ]);
    expect(ids).toEqual(['J1', 'J2', 'J3']);
    queue = reopen(queue, path, clock);
    expect(queue.view('J1')).toMatchObject({ type: 'a', payload: '', priority: 0, nextRunAt: T0, status: 'PENDING' });
    expect(queue.view('J2')).toMatchObject({ type: 'b', payload: 'two', priority: 5, nextRunAt: T0 });
    expect(queue.view('J3')).toMatchObject({ type: 'c', payload: 'three', priority: 0, nextRunAt: T0 + 500 });
    expect(queue.submitMany([])).toEqual([]);
    expect(queue.submit('d', 'four')).toBe('J4');
  });

  it.each([
    ['a blank type', { type: '  ' }],
    ['a non-integer priority', { type: 'x', priority: 1.5 }],
    ['a runAt that is not finite', { type: 'x', runAtMillis: Number.NaN }],
    ['a payload over maxPayloadBytes', { type: 'x', payload: 'y'.repeat(65) }],
  ])('stores nothing and uses up no id when one item has %s', (_, badItem) => {
    const path = tempJournal();
    const clock = new ManualClock(T0);
    let queue = openJournal(path, clock, { maxPayloadBytes: 64 });
    queue.submit('before', 'p');
    expectInvalidSync(() => queue.submitMany([{ type: 'ok', payload: 'one' }, badItem, { type: 'ok', payload: 'three' }]));
    expect(queue.stats().pending).toBe(1);
    expectNotFoundSync(() => queue.view('J2'));
    queue = reopen(queue, path, clock, { maxPayloadBytes: 64 });
    expect(queue.stats().pending).toBe(1);
    expectNotFoundSync(() => queue.view('J2'));
    expect(queue.submitMany([{ type: 'ok' }])).toEqual(['J2']);
  });
});
