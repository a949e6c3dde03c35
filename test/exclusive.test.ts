/**
 * A queue nobody else can reach (made by `new JobQueue`, never shared) is
 * exclusive: its moves skip the protocol that orders them against other
 * threads' (no intents, no CALL windows, one clock reading per call). Its
 * `share()` ends that between two calls; from then on real threads race on
 * it. These tests check that nothing the exclusive queue did is lost,
 * repeated or broken by the switch: every job, lease, token and count.
 */
import { describe, expect, it } from 'vitest';
import { JobQueue, RetryPolicy } from '../dist/index.js';
import { SharedClock, startWorker, terminateAll, withTimeout, type RunningWorker } from './helpers.js';

const START = 1_767_225_600_000;
const JOBS = 3_000;
const THREADS = 3;

describe('an exclusive queue, then shared', () => {
  it('loses, repeats and re-leases nothing across share(): its held leases complete after it, and threads drain the rest exactly once', async () => {
    const clock = new SharedClock(START);
    const queue = new JobQueue(clock, new RetryPolicy(3, 0, 0), { capacity: 4_000 });
    const ids: string[] = [];
    for (let i = 1; i <= JOBS; i++) {
      // Every priority and a delayed job now and then, so that rings and the delayed heap hold jobs at the switch.
      const delayed = i % 11 === 0;
      ids.push(queue.submit('t', `p${i}`, { priority: i % 7, ...(delayed ? { delayMillis: 500 } : {}) }));
    }
    expect(ids).toEqual(Array.from({ length: JOBS }, (_, i) => `J${i + 1}`));
    // Alone: leases held across the switch, completes, failures (retried at once), cancels.
    const held = Array.from({ length: 300 }, () => queue.poll('alone', 60_000)!);
    const tokens = new Set(held.map((lease) => lease.token));
    expect(tokens.size).toBe(held.length);
    const done: number[] = [];
    for (const lease of held.slice(0, 100)) {
      queue.complete(lease.jobId, lease.token);
      done.push(Number(lease.jobId.slice(1)));
    }
    for (const lease of held.slice(100, 150)) queue.fail(lease.jobId, lease.token, 'again');
    const cancelled = new Set<number>();
    for (let n = JOBS; cancelled.size < 20; n--) {
      if (queue.view(`J${n}`).status !== 'PENDING') continue;
      queue.cancel(`J${n}`);
      cancelled.add(n);
    }
    const before = queue.stats();
    expect(before).toMatchObject({ running: 150, succeeded: 100, cancelled: 20, pending: JOBS - 270 });

    const handle = queue.share();
    // The delayed jobs come due as the threads start.
    clock.advance(1_000);
    const gate = new SharedArrayBuffer(4);
    const workers: RunningWorker[] = [];
    try {
      for (let t = 0; t < THREADS; t++) {
        workers.push(await startWorker('exclusive-drainer.mjs', { handle, clock: clock.buffer, gate, name: `w${t}` }));
      }
      // All threads attached: they start together, and race this thread's completes.
      const gateWord = new Int32Array(gate);
      Atomics.store(gateWord, 0, 1);
      Atomics.notify(gateWord, 0);
      // The leases taken alone are still valid, and only their holder's tokens complete them.
      for (const lease of held.slice(150)) {
        queue.complete(lease.jobId, lease.token);
        done.push(Number(lease.jobId.slice(1)));
      }
      const reports = (await withTimeout(Promise.all(workers.map((w) => w.result)), 60_000, 'the drainers')) as Array<Array<[number, number, number]>>;
      for (const report of reports) {
        for (const [n, token, contentOk] of report) {
          expect(contentOk, `J${n}'s payload as leased after the switch`).toBe(1);
          expect(tokens.has(token), `token ${token} handed out twice`).toBe(false);
          tokens.add(token);
          done.push(n);
        }
      }
    } finally {
      await terminateAll(workers);
    }
    // Every job not cancelled completed exactly once, the 50 failed ones on their retry.
    const expected = Array.from({ length: JOBS }, (_, i) => i + 1).filter((n) => !cancelled.has(n));
    expect(done.slice().sort((a, b) => a - b)).toEqual(expected);
    expect(queue.stats()).toMatchObject({ pending: 0, ready: 0, delayed: 0, running: 0, succeeded: JOBS - 20, dead: 0, cancelled: 20 });
    for (const lease of held.slice(100, 150)) expect(queue.view(lease.jobId)).toMatchObject({ status: 'SUCCEEDED', attempts: 2, lastError: 'again' });
    queue.close();
  });

  it("refuses a lease taken alone once a thread has re-leased its job after share(): the old holder is a zombie", () => {
    const clock = new SharedClock(START);
    const queue = new JobQueue(clock, new RetryPolicy(3, 0, 0));
    const id = queue.submit('t', 'p');
    const old = queue.poll('alone', 100)!;
    const other = JobQueue.attach(queue.share(), clock);
    clock.advance(100);
    const again = other.poll('thread', 100)!;
    expect(again).toMatchObject({ jobId: id, attempt: 2 });
    expect(again.token).toBeGreaterThan(old.token);
    expect(() => queue.complete(id, old.token)).toThrow(expect.objectContaining({ code: 'ERR_STALE_LEASE' }));
    other.complete(id, again.token);
    expect(queue.view(id)).toMatchObject({ status: 'SUCCEEDED', attempts: 2, lastError: 'lease expired' });
    other.close();
    queue.close();
  });
});
