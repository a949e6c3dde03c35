/**
 * A soak with faults: WorkerPools in 8 child processes × 2 threads on one
 * Redis queue (appendonly yes, appendfsync always) while a producer submits
 * jobs and a driver injects faults: it SIGKILLs a worker process and starts
 * another, or (every third fault) SIGKILLs redis-server and starts it again
 * on the same AOF. Then every job must have succeeded (none lost, whether its
 * submit was acknowledged or not), every claim in the handlers' log must obey
 * checkClaims (no job run twice at once unless a lease expired, attempts
 * exactly as counted; the only leases no handler saw, and the only completes
 * lost, are calls that died with a killed server: at most one of each per
 * thread per restart), and every fault must have happened.
 *
 * Faults are driven by counts, never by the clock: each fires once the
 * producer has had JOBS_BETWEEN_FAULTS more jobs acknowledged since the
 * previous fault took effect, and a fault has taken effect once the handlers
 * have started jobs through it (a replacement process has started one; after
 * a restart, STARTS_AFTER_RESTART were started on the restarted server). A
 * slow machine makes the run longer, never one without its faults.
 *
 * `npm test` runs LEASEHOLD_SOAK_FAULTS (default 6) faults; `npm run soak`
 * runs 18 and prints the table docs/redis-scale.md shows.
 */
import { Redis } from 'ioredis';
import { afterAll, expect, it } from 'vitest';
import { BackendUnavailableError, RedisJobQueue, RetryPolicy, systemClock, type NewJob, type PoolStats } from '../../dist/index.js';
import { pause } from '../support/helpers.js';
import { describeRedis, startRedis, type RedisServer } from '../support/redis-harness.js';
import { checkClaims, eventually, launch, readLog, viewsOf, type Child } from './redis-process-harness.js';

const FAULTS = Number(process.env['LEASEHOLD_SOAK_FAULTS'] ?? '6');
const PROCESSES = 8;
const THREADS_PER_PROCESS = 2;
/** Short, so that a killed process's jobs come back soon; heartbeats keep a live one's. */
const LEASE = 2_000;
/** One fault in this many restarts Redis; the others kill a worker process. */
const REDIS_EVERY = 3;
/** Jobs acknowledged between one fault's effect and the next fault (and after the last). */
const JOBS_BETWEEN_FAULTS = 200;
/** Handler starts on a restarted server that show the fleet is back at work. */
const STARTS_AFTER_RESTART = 20;
/** Jobs submitted but not yet settled beyond which the producer waits: the run is about faults, not a backlog. */
const BACKLOG = 200;
/** How long the driver waits for a count before it gives up: a hang, not a pace. */
const WAIT_MILLIS = 180_000;

describeRedis('Soak: WorkerPools in 8 processes on one Redis queue, with processes and Redis killed under them', () => {
  let server: RedisServer | undefined;
  const children: Child[] = [];
  afterAll(async () => {
    for (const child of children.splice(0)) {
      if (child.running) child.process.kill('SIGKILL');
      await child.exit;
    }
    await server?.stop();
  });

  it(`loses no job and no lease, and runs no job twice at once outside an expired lease, through ${FAULTS} faults`, { timeout: FAULTS * WAIT_MILLIS + 300_000 }, async () => {
    server = await startRedis({ appendfsync: 'always' });
    const url = server.url;
    const name = `soak-${process.pid}`;
    const log = `test:{${name}}:log`;
    // Many attempts: a job may be hit by more than one fault; none may end DEAD.
    const queue = await RedisJobQueue.connect({ redis: url, name, policy: new RetryPolicy(20, 0, 0), time: systemClock });
    const admin = new Redis(url);
    const handle = queue.share();
    let labels = 0;
    const fleet: Child[] = [];
    const start = async () => {
      const child = await launch(children, `p${++labels}`, handle, LEASE);
      fleet.push(child);
      return child;
    };
    await Promise.all(Array.from({ length: PROCESSES }, start));

    const acknowledged: string[] = [];
    let unacknowledged = 0;
    let producing = true;
    /** Whether the queue holds fewer than BACKLOG unsettled jobs; false while Redis is down. */
    const roomForMore = () => queue.stats().then((stats) => stats.pending + stats.running < BACKLOG, () => false);
    const produce = async () => {
      for (let n = 0; producing; n++) {
        const jobs = Array.from({ length: 20 }, (_, i): NewJob => ({ type: 'work', payload: JSON.stringify({ redis: url, queue: name, log, ms: 1 + ((n + i) % 10) }) }));
        try {
          acknowledged.push(...(await queue.submitMany(jobs)));
        } catch (error) {
          if (!(error instanceof BackendUnavailableError)) throw error;
          unacknowledged++;
          await pause(25); // Redis is down: the next try waits for it rather than spinning.
        }
        while (producing && !(await roomForMore())) await pause(10);
      }
    };
    /** The `start` events logged from index `from` on; [] while Redis is down. */
    const startsSince = async (from: number): Promise<Array<{ pid: number }>> => {
      const lines = await admin.lrange(log, from, -1).catch(() => []);
      return lines.map((line) => JSON.parse(JSON.parse(line)[0]) as { ev: string; pid: number }).filter((e) => e.ev === 'start');
    };
    /** The log's length, once Redis answers. */
    const logLength = async (): Promise<number> => {
      for (;;) {
        const length = await admin.llen(log).catch(() => undefined);
        if (length !== undefined) return length;
        await pause(20);
      }
    };
    const faults = { processKills: 0, redisRestarts: 0 };
    const inject = async () => {
      try {
        let acknowledgedAtEffect = 0;
        for (let n = 1; n <= FAULTS; n++) {
          await eventually(`${JOBS_BETWEEN_FAULTS} jobs acknowledged before fault ${n}`, async () => acknowledged.length >= acknowledgedAtEffect + JOBS_BETWEEN_FAULTS, WAIT_MILLIS);
          if (n % REDIS_EVERY === 0) {
            await server!.restart();
            faults.redisRestarts++;
            // The restarted server's log: the handlers' starts from here on went through it.
            const from = await logLength();
            await eventually(`${STARTS_AFTER_RESTART} jobs started after restart ${faults.redisRestarts}`, async () => (await startsSince(from)).length >= STARTS_AFTER_RESTART, WAIT_MILLIS);
          } else {
            const victim = fleet.splice(n % fleet.length, 1)[0]!;
            victim.process.kill('SIGKILL');
            await victim.exit;
            faults.processKills++;
            const from = await logLength();
            const replacement = await start();
            await eventually(`the replacement of ${victim.label} started a job`, async () => (await startsSince(from)).some((e) => e.pid === replacement.pid), WAIT_MILLIS);
          }
          acknowledgedAtEffect = acknowledged.length;
        }
        await eventually(`${JOBS_BETWEEN_FAULTS} jobs acknowledged after the last fault`, async () => acknowledged.length >= acknowledgedAtEffect + JOBS_BETWEEN_FAULTS, WAIT_MILLIS);
      } finally {
        producing = false;
      }
    };
    await Promise.all([produce(), inject()]);
    // The last fault may have been a restart: this client reconnects in the background.
    await eventually('the test\'s client reconnected', () => queue.stats().then(() => true, () => false));

    // Every job the queue ever numbered, acknowledged or not, must end SUCCEEDED.
    try {
      const issued = Number(await admin.get(`leasehold:{${name}}:jobSeq`));
      const ids = Array.from({ length: issued }, (_, i) => `J${i + 1}`);
      expect(ids).toEqual(expect.arrayContaining(acknowledged));
      // Settled by the counts (one O(1) call), not by thousands of views each round.
      const done = async () => {
        const stats = await queue.stats();
        return stats.pending === 0 && stats.running === 0 && stats.succeeded + stats.dead === issued;
      };
      await eventually(`${issued} jobs settled`, done, 180_000, () => queue.stats());
      const closed: PoolStats[] = await Promise.all(fleet.map((child) => child.close()));

      const views = await viewsOf(queue, ids);
      const events = await readLog(admin, log);
      const { overlaps, problems, unseen, lostCompletes } = checkClaims(events, views, { redisRestarted: true });
      expect(problems).toEqual([]);
      expect(await queue.stats()).toMatchObject({ succeeded: issued, pending: 0, running: 0, dead: 0 });
      const restarts = Math.floor(FAULTS / REDIS_EVERY);
      expect(faults).toEqual({ processKills: FAULTS - restarts, redisRestarts: restarts });
      // Each restart costs each thread (concurrency 1: one job, one call in flight) at most one lease
      // whose reply died and one complete that did (or that its pool dropped, replacing the thread).
      expect(unseen + lostCompletes).toBeLessThanOrEqual(2 * faults.redisRestarts * PROCESSES * THREADS_PER_PROCESS);

      const attempts = [...views.values()].reduce((sum, view) => sum + view.attempts, 0);
      const row = {
        [`faults (each after ${JOBS_BETWEEN_FAULTS} more jobs acknowledged)`]: FAULTS,
        'processes × threads': `${PROCESSES} × ${THREADS_PER_PROCESS}`,
        'worker processes SIGKILLed': faults.processKills,
        'redis-server SIGKILLed + restarted': faults.redisRestarts,
        'jobs (acknowledged + unacknowledged submits that took effect)': `${issued} (${acknowledged.length} + ${issued - acknowledged.length})`,
        'submits that failed (outage)': unacknowledged,
        'jobs succeeded': issued,
        'attempts (leases given)': attempts,
        'leases no handler saw / completes lost (replies that died with Redis)': `${unseen} / ${lostCompletes}`,
        'jobs retried': [...views.values()].filter((view) => view.attempts > 1).length,
        'jobs run twice at once (all after an expired lease)': overlaps.length,
        'jobs lost / problems': `0 / ${problems.length}`,
        'pool threads replaced (last fleet)': closed.reduce((sum, stats) => sum + stats.restarts, 0),
      };
      console.info(`soak result:\n${Object.entries(row).map(([key, value]) => `| ${key} | ${value} |`).join('\n')}`);
    } finally {
      admin.disconnect();
      await queue.close();
    }
  });
});
