/**
 * Crash loops end: a job whose handler takes its whole process down
 * (`process.kill(process.pid, 'SIGKILL')`, as an OOM kill or a native crash
 * would) is run by a real child process, which dies; the process is started
 * again, and again, until the job is DEAD. The attempts its processes died in
 * count: after maxAttempts of them the job is dead-lettered, not retried forever.
 *
 * On a journal the pool makes each lease durable before the handler runs, and
 * a reopen counts the attempt a RUNNING job died in (lastError LEASE_LOST); on
 * Redis the lease lives in Redis, and its expiry counts the attempt; as the
 * dead process's liveness key lapsed first, its lastError is PROCESS_GONE.
 */
import { describe, expect, it } from 'vitest';
import { LEASE_LOST, PROCESS_GONE, RedisJobQueue, RetryPolicy, systemClock, type JobView } from '../../dist/index.js';
import { waitUntil, withTimeout } from '../support/helpers.js';
import { closeJournal, openJournal, tempJournal } from '../support/journal-harness.js';
import { poolProcess, scratch, trackQueue, type Exit } from '../support/pool-harness.js';
import { describeRedis, fileRedis } from '../support/redis-harness.js';

const MAX_ATTEMPTS = 2;
const POLICY = [MAX_ATTEMPTS, 0, 0] as const;
/** More runs than maxAttempts: a loop that does not end shows as a job still not DEAD after them. */
const MOST_RUNS = MAX_ATTEMPTS + 2;

describe('a job that kills its process, on a journal', { timeout: 60_000 }, () => {
  it('is DEAD after maxAttempts process deaths, with lastError LEASE_LOST, and the job before it on the same thread is SUCCEEDED', async () => {
    const s = scratch();
    const path = tempJournal();
    let queue = openJournal(path, systemClock, new RetryPolicy(...POLICY));
    // One thread: it completes `before`, and the complete leases `killer` (completeAndPoll); the next run polls it.
    const before = queue.submit('noop', s.payload({ n: 1 }), 10);
    const killer = queue.submit('killProcess', s.payload(), 0);
    closeJournal(queue);

    const exits: Exit[] = [];
    let view: JobView | undefined;
    for (let run = 0; run < MOST_RUNS && view?.status !== 'DEAD'; run++) {
      const child = poolProcess({ queue: { backend: 'journal', path }, policy: POLICY, pool: { threads: 1, leaseMillis: 30_000 } });
      exits.push(await withTimeout(child.exited, 20_000, `pool process run ${run + 1}`));
      queue = openJournal(path, systemClock, new RetryPolicy(...POLICY));
      view = queue.view(killer);
      closeJournal(queue);
    }

    expect(exits).toEqual(Array.from({ length: MAX_ATTEMPTS }, () => ({ code: null, signal: 'SIGKILL' })));
    expect(view).toMatchObject({ status: 'DEAD', attempts: MAX_ATTEMPTS, lastError: LEASE_LOST });
    expect(s.events('start', killer).map((l) => l.attempt)).toEqual([1, 2]);
    queue = openJournal(path, systemClock, new RetryPolicy(...POLICY));
    expect(queue.view(before)).toMatchObject({ status: 'SUCCEEDED', attempts: 1 });
    expect(queue.deadLetters().map((v) => v.id)).toEqual([killer]);
  });
});

/**
 * Above the liveness key's 1 s TTL with room to spare: a lease last extended a
 * third of a lease before the kill still outlives the dead process's key.
 */
const LEASE = 2_000;

describeRedis('a job that kills its process, on Redis', () => {
  it('is DEAD after maxAttempts process deaths: each lease, never renewed, expires as a failed attempt whose lastError says its process died', { timeout: 60_000 }, async () => {
    const server = await fileRedis();
    const s = scratch();
    const name = `crash-loop-${process.pid}`;
    const queue = trackQueue(await RedisJobQueue.connect({ redis: server.url, name, policy: new RetryPolicy(...POLICY), time: systemClock }));
    const killer = await queue.submit('killProcess', s.payload());

    const exits: Exit[] = [];
    let view: JobView | undefined;
    for (let run = 0; run < MOST_RUNS && view?.status !== 'DEAD'; run++) {
      const child = poolProcess({ queue: { backend: 'redis', url: server.url, name }, policy: POLICY, pool: { threads: 1, leaseMillis: LEASE } });
      exits.push(await withTimeout(child.exited, 20_000, `pool process run ${run + 1}`));
      // No one holds the lease any more: it ends at its leaseUntil, as a failed attempt.
      await waitUntil('the dead process lost its lease', async () => (await queue.view(killer)).status !== 'RUNNING');
      view = await queue.view(killer);
    }

    expect(exits).toEqual(Array.from({ length: MAX_ATTEMPTS }, () => ({ code: null, signal: 'SIGKILL' })));
    expect(view).toMatchObject({ status: 'DEAD', attempts: MAX_ATTEMPTS, lastError: PROCESS_GONE });
    expect(s.events('start', killer).map((l) => l.attempt)).toEqual([1, 2]);
    expect((await queue.deadLetters()).map((v) => v.id)).toEqual([killer]);
  });
});
