/**
 * WorkerPools in separate PROCESSES on one Redis queue (issue #5):
 * each child process (test/fixtures/redis-pool-process.mjs) runs a pool of 2
 * threads on the same queue name, on systemClock. One process is killed with
 * SIGKILL mid-job; another is stopped with SIGSTOP past its lease and then
 * continued, a zombie whose complete must be refused.
 *
 * Every claim is checked, not sampled. The handlers
 * (test/fixtures/redis-process-handlers.mjs) append a `start` and a `finish`
 * event per attempt to a Redis list, each in one atomic step with a snapshot
 * of the job's own state (status, attempts, token, leaseUntil, lastError) and
 * Redis's clock. `checkClaims` walks that one total order: each attempt is
 * started once, by a worker holding its lease; two workers run one job at once
 * only when the later one's lease came from an expired one; each job has
 * exactly one finish made while its lease was valid, its last attempt; and
 * every lease the queue counted was seen by a handler (no lease lost, none
 * invented).
 *
 * One private redis-server for the file. Timeouts are generous and nothing
 * asserts how long anything took: the tests wait for conditions.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  RedisJobQueue, RetryPolicy, systemClock, type JobView, type NewJob, type PoolStats, type RedisQueueHandle,
} from '../dist/index.js';
import { pause } from './helpers.js';
import { describeRedis, startRedis, type RedisServer } from './redis-harness.js';

const PROCESS = fileURLToPath(new URL('./fixtures/redis-pool-process.mjs', import.meta.url));
/** Short, so that a dead or stopped process's job comes back soon; heartbeats keep a live one's. */
const LEASE = 2_000;
const THREADS_PER_PROCESS = 2;

let server: RedisServer | undefined;
let admin: Redis | undefined;
let names = 0;
const children: Child[] = [];
const queues: RedisJobQueue[] = [];

// ── child processes ─────────────────────────────────────────────────────────

interface Message {
  ev: string;
  pid: number;
  label: string;
  stats?: PoolStats;
}

/** One child process running a WorkerPool; talks JSON lines (see the fixture). */
class Child {
  readonly process: ChildProcess;
  readonly messages: Message[] = [];
  readonly exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stderr = '';

  constructor(readonly label: string, handle: RedisQueueHandle) {
    this.process = spawn(process.execPath, [PROCESS, JSON.stringify(handle), label, String(LEASE)], { stdio: ['pipe', 'pipe', 'pipe'] });
    this.exit = new Promise((resolve) => this.process.once('exit', (code, signal) => resolve({ code, signal })));
    createInterface({ input: this.process.stdout! }).on('line', (line) => this.messages.push(JSON.parse(line) as Message));
    this.process.stderr!.on('data', (data: Buffer) => (this.stderr += data.toString()));
    // Writing to a child that died must not crash the test process.
    this.process.stdin!.on('error', () => undefined);
  }

  get pid(): number {
    return this.process.pid!;
  }

  get running(): boolean {
    return this.process.exitCode === null && this.process.signalCode === null;
  }

  /** The `n`-th message (from 0) of kind `ev`, once it arrives. */
  async message(ev: string, n = 0, ms = 60_000): Promise<Message> {
    const deadline = Date.now() + ms;
    for (;;) {
      const found = this.messages.filter((m) => m.ev === ev)[n];
      if (found !== undefined) return found;
      if (!this.running) throw new Error(`process ${this.label} exited before saying ${ev}: ${this.stderr}`);
      if (Date.now() > deadline) throw new Error(`process ${this.label} did not say ${ev} within ${ms} ms: ${this.stderr}`);
      await pause(10);
    }
  }

  async stats(): Promise<PoolStats> {
    const n = this.messages.filter((m) => m.ev === 'stats').length;
    this.process.stdin!.write('stats\n');
    return (await this.message('stats', n)).stats!;
  }

  /** Closes its pool gracefully; resolves to the pool's last stats once the process exited 0. */
  async close(): Promise<PoolStats> {
    this.process.stdin!.write('close\n');
    const { stats } = await this.message('closed');
    expect(await this.exit, `exit of process ${this.label}: ${this.stderr}`).toEqual({ code: 0, signal: null });
    return stats!;
  }
}

async function launch(label: string, handle: RedisQueueHandle): Promise<Child> {
  const child = new Child(label, handle);
  children.push(child);
  await child.message('started');
  return child;
}

// ── the queue and the claim log ─────────────────────────────────────────────

interface Setup {
  queue: RedisJobQueue;
  handle: RedisQueueHandle;
  /** The Redis list the handlers log into. */
  log: string;
  /** A handler payload: where to log, plus `fields`. */
  payload(fields?: Record<string, unknown>): string;
}

async function setupQueue(what: string): Promise<Setup> {
  const name = `${what}-${process.pid}-${++names}`;
  const queue = await RedisJobQueue.connect({ redis: server!.url, name, policy: new RetryPolicy(3, 0, 0), time: systemClock });
  queues.push(queue);
  const log = `test:{${name}}:log`;
  return {
    queue,
    handle: queue.share(),
    log,
    payload: (fields = {}) => JSON.stringify({ redis: server!.url, queue: name, log, ...fields }),
  };
}

/** One handler event with the job's state as it was at that instant. */
interface Event {
  ev: 'start' | 'finish';
  jobId: string;
  type: string;
  attempt: number;
  pid: number;
  threadId: number;
  /** The job's fields at the event; false where the hash has none. */
  status: string | false;
  attempts: number;
  token: number;
  leaseUntil: number;
  lastError: string | false;
  /** Redis's clock at the event, ms. */
  at: number;
}

async function readLog(log: string): Promise<Event[]> {
  return (await admin!.lrange(log, 0, -1)).map((line) => {
    const [own, fields, at] = JSON.parse(line) as [string, (string | false)[], string];
    const [status, attempts, token, leaseUntil, lastError] = fields;
    return {
      ...(JSON.parse(own) as Pick<Event, 'ev' | 'jobId' | 'type' | 'attempt' | 'pid' | 'threadId'>),
      status: status!,
      attempts: Number(attempts),
      token: Number(token),
      leaseUntil: Number(leaseUntil),
      lastError: lastError!,
      at: Number(at),
    };
  });
}

/** One attempt as the handlers saw it: who started it, with which token, and how it finished. */
interface Claim {
  jobId: string;
  attempt: number;
  pid: number;
  threadId: number;
  token: number;
  /** Whether the worker still held a valid lease when its handler finished; undefined if it never finished. */
  finishedHolding?: boolean;
}

/** A job run by two workers at once: `stale` was still running when `next` started. */
interface Overlap {
  jobId: string;
  stale: { attempt: number; pid: number };
  next: { attempt: number; pid: number };
}

/** Walks the log in its (Redis) order and lists every claim, every overlap, and every rule broken. */
function checkClaims(events: readonly Event[], views: ReadonlyMap<string, JobView>): { claims: Map<string, Claim[]>; overlaps: Overlap[]; problems: string[] } {
  const claims = new Map<string, Claim[]>();
  const open = new Map<string, Claim[]>();
  const overlaps: Overlap[] = [];
  const problems: string[] = [];
  for (const e of events) {
    const of = `${e.jobId} attempt ${e.attempt} (pid ${e.pid}, thread ${e.threadId})`;
    const mine = claims.get(e.jobId) ?? [];
    claims.set(e.jobId, mine);
    const running = open.get(e.jobId) ?? [];
    open.set(e.jobId, running);
    if (e.ev === 'start') {
      if (mine.some((c) => c.attempt === e.attempt)) problems.push(`${of} started a second time`);
      // Holding the lease: the job is RUNNING on this very attempt (a poll bumps attempts) and the lease has not run out.
      if (!(e.status === 'RUNNING' && e.attempts === e.attempt && e.at < e.leaseUntil)) {
        problems.push(`${of} started without holding its lease: ${JSON.stringify(e)}`);
      }
      if (mine.some((c) => c.token === e.token)) problems.push(`${of} got token ${e.token} a second time`);
      for (const stale of running) {
        overlaps.push({ jobId: e.jobId, stale: { attempt: stale.attempt, pid: stale.pid }, next: { attempt: e.attempt, pid: e.pid } });
        // Two at once is only allowed when the earlier lease had expired before this one was given.
        if (e.lastError !== 'lease expired') {
          problems.push(`${of} started while attempt ${stale.attempt} (pid ${stale.pid}) still ran, and its lease had not expired (lastError ${JSON.stringify(e.lastError)})`);
        }
      }
      const claim: Claim = { jobId: e.jobId, attempt: e.attempt, pid: e.pid, threadId: e.threadId, token: e.token };
      mine.push(claim);
      running.push(claim);
    } else {
      const claim = running.find((c) => c.attempt === e.attempt && c.pid === e.pid && c.threadId === e.threadId);
      if (claim === undefined) {
        problems.push(`${of} finished without a matching start`);
        continue;
      }
      running.splice(running.indexOf(claim), 1);
      claim.finishedHolding = e.status === 'RUNNING' && e.token === claim.token && e.at < e.leaseUntil;
    }
  }
  for (const [id, view] of views) {
    const mine = (claims.get(id) ?? []).sort((a, b) => a.attempt - b.attempt);
    const attempts = mine.map((c) => c.attempt);
    const expected = Array.from({ length: view.attempts }, (_, i) => i + 1);
    // Every lease the queue counted reached a handler: none lost between poll and handler, none made up.
    if (JSON.stringify(attempts) !== JSON.stringify(expected)) problems.push(`${id}: the queue counts ${view.attempts} attempts, handlers started ${JSON.stringify(attempts)}`);
    if (view.status !== 'SUCCEEDED') problems.push(`${id} ended ${view.status} (${JSON.stringify(view)})`);
    const holding = mine.filter((c) => c.finishedHolding === true).map((c) => c.attempt);
    if (JSON.stringify(holding) !== JSON.stringify([view.attempts])) {
      problems.push(`${id}: attempts that finished holding a valid lease ${JSON.stringify(holding)}, expected only the last, ${view.attempts}`);
    }
  }
  for (const id of claims.keys()) if (!views.has(id)) problems.push(`${id} was run but never submitted by the test`);
  return { claims, overlaps, problems };
}

async function viewsOf(queue: RedisJobQueue, ids: readonly string[]): Promise<Map<string, JobView>> {
  return new Map(await Promise.all(ids.map(async (id) => [id, await queue.view(id)] as const)));
}

/** Polls an async condition until it holds; fails with `explain()` after `ms`. */
async function eventually(what: string, condition: () => Promise<boolean>, ms = 60_000, explain: () => Promise<unknown> = async () => ''): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for: ${what} ${JSON.stringify(await explain())}`);
    await pause(20);
  }
}

async function settled(queue: RedisJobQueue, ids: readonly string[], ms = 60_000): Promise<void> {
  const done = async () => (await Promise.all(ids.map((id) => queue.view(id)))).every((v) => v.status === 'SUCCEEDED' || v.status === 'DEAD');
  const unsettled = async () => (await Promise.all(ids.map((id) => queue.view(id)))).filter((v) => v.status !== 'SUCCEEDED' && v.status !== 'DEAD');
  await eventually(`${ids.length} jobs settled`, done, ms, unsettled);
}

/** `parties` jobs that only finish together, each on a thread of its own: proves that many threads poll at once. */
async function rendezvous(s: Setup, group: string, parties: number): Promise<string[]> {
  const key = `${s.log}:meet:${group}`;
  const ids = await s.queue.submitMany(Array.from({ length: parties }, (): NewJob => ({ type: 'meet', payload: s.payload({ key, parties }) })));
  await settled(s.queue, ids);
  return ids;
}

async function startsOf(log: string, id: string): Promise<Event[]> {
  return (await readLog(log)).filter((e) => e.ev === 'start' && e.jobId === id);
}

describe('checkClaims (the checker these tests rely on)', () => {
  const lease = { status: 'RUNNING', leaseUntil: 10_000, lastError: false, at: 1_000 } as const;
  const start = (attempt: number, token: number, more: Partial<Event> = {}): Event =>
    ({ ev: 'start', jobId: 'J1', type: 'work', attempt, pid: 100 + attempt, threadId: 1, attempts: attempt, token, ...lease, ...more });
  const finish = (attempt: number, token: number, more: Partial<Event> = {}): Event => ({ ...start(attempt, token, more), ev: 'finish' });
  const view = (attempts: number) => new Map([['J1', { status: 'SUCCEEDED', attempts } as JobView]]);

  it('passes one attempt that starts and finishes holding its lease', () => {
    expect(checkClaims([start(1, 7), finish(1, 7)], view(1)).problems).toEqual([]);
  });

  it('flags a job run by two workers at once when the first lease had not expired', () => {
    const { overlaps, problems } = checkClaims([start(1, 7), start(2, 8, { lastError: 'boom' }), finish(2, 8), finish(1, 7, { status: 'SUCCEEDED', token: 8 })], view(2));
    expect(overlaps).toHaveLength(1);
    expect(problems).toEqual([expect.stringMatching(/still ran, and its lease had not expired/)]);
  });

  it('allows the overlap after an expired lease, but not two finishes that both held a valid lease', () => {
    const zombie = [start(1, 7), start(2, 8, { lastError: 'lease expired' }), finish(2, 8), finish(1, 7, { status: 'SUCCEEDED', token: 8 })];
    expect(checkClaims(zombie, view(2)).problems).toEqual([]);
    const twice = [start(1, 7), finish(1, 7), start(2, 8, { lastError: 'lease expired' }), finish(2, 8)];
    expect(checkClaims(twice, view(2)).problems).toEqual([expect.stringMatching(/finished holding a valid lease \[1,2\]/)]);
  });

  it('flags a lease no handler saw, an attempt started twice, and a start without the lease', () => {
    expect(checkClaims([start(2, 8), finish(2, 8)], view(2)).problems).toEqual([expect.stringMatching(/counts 2 attempts, handlers started \[2\]/)]);
    expect(checkClaims([start(1, 7), start(1, 7), finish(1, 7)], view(1)).problems).toContainEqual(expect.stringMatching(/started a second time/));
    expect(checkClaims([start(1, 7, { at: 10_000 }), finish(1, 7)], view(1)).problems).toEqual([expect.stringMatching(/without holding its lease/)]);
  });
});

describeRedis('WorkerPools in separate processes on one Redis queue', () => {
  beforeAll(async () => {
    server = await startRedis();
    admin = new Redis(server.url);
  });
  afterEach(async () => {
    // Whatever happened, no child outlives its test (SIGKILL also ends a stopped one).
    for (const child of children.splice(0)) {
      if (child.running) child.process.kill('SIGKILL');
      await child.exit;
    }
    await Promise.all(queues.splice(0).map((queue) => queue.close()));
  });
  afterAll(async () => {
    admin?.disconnect();
    await server?.stop();
  });

  it('runs every job exactly once at a time across 3 processes; a process SIGKILLed mid-job loses only its leases, which the others retry and complete', { timeout: 180_000 }, async () => {
    const s = await setupQueue('kill');
    // The victim starts alone and takes two jobs that hold until released, one per thread: so it is
    // mid-job when killed, and (concurrency 1) takes nothing else, so we know every lease it had.
    const victim = await launch('victim', s.handle);
    const holds = await s.queue.submitMany([0, 1].map((): NewJob => ({ type: 'hold', payload: s.payload({ release: `${s.log}:release` }) })));
    await eventually('the victim holds both jobs', async () => (await readLog(s.log)).filter((e) => e.pid === victim.pid).length === 2);
    expect(new Set((await readLog(s.log)).map((e) => e.threadId)).size, 'victim threads holding a job').toBe(THREADS_PER_PROCESS);

    const others = await Promise.all(['a', 'b', 'c'].map((label) => launch(label, s.handle)));
    const survivors = new Set(others.map((c) => c.pid));
    // All 6 threads of the 3 others poll the queue at once.
    const met = await rendezvous(s, 'all-threads', others.length * THREADS_PER_PROCESS);

    const jobs = 300;
    const work = await s.queue.submitMany(Array.from({ length: jobs }, (_, n): NewJob => ({ type: 'work', payload: s.payload({ n, ms: 5 + (n % 8) * 5 }) })));
    await eventually('a quarter of the work is done', async () => (await readLog(s.log)).filter((e) => e.ev === 'finish' && e.type === 'work').length >= jobs / 4);
    victim.process.kill('SIGKILL');
    expect(await victim.exit).toEqual({ code: null, signal: 'SIGKILL' });

    // The victim's two leases run out (no one hands them back: its whole process is gone); the others retry them.
    const all = [...holds, ...met, ...work];
    await settled(s.queue, all, 120_000);
    const closed = await Promise.all(others.map((c) => c.close()));

    const views = await viewsOf(s.queue, all);
    const { claims, overlaps, problems } = checkClaims(await readLog(s.log), views);
    expect(problems).toEqual([]);
    for (const id of holds) {
      expect(views.get(id), id).toMatchObject({ status: 'SUCCEEDED', attempts: 2, lastError: 'lease expired' });
      const [killed, retried] = claims.get(id)!;
      expect(killed!.pid).toBe(victim.pid);
      expect(killed!.finishedHolding, `${id} attempt 1 never finished`).toBeUndefined();
      expect(survivors.has(retried!.pid), `${id} attempt 2 ran in a surviving process`).toBe(true);
    }
    // The only jobs ever run by two workers at once: the victim's, after their leases expired.
    const expected = holds.map((id) => ({ jobId: id, stale: { attempt: 1, pid: victim.pid }, next: { attempt: 2, pid: claims.get(id)![1]!.pid } }));
    expect([...overlaps].sort((a, b) => a.jobId.localeCompare(b.jobId))).toEqual(expected.sort((a, b) => a.jobId.localeCompare(b.jobId)));
    for (const id of [...met, ...work]) {
      expect(views.get(id), id).toMatchObject({ status: 'SUCCEEDED', attempts: 1, lastError: null });
      expect(survivors.has(claims.get(id)![0]!.pid), `${id} ran in a surviving process`).toBe(true);
    }
    expect(new Set(met.map((id) => claims.get(id)![0]!.pid)), 'processes in the rendezvous').toEqual(survivors);
    expect(await s.queue.stats()).toMatchObject({ succeeded: all.length, pending: 0, running: 0, dead: 0 });
    for (const stats of closed) expect(stats).toMatchObject({ threads: THREADS_PER_PROCESS, restarts: 0, refused: 0 });
  });

  it('refuses the late complete of a process stopped past its lease (SIGSTOP, then SIGCONT): the job is completed once, by another process', { timeout: 180_000 }, async () => {
    const s = await setupQueue('zombie');
    const fleet = await Promise.all(['a', 'b', 'c'].map((label) => launch(label, s.handle)));
    const before = await rendezvous(s, 'before', fleet.length * THREADS_PER_PROCESS);

    // Nothing else is queued: whichever process takes this job is the one we stop, mid-job.
    const release = `${s.log}:release`;
    const [id] = await s.queue.submitMany([{ type: 'hold', payload: s.payload({ release }) }]);
    await eventually('the job started', async () => (await startsOf(s.log, id!)).length === 1);
    const [first] = await startsOf(s.log, id!);
    const zombie = fleet.find((c) => c.pid === first!.pid)!;
    zombie.process.kill('SIGSTOP');
    const stoppedAt = Date.now();

    // Its heartbeats stop with it; once the lease runs out another process takes attempt 2 and completes it.
    await settled(s.queue, [id!]);
    expect(await s.queue.view(id!)).toMatchObject({ status: 'SUCCEEDED', attempts: 2, lastError: 'lease expired' });
    // Now let the zombie finish what it was doing. (It was stopped for about one lease, well short
    // of the two after which its pool would take the thread for hung and terminate it.)
    await admin!.set(release, '1');
    zombie.process.kill('SIGCONT');
    const stoppedFor = Date.now() - stoppedAt;
    await eventually('the zombie finished its attempt', async () => (await readLog(s.log)).some((e) => e.ev === 'finish' && e.pid === zombie.pid));
    // (Had its pool terminated the thread as hung instead, restarts would say so here.)
    const explain = async () => ({ stoppedFor, lease: LEASE, stats: await zombie.stats() });
    await eventually('the zombie\'s pool counted its complete as refused', async () => (await zombie.stats()).refused >= 1, 30_000, explain);

    // Every thread, the zombie's two included, is still at work (none was replaced).
    const after = await rendezvous(s, 'after', fleet.length * THREADS_PER_PROCESS);
    const closed = new Map(await Promise.all(fleet.map(async (c) => [c.pid, await c.close()] as const)));

    const all = [...before, id!, ...after];
    const views = await viewsOf(s.queue, all);
    const { claims, overlaps, problems } = checkClaims(await readLog(s.log), views);
    expect(problems).toEqual([]);
    expect(views.get(id!)).toMatchObject({ status: 'SUCCEEDED', attempts: 2, lastError: 'lease expired' });
    const [late, retried] = claims.get(id!)!;
    expect(late).toMatchObject({ attempt: 1, pid: zombie.pid, finishedHolding: false });
    expect(retried).toMatchObject({ attempt: 2, finishedHolding: true });
    expect(retried!.pid).not.toBe(zombie.pid);
    expect(overlaps).toEqual([{ jobId: id, stale: { attempt: 1, pid: zombie.pid }, next: { attempt: 2, pid: retried!.pid } }]);
    for (const other of [...before, ...after]) expect(views.get(other), other).toMatchObject({ status: 'SUCCEEDED', attempts: 1 });
    expect(new Set(after.map((job) => claims.get(job)![0]!.pid)), 'processes in the rendezvous after SIGCONT').toEqual(new Set(fleet.map((c) => c.pid)));
    for (const [pid, stats] of closed) {
      expect(stats, `pool of pid ${pid}`).toMatchObject({ threads: THREADS_PER_PROCESS, restarts: 0, refused: pid === zombie.pid ? 1 : 0 });
    }
    expect(await s.queue.stats()).toMatchObject({ succeeded: all.length, pending: 0, running: 0, dead: 0 });
  });
});
