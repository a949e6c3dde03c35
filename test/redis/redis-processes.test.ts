/**
 * WorkerPools in separate PROCESSES on one Redis queue (issue #5):
 * each child process (test/fixtures/redis-pool-process.mjs) runs a pool of 2
 * threads on the same queue name, on systemClock. One process is killed with
 * SIGKILL mid-job; another is stopped with SIGSTOP past its lease and then
 * continued, a zombie whose complete must be refused. Either way the
 * lease's expiry records that its process died (its liveness key lapsed).
 *
 * Every claim is checked, not sampled: the handlers log every attempt, and
 * `checkClaims` (test/redis/redis-process-harness.ts) walks that log.
 *
 * One private redis-server for the file. Timeouts are generous and nothing
 * asserts how long anything took: the tests wait for conditions.
 */
import { hostname } from 'node:os';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock, PROCESS_GONE, RedisJobQueue, RetryPolicy, systemClock, type JobView, type NewJob, type RedisQueueHandle } from '../../dist/index.js';
import { describeRedis, startRedis, type RedisServer } from '../support/redis-harness.js';
import {
  checkClaims, eventually, launch as launchChild, readLog as readClaimLog, settled, viewsOf, type Child, type Event,
} from './redis-process-harness.js';
/** Short, so that a dead or stopped process's job comes back soon; heartbeats keep a live one's. */
const LEASE = 2_000;
const THREADS_PER_PROCESS = 2;

let server: RedisServer | undefined;
let admin: Redis | undefined;
let names = 0;
const children: Child[] = [];
const queues: RedisJobQueue[] = [];

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

const launch = (label: string, handle: RedisQueueHandle) => launchChild(children, label, handle, LEASE);
const readLog = (log: string) => readClaimLog(admin!, log);

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

  it("takes a start logged after a later attempt's, showing that attempt's token, for a late log only once Redis restarted", () => {
    // Attempt 1's start waited for Redis while its lease ran out; attempt 2 began, finished, and was logged first.
    const late = { status: 'SUCCEEDED', attempts: 2, lastError: 'lease expired', at: 11_000 } as const;
    const events = [start(2, 8, { lastError: 'lease expired' }), finish(2, 8), start(1, 8, late), finish(1, 8, late)];
    expect(checkClaims(events, view(2), { redisRestarted: true }).problems).toEqual([]);
    expect(checkClaims(events, view(2)).problems).toEqual([expect.stringMatching(/attempt 1 .* started without holding its lease/)]);
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

  it('records that the holder process died only when its liveness key lapsed before the lease expired', async () => {
    const clock = new ManualClock(Date.now());
    const name = `liveness-${process.pid}-${++names}`;
    const queue = await RedisJobQueue.connect({ redis: server!.url, name, policy: new RetryPolicy(3, 0, 0), time: clock });
    queues.push(queue);
    const [alive, gone] = await queue.submitMany([{ type: 't' }, { type: 't' }]);
    await queue.poll('w', 1_000);
    clock.advance(1_000);
    // This process still runs (this client refreshes its key): just an expired lease.
    expect(await queue.view(alive!)).toMatchObject({ status: 'PENDING', attempts: 1, lastError: 'lease expired' });
    expect((await queue.poll('w', 1_000))!.jobId).toBe(gone);
    const holder = await admin!.hget(`leasehold:{${name}}:job:${gone!.slice(1)}`, 'holder');
    expect(holder).toBe(`${hostname()}:${process.pid}`);
    // As if this process had died: its key lapses (and this client refreshes nothing until the lease has been found expired).
    await queue.close();
    await admin!.del(`leasehold:{${name}}:alive:${holder}`);
    clock.advance(1_000);
    const observer = await RedisJobQueue.connect({ redis: server!.url, name, policy: new RetryPolicy(3, 0, 0), time: clock });
    queues.push(observer);
    expect(await observer.view(gone!)).toMatchObject({ status: 'PENDING', attempts: 1, lastError: PROCESS_GONE });
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
      // Its process's liveness key (1 s) lapsed before the lease (2 s, last extended before the kill) ran out: the attempt says its process died.
      expect(views.get(id), id).toMatchObject({ status: 'SUCCEEDED', attempts: 2, lastError: PROCESS_GONE });
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
    // A stopped process refreshes nothing either: from Redis it looks gone.
    expect(await s.queue.view(id!)).toMatchObject({ status: 'SUCCEEDED', attempts: 2, lastError: PROCESS_GONE });
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
    expect(views.get(id!)).toMatchObject({ status: 'SUCCEEDED', attempts: 2, lastError: PROCESS_GONE });
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
