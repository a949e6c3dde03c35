/**
 * What the tests of WorkerPools in child processes on one Redis queue share
 * (redis-processes.test.ts, redis-soak.test.ts): the child process
 * (fixtures/redis-pool-process.mjs) behind a JSON-lines interface, the claim
 * log its handlers write (fixtures/redis-process-handlers.mjs), and the
 * checker that walks that log.
 *
 * The handlers append a `start` and a `finish` event per attempt to a Redis
 * list, each in one atomic step with a snapshot of the job's own state
 * (status, attempts, token, leaseUntil, lastError) and Redis's clock.
 * `checkClaims` walks that one total order: each attempt is started once, by
 * a worker holding its lease; two workers run one job at once only when the
 * later one's lease came from an expired one; each job has exactly one
 * finish made while its lease was valid, its last attempt; and every lease
 * the queue counted was seen by a handler (no lease lost, none invented).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { Redis } from 'ioredis';
import { expect } from 'vitest';
import { PROCESS_GONE, type JobView, type PoolStats, type RedisJobQueue, type RedisQueueHandle } from '../../dist/index.js';
import { pause } from '../support/helpers.js';

/** Whether a lastError says the previous lease expired: its holder lived (or may have), or its process was gone. */
function expiredLease(lastError: string | false | null): boolean {
  return lastError === 'lease expired' || lastError === PROCESS_GONE;
}

const PROCESS = fileURLToPath(new URL('../fixtures/redis-pool-process.mjs', import.meta.url));

export interface Message {
  ev: string;
  pid: number;
  label: string;
  stats?: PoolStats;
}

/** One child process running a WorkerPool; talks JSON lines (see the fixture). */
export class Child {
  readonly process: ChildProcess;
  readonly messages: Message[] = [];
  readonly exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stderr = '';

  constructor(readonly label: string, handle: RedisQueueHandle, leaseMillis: number) {
    this.process = spawn(process.execPath, [PROCESS, JSON.stringify(handle), label, String(leaseMillis)], { stdio: ['pipe', 'pipe', 'pipe'] });
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

/** Starts a child (tracked in `children`, for the test's cleanup) and waits until its pool runs. */
export async function launch(children: Child[], label: string, handle: RedisQueueHandle, leaseMillis: number): Promise<Child> {
  const child = new Child(label, handle, leaseMillis);
  children.push(child);
  await child.message('started');
  return child;
}


/** One handler event with the job's state as it was at that instant. */
export interface Event {
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

export async function readLog(admin: Redis, log: string): Promise<Event[]> {
  return (await admin.lrange(log, 0, -1)).map((line) => {
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
export interface Claim {
  jobId: string;
  attempt: number;
  pid: number;
  threadId: number;
  token: number;
  /** Whether the worker still held a valid lease when its handler finished; undefined if it never finished. */
  finishedHolding?: boolean;
}

/** A job run by two workers at once: `stale` was still running when `next` started. */
export interface Overlap {
  jobId: string;
  stale: { attempt: number; pid: number };
  next: { attempt: number; pid: number };
}

/** What checkClaims found. */
export interface ClaimCheck {
  claims: Map<string, Claim[]>;
  overlaps: Overlap[];
  problems: string[];
  /** Leases no handler saw (only allowed with `redisRestarted`): a poll whose reply died with the server. */
  unseen: number;
  /** Attempts that finished holding their lease and were still followed by another (only with `redisRestarted`): a complete that died with the server. */
  lostCompletes: number;
}

/**
 * Walks the log in its (Redis) order and lists every claim, every overlap,
 * and every rule broken.
 *
 * With `redisRestarted` (redis-server was killed under the workers), three
 * things a lost connection explains are counted instead of refused: a lease
 * no handler saw (the poll ran, its reply was lost; the lease expired), an
 * attempt that finished holding its lease yet was followed by another (its
 * complete was lost), and a start logged only after this attempt's lease
 * had expired, or even after a later attempt had begun (the log itself
 * waited for Redis to come back, while the lease ran out). Everything
 * else holds as strictly: no attempt started twice, no job run twice at once
 * unless a lease expired, the last attempt started, finished holding, and
 * succeeded.
 */
export function checkClaims(events: readonly Event[], views: ReadonlyMap<string, JobView>, { redisRestarted = false } = {}): ClaimCheck {
  let unseen = 0;
  let lostCompletes = 0;
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
      const holding = e.status === 'RUNNING' && e.attempts === e.attempt && e.at < e.leaseUntil;
      // Logged late: this very attempt's lease expired since (put back, or run out with nobody yet to notice), and no later
      // attempt has begun.
      const expiredSince = e.attempts === e.attempt && (
        (expiredLease(e.lastError) && (e.status === 'PENDING' || e.at >= e.leaseUntil)) || (e.status === 'RUNNING' && e.at >= e.leaseUntil)
      );
      // Logged later still: a later attempt has begun (its own start shows the lease it took over expired). The
      // snapshot is that attempt's, token included: this attempt's own token is unknown.
      const overtaken = e.attempts > e.attempt;
      if (!(holding || (redisRestarted && (expiredSince || overtaken)))) {
        problems.push(`${of} started without holding its lease: ${JSON.stringify(e)}`);
      }
      if (!overtaken && mine.some((c) => c.token === e.token)) problems.push(`${of} got token ${e.token} a second time`);
      for (const stale of running) {
        overlaps.push({ jobId: e.jobId, stale: { attempt: stale.attempt, pid: stale.pid }, next: { attempt: e.attempt, pid: e.pid } });
        // Two at once is only allowed when the earlier lease had expired before this one was given.
        if (!expiredLease(e.lastError)) {
          problems.push(`${of} started while attempt ${stale.attempt} (pid ${stale.pid}) still ran, and its lease had not expired (lastError ${JSON.stringify(e.lastError)})`);
        }
      }
      const claim: Claim = { jobId: e.jobId, attempt: e.attempt, pid: e.pid, threadId: e.threadId, token: overtaken ? Number.NaN : e.token };
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
    const seenAll = JSON.stringify(attempts) === JSON.stringify(expected);
    const seenSome = attempts.every((attempt) => attempt >= 1 && attempt <= view.attempts) && attempts.at(-1) === view.attempts;
    if (!(seenAll || (redisRestarted && seenSome))) problems.push(`${id}: the queue counts ${view.attempts} attempts, handlers started ${JSON.stringify(attempts)}`);
    unseen += view.attempts - attempts.length;
    if (view.status !== 'SUCCEEDED') problems.push(`${id} ended ${view.status} (${JSON.stringify(view)})`);
    const holding = mine.filter((c) => c.finishedHolding === true).map((c) => c.attempt);
    const onlyLast = JSON.stringify(holding) === JSON.stringify([view.attempts]);
    if (!(onlyLast || (redisRestarted && holding.at(-1) === view.attempts))) {
      problems.push(`${id}: attempts that finished holding a valid lease ${JSON.stringify(holding)}, expected only the last, ${view.attempts}`);
    }
    lostCompletes += Math.max(0, holding.length - 1);
  }
  for (const id of claims.keys()) if (!views.has(id)) problems.push(`${id} was run but never submitted by the test`);
  return { claims, overlaps, problems, unseen, lostCompletes };
}

export async function viewsOf(queue: RedisJobQueue, ids: readonly string[]): Promise<Map<string, JobView>> {
  const views = new Map<string, JobView>();
  // A few hundred calls in flight at a time: thousands at once would outlast the command timeout on a loaded machine.
  for (let i = 0; i < ids.length; i += 500) {
    const chunk = ids.slice(i, i + 500);
    const got = await Promise.all(chunk.map((id) => queue.view(id)));
    chunk.forEach((id, j) => views.set(id, got[j]!));
  }
  return views;
}

/** Polls an async condition until it holds; fails with `explain()` after `ms`. */
export async function eventually(what: string, condition: () => Promise<boolean>, ms = 60_000, explain: () => Promise<unknown> = async () => ''): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for: ${what} ${JSON.stringify(await explain())}`);
    await pause(20);
  }
}

export async function settled(queue: RedisJobQueue, ids: readonly string[], ms = 60_000): Promise<void> {
  const done = async () => (await Promise.all(ids.map((id) => queue.view(id)))).every((v) => v.status === 'SUCCEEDED' || v.status === 'DEAD');
  const unsettled = async () => (await Promise.all(ids.map((id) => queue.view(id)))).filter((v) => v.status !== 'SUCCEEDED' && v.status !== 'DEAD');
  await eventually(`${ids.length} jobs settled`, done, ms, unsettled);
}
