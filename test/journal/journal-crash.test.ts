/**
 * The SQLite journal across a crash of the whole process: a child
 * process is killed with SIGKILL at a random instant, and the test process
 * reopens its journal. Every job the child acknowledged (printed after submit
 * returned) is back with its type, payload and priority; jobs keep their
 * finished states; the attempt a job RUNNING at the crash died in counts
 * (lastError LEASE_LOST: retried while attempts remain, else DEAD); ids and
 * tokens continue.
 *
 * Fixtures: test/fixtures/journal-submitter.mjs (submits until killed),
 * journal-burst-submitter.mjs (four threads submit at once until killed) and
 * journal-processor.mjs (drives six jobs into every state).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { JobQueue, ManualClock, RetryPolicy, systemClock } from '../../dist/index.js';
import { jobNumber, mustPollSync, prng, testSeed, withTimeout } from '../support/helpers.js';
import { children, openJournal, tempDir, tempJournal } from '../support/journal-harness.js';

type JobView = ReturnType<JobQueue['view']>;

const LEASE_LOST = 'lease lost: the process stopped while the job ran';

/** The type and payload the submitter gives job n (mirrors test/fixtures/journal-submitter.mjs). */
const typeOf = (n: number): string => (n % 3 === 0 ? 'alpha' : 'beta');
const payloadOf = (n: number): string => `payload #${n} ✓ ${'x'.repeat(n % 37)}`;


/** A fixture child process whose stdout is read line by line. */
class Child {
  readonly proc: ChildProcess;
  readonly lines: string[] = [];
  stderr = '';
  readonly exited: Promise<void>;
  #partial = '';
  #waiters: Array<() => void> = [];

  constructor(fixture: string, args: readonly string[]) {
    this.proc = spawn(process.execPath, [new URL(`../fixtures/${fixture}`, import.meta.url).pathname, ...args], {
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    children.push(this.proc);
    this.proc.stdout!.setEncoding('utf8');
    this.proc.stdout!.on('data', (chunk: string) => {
      const parts = (this.#partial + chunk).split('\n');
      this.#partial = parts.pop()!;
      this.lines.push(...parts);
      this.#wake();
    });
    this.proc.stderr!.setEncoding('utf8');
    this.proc.stderr!.on('data', (chunk: string) => {
      this.stderr += chunk;
    });
    // 'close': the process ended and its stdout was read to the end.
    this.exited = new Promise((resolve) => this.proc.once('close', () => {
      this.#wake();
      resolve();
    }));
  }

  #wake(): void {
    for (const wake of this.#waiters.splice(0)) wake();
  }

  get done(): boolean {
    return this.proc.exitCode !== null || this.proc.signalCode !== null;
  }

  /** The first line starting with `prefix` (and passing `also`); rejects if the child ends first or after `ms`. */
  async line(prefix: string, ms = 10_000, also: (line: string) => boolean = () => true): Promise<string> {
    const deadline = Date.now() + ms;
    for (;;) {
      const found = this.lines.find((l) => l.startsWith(prefix) && also(l));
      if (found !== undefined) return found;
      if (this.done) throw new Error(`child ended (${this.proc.exitCode ?? this.proc.signalCode}) before printing "${prefix}"; stderr: ${this.stderr}`);
      if (Date.now() > deadline) throw new Error(`child printed no "${prefix}" within ${ms} ms; stderr: ${this.stderr}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 50);
        this.#waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  /** SIGKILL, then wait until the process is gone and its output fully read. */
  async kill(): Promise<void> {
    this.proc.kill('SIGKILL');
    await withTimeout(this.exited, 10_000, 'the killed child to end');
    expect(this.proc.signalCode).toBe('SIGKILL');
  }
}

describe('a process killed while submitting', { timeout: 30_000 }, () => {
  const seed = testSeed('journal-crash');
  const random = prng(seed);
  const trials = Array.from({ length: 6 }, (_, i) => ({
    trial: i + 1,
    killAfterMillis: 50 + Math.floor(random() * 351),
    childSeed: Math.floor(random() * 2 ** 31),
    synchronous: i % 2 === 0 ? 'NORMAL' : 'FULL',
  }));

  it.each(trials)('loses no acknowledged job (trial $trial: SIGKILL after $killAfterMillis ms, synchronous $synchronous)', async ({ killAfterMillis, childSeed, synchronous }) => {
    const path = tempJournal();
    const child = new Child('journal-submitter.mjs', [path, String(childSeed), synchronous]);
    await child.line('open ');
    await new Promise((resolve) => setTimeout(resolve, killAfterMillis));
    await child.kill();

    const acked = new Map<string, number>();
    for (const line of child.lines.slice(1)) {
      if (line === 'done') continue;
      const [id, n] = line.split(' ');
      acked.set(id!, Number(n));
    }
    expect(child.lines.includes('done'), 'the child was still submitting when it was killed').toBe(false);
    expect(acked.size, `acknowledged jobs before the kill; stderr: ${child.stderr}`).toBeGreaterThan(0);
    // The child numbers its jobs 1, 2, 3, ... and never has a submit refused: job n is Jn.
    for (const [id, n] of acked) expect(id).toBe(`J${n}`);
    const maxAcked = Math.max(...acked.values());

    const queue = openJournal(path, systemClock, new RetryPolicy(3, 0, 0));
    const stored = queue.stats().pending;
    expect(queue.stats()).toEqual({ pending: stored, ready: stored, delayed: 0, running: 0, succeeded: 0, dead: 0, cancelled: 0, paused: false });
    // Every acknowledged job, and maybe more: jobs committed whose lines were still in the
    // child's stdout pipe (a full pipe makes Node's writes asynchronous) when it was killed.
    expect(stored).toBeGreaterThanOrEqual(maxAcked);
    const wrong: Array<{ id: string; view: JobView | string }> = [];
    for (let n = 1; n <= stored; n++) {
      const id = `J${n}`;
      let view: JobView;
      try {
        view = queue.view(id);
      } catch (error) {
        wrong.push({ id, view: String(error) });
        continue;
      }
      if (view.type !== typeOf(n) || view.payload !== payloadOf(n) || view.priority !== n % 5 || view.status !== 'PENDING' || view.attempts !== 0 || view.lastError !== null) {
        wrong.push({ id, view });
      }
    }
    expect(wrong.slice(0, 5), `${wrong.length} of ${stored} stored jobs missing or wrong (acknowledged: ${acked.size})`).toEqual([]);

    // The reopened queue works, and ids continue after the highest ever issued.
    const next = queue.submit('after', 'the crash');
    expect(jobNumber(next)).toBeGreaterThan(stored);
    const lease = mustPollSync(queue);
    expect(lease.attempt).toBe(1);
    queue.complete(lease.jobId, lease.token);
    expect(queue.view(lease.jobId).status).toBe('SUCCEEDED');
    expect(queue.view(next)).toMatchObject({ type: 'after', payload: 'the crash', status: 'PENDING' });
  });
});

describe('threads of a process killed while submitting in bursts (group commit)', { timeout: 30_000 }, () => {
  const seed = testSeed('journal-burst-crash');
  const random = prng(seed);
  const trials = Array.from({ length: 4 }, (_, i) => ({
    trial: i + 1,
    killAfterMillis: Math.floor(random() * 401),
    synchronous: i % 2 === 0 ? 'FULL' : 'NORMAL',
  }));

  it.each(trials)('loses no job any thread had acknowledged (trial $trial: 4 threads, SIGKILL $killAfterMillis ms after all of them had submits acknowledged, synchronous $synchronous)', async ({ killAfterMillis, synchronous }) => {
    const path = tempJournal();
    const child = new Child('journal-burst-submitter.mjs', [path, synchronous, '4']);
    await child.line('open ');
    // The burst is on once every thread has had a submit acknowledged; the kill comes at a random moment after that.
    for (let t = 0; t < 4; t++) await child.line(`J`, 20_000, (line) => line.includes(` t${t}:`));
    await new Promise((resolve) => setTimeout(resolve, killAfterMillis));
    await child.kill();

    const acked = new Map<string, string>();
    for (const line of child.lines.slice(1)) {
      const [id, payload] = line.split(' ');
      expect(acked.has(id!), `${id} acknowledged twice`).toBe(false);
      acked.set(id!, payload!);
    }
    const threadsHeard = new Set([...acked.values()].map((payload) => payload.split(':')[0]));
    expect(threadsHeard.size, `threads with acknowledged jobs; stderr: ${child.stderr}`).toBe(4);

    const queue = openJournal(path, systemClock, new RetryPolicy(3, 0, 0));
    const stored = queue.stats().pending;
    expect(queue.stats()).toEqual({ pending: stored, ready: stored, delayed: 0, running: 0, succeeded: 0, dead: 0, cancelled: 0, paused: false });
    // Every acknowledged job is back, with its payload.
    const wrong: Array<{ id: string; payload: string; found: string }> = [];
    for (const [id, payload] of acked) {
      try {
        const view = queue.view(id);
        if (view.payload !== payload || view.status !== 'PENDING' || view.attempts !== 0) wrong.push({ id, payload, found: JSON.stringify(view) });
      } catch (error) {
        wrong.push({ id, payload, found: String(error) });
      }
    }
    expect(wrong.slice(0, 5), `${wrong.length} of ${acked.size} acknowledged jobs missing or wrong`).toEqual([]);
    // A commit covers a prefix of the ids: no holes, and no payload twice.
    const payloads = new Set<string | Uint8Array>();
    for (let n = 1; n <= stored; n++) payloads.add(queue.view(`J${n}`).payload);
    expect(payloads.size).toBe(stored);
  });
});

describe('a process killed while processing', { timeout: 30_000 }, () => {
  it.each([
    ['idle in its event loop', 'idle'],
    ['busy, right after its last call returned', 'busy'],
  ])('keeps finished states, and counts the attempt the job RUNNING at the kill died in: DEAD on its last attempt (killed %s)', async (_, after) => {
    const path = tempJournal();
    const start = 5_000_000;
    const child = new Child('journal-processor.mjs', [path, String(start), after]);
    const ready = JSON.parse((await child.line('ready ')).slice('ready '.length)) as {
      ids: Record<'ok1' | 'ok2' | 'dead' | 'running' | 'cancelled' | 'delayed', string>;
      views: Record<string, JobView>;
      tokens: number[];
      runningToken: number;
      now: number;
    };
    const { ids, views } = ready;
    // What the child saw just before the crash.
    expect(views['ok1']).toMatchObject({ status: 'SUCCEEDED', attempts: 1, lastError: null });
    expect(views['dead']).toMatchObject({ status: 'DEAD', attempts: 2, lastError: 'bad 2' });
    expect(views['running']).toMatchObject({ status: 'RUNNING', attempts: 2, lastError: 'first try' });
    expect(views['cancelled']).toMatchObject({ status: 'CANCELLED', attempts: 0 });
    expect(views['delayed']).toMatchObject({ status: 'PENDING', attempts: 0, nextRunAt: start + 60_000 });
    await child.kill();

    const clock = new ManualClock(ready.now + 1_000);
    const queue = openJournal(path, clock, new RetryPolicy(2, 100, 100));
    const comparable = (v: JobView) => ({
      id: v.id, type: v.type, payload: v.payload, priority: v.priority, status: v.status,
      attempts: v.attempts, nextRunAt: v.nextRunAt, lastError: v.lastError,
    });
    for (const name of ['ok1', 'ok2', 'dead', 'cancelled', 'delayed'] as const) {
      expect(comparable(queue.view(ids[name])), name).toEqual(comparable(views[name]!));
    }

    // The RUNNING job died on its last attempt (2 of 2), which counts: DEAD, and why.
    const lost = { ...comparable(views['running']!), status: 'DEAD', attempts: 2, lastError: LEASE_LOST };
    const beforeThePoll = { ...comparable(views['running']!), status: 'PENDING', attempts: 1, lastError: 'first try' };
    const view = comparable(queue.view(ids.running));
    if (after === 'idle') {
      expect(view).toEqual(lost);
    } else {
      // A poll's lease rides with the next commit (a worker that must count it calls flush(), as the
      // pool does): if the kill came before it was written, the job is as it was before that poll.
      expect([lost, beforeThePoll]).toContainEqual(view);
    }
    if (view.status === 'DEAD') {
      expect(queue.deadLetters().map((v) => v.id)).toEqual([ids.dead, ids.running]);
      expect(queue.stats()).toEqual({ pending: 1, ready: 0, delayed: 1, running: 0, succeeded: 2, dead: 2, cancelled: 1, paused: false });
      queue.retryDead(ids.running);
    } else {
      expect(queue.deadLetters().map((v) => v.id)).toEqual([ids.dead]);
      expect(queue.stats()).toEqual({ pending: 2, ready: 1, delayed: 1, running: 0, succeeded: 2, dead: 1, cancelled: 1, paused: false });
    }
    // It runs again with a token never issued before.
    const lease = mustPollSync(queue, ids.running);
    expect(lease.payload).toBe('running ⏳');
    expect(lease.token).toBeGreaterThan(Math.max(...ready.tokens));
    expect(ready.tokens).toContain(ready.runningToken);
    queue.complete(lease.jobId, lease.token);
    expect(queue.view(ids.running).status).toBe('SUCCEEDED');

    // Ids continue after the highest issued before the crash.
    expect(queue.submit('mail', 'new')).toBe('J7');
  });
});

describe('a process killed while its WorkerPool threads complete jobs', { timeout: 30_000 }, () => {
  const seed = testSeed('journal-crash-pool');
  const random = prng(seed);

  it.each([1, 2, 3])('loses no job, and every job journaled SUCCEEDED did run (trial %i)', async () => {
    const path = tempJournal();
    const dir = tempDir();
    const log = join(dir, 'log');
    const okCount = (): number => (existsSync(log) ? readFileSync(log, 'utf8').split('\n').filter((l) => l.includes('"ev":"ok"')).length : 0);
    const jobs = 2_000;
    const child = new Child('journal-pool-runner.mjs', [path, dir, String(jobs)]);
    await child.line('started');
    const killAtOks = 50 + Math.floor(random() * 400);
    const deadline = Date.now() + 15_000;
    while (okCount() < killAtOks && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 2));
    await child.kill();

    const ran = new Set(readFileSync(log, 'utf8').split('\n').filter((l) => l !== '').map((l) => (JSON.parse(l) as { n: number }).n));
    expect(ran.size, 'jobs that ran before the kill').toBeGreaterThanOrEqual(killAtOks);
    expect(ran.size, 'the kill came while jobs were still running').toBeLessThan(jobs);

    const queue = openJournal(path, systemClock, new RetryPolicy(3, 0, 0));
    const stats = queue.stats();
    expect(stats).toMatchObject({ running: 0, dead: 0, cancelled: 0 });
    expect(stats.pending + stats.succeeded).toBe(jobs);
    const wrong: unknown[] = [];
    for (let n = 0; n < jobs; n++) {
      const view = queue.view(`J${n + 1}`);
      const payload = JSON.parse(view.payload as string) as { n: number };
      if (payload.n !== n) wrong.push({ n, view });
      else if (view.status === 'SUCCEEDED' && (!ran.has(n) || view.attempts !== 1)) wrong.push({ n, why: 'SUCCEEDED but never ran', view });
      else if (view.status === 'PENDING' && view.attempts > 1) wrong.push({ n, why: 'more attempts than the one the kill interrupted', view });
      else if (view.status === 'PENDING' && view.attempts === 1 && view.lastError !== LEASE_LOST) wrong.push({ n, why: 'attempted, but not lost to the kill', view });
      else if (view.status !== 'SUCCEEDED' && view.status !== 'PENDING') wrong.push({ n, view });
    }
    expect(wrong.slice(0, 5), `${wrong.length} jobs wrong after the reopen`).toEqual([]);
    // Most of what ran was journaled as SUCCEEDED before the kill (threads complete right after the handler returns).
    expect(stats.succeeded).toBeGreaterThan(0);

    // The rest can be finished here, and then everything is SUCCEEDED.
    for (let lease = queue.poll('w', 5_000); lease !== undefined; lease = queue.poll('w', 5_000)) queue.complete(lease.jobId, lease.token);
    expect(queue.stats()).toMatchObject({ succeeded: jobs, pending: 0, running: 0 });
  });
});
