/**
 * A queue nobody else can reach (made by `new JobQueue`, never shared) is
 * exclusive: its moves skip the protocol that orders them against other
 * threads' (no intents, no CALL windows, one clock reading per call). Its
 * `share()` ends that between two calls; from then on real threads race on
 * it. These tests check that nothing the exclusive queue did is lost,
 * repeated or broken by the switch: every job, lease, token and count.
 */
import { describe, expect, it } from 'vitest';
import { JobQueue, JobQueueError, ManualClock, RetryPolicy, type Lease } from '../../dist/index.js';
import { SharedClock, mustPollSync, prng, startWorker, terminateAll, testSeed, withTimeout, type RunningWorker } from '../support/helpers.js';

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

  describe('keeps short payloads as strings until share()', () => {
    /** More jobs than the queue keeps as strings (16,384): the rest are encoded at submit. */
    const MANY = 20_000;
    /** Payloads up to one chunk's 64 bytes, ASCII and multi-byte, and some longer than a chunk. */
    const payloadOf = (i: number): string => {
      const tag = String(i);
      if (i % 5 === 1) return `é${tag}`.padEnd(32, 'é'); // 2-byte characters: 63 or 64 bytes
      if (i % 5 === 2) return `${tag}🙂`; // a 4-byte character
      if (i % 5 === 3) return tag.padEnd(64, 'x'); // exactly one chunk
      if (i % 5 === 4) return tag.padEnd(65, 'y'); // two chunks: never kept
      return tag;
    };

    it('hands every payload to an instance attached after share(), kept or encoded', () => {
      const clock = new ManualClock(START);
      const queue = new JobQueue(clock, new RetryPolicy(3, 0, 0), { capacity: MANY });
      const ids = Array.from({ length: MANY }, (_, i) => queue.submit('t', payloadOf(i)));
      const other = JobQueue.attach(queue.share(), clock);
      ids.forEach((id, i) => expect(other.view(id).payload, id).toBe(payloadOf(i)));
      for (let i = 0; i < MANY; i++) {
        const lease = other.poll('thread', 1_000)!;
        expect(lease.payload, lease.jobId).toBe(payloadOf(Number(lease.jobId.slice(1)) - 1));
        other.complete(lease.jobId, lease.token);
      }
      other.close();
      queue.close();
    });

    it("reads an error text stored in a chunk a kept payload was evicted from as that text, not the payload", () => {
      const clock = new ManualClock(START);
      const queue = new JobQueue(clock, new RetryPolicy(3, 0, 0), { capacity: 2 });
      const first = queue.submit('t', 'kept payload');
      const second = queue.submit('t', '');
      const lease = mustPollSync(queue, first);
      queue.complete(first, lease.token);
      // The queue is full: this submit evicts the finished job, whose chunk goes back to the free list.
      queue.submit('t', '');
      expect(() => queue.view(first)).toThrow(expect.objectContaining({ code: 'ERR_JOB_NOT_FOUND' }));
      // The failure's error text takes that chunk, encoded.
      queue.fail(second, mustPollSync(queue, second).token, 'boom');
      expect(queue.view(second).lastError).toBe('boom');
      expect(JobQueue.attach(queue.share(), clock).view(second).lastError).toBe('boom');
      queue.close();
    });

    it('keeps every payload through the rebuild of a clock that went back', () => {
      const clock = new ManualClock(START);
      const queue = new JobQueue(clock, new RetryPolicy(3, 0, 0), { capacity: 100 });
      const ids = Array.from({ length: 100 }, (_, i) => queue.submit('t', payloadOf(i), { priority: i % 3 }));
      clock.set(START + 60_000);
      // Finished jobs, whose chunks stay taken until evicted, among pending ones.
      for (let i = 0; i < 30; i++) {
        const lease = queue.poll('alone', 1_000)!;
        queue.complete(lease.jobId, lease.token);
      }
      // Back, but not before the jobs' runAt: they stay ready.
      clock.set(START + 30_000);
      const leased = new Set<string>();
      for (let lease = queue.poll('alone', 1_000); lease !== undefined; lease = queue.poll('alone', 1_000)) {
        expect(lease.payload, lease.jobId).toBe(payloadOf(ids.indexOf(lease.jobId)));
        leased.add(lease.jobId);
      }
      expect(leased.size).toBe(70);
      ids.forEach((id, i) => expect(queue.view(id).payload, id).toBe(payloadOf(i)));
      queue.close();
    });

    it('matches a queue shared from the start, call for call, job for job, through evictions, retries, a clock that goes back and share()', () => {
      const random = prng(testSeed('kept strings, differential'));
      const int = (n: number) => Math.floor(random() * n);
      const CHARS = ['a', 'é', '€', '🙂', '0', ' '];
      const text = (most: number) => Array.from({ length: int(most) }, () => CHARS[int(CHARS.length)]).join('');
      for (let round = 0; round < 4; round++) {
        const clock = new ManualClock(START);
        const capacity = 8 + int(24);
        const kept = new JobQueue(clock, new RetryPolicy(3, 100, 1_000), { capacity });
        const encoded = new JobQueue(clock, new RetryPolicy(3, 100, 1_000), { capacity });
        const readers = [kept, JobQueue.attach(encoded.share(), clock)];
        const leases: Lease[][] = [[], []];
        /** The same call on both queues: the same outcome, a value or an error's code. */
        const onBoth = (call: (queue: JobQueue, leased: Lease[]) => unknown) => {
          const outcomes = [kept, encoded].map((queue, i) => {
            try {
              return { value: call(queue, leases[i]!) };
            } catch (error) {
              if (!(error instanceof JobQueueError)) throw error;
              return { code: error.code };
            }
          });
          expect(outcomes[0]).toEqual(outcomes[1]);
        };
        const sharedAt = 1_000 + int(1_000);
        for (let step = 0; step < 2_000; step++) {
          const dice = random();
          if (dice < 0.3) {
            const [type, payload, priority, key] = [`t${int(2)}`, text(40), int(3), random() < 0.1 ? `k${int(4)}` : undefined];
            onBoth((queue) => queue.submit(type, payload, { priority, ...(key === undefined ? {} : { key }) }));
          } else if (dice < 0.35) {
            const jobs = Array.from({ length: int(4) }, () => ({ type: 't', payload: text(70) }));
            onBoth((queue) => queue.submitMany(jobs));
          } else if (dice < 0.55) {
            const leaseMillis = 1_000 + int(3_000);
            onBoth((queue, leased) => {
              const lease = queue.poll('w', leaseMillis);
              if (lease !== undefined) leased.push(lease);
              return lease === undefined ? undefined : { ...lease, token: 0 };
            });
          } else if (dice < 0.75) {
            const [at, result] = [int(6), random() < 0.3 ? { r: text(30) } : undefined];
            onBoth((queue, leased) => {
              const [lease] = leased.splice(at, 1);
              if (lease !== undefined) queue.complete(lease.jobId, lease.token, result);
            });
          } else if (dice < 0.85) {
            const [at, error, permanent] = [int(6), text(90), random() < 0.2];
            onBoth((queue, leased) => {
              const [lease] = leased.splice(at, 1);
              if (lease !== undefined) queue.fail(lease.jobId, lease.token, error, { permanent });
            });
          } else if (dice < 0.88) {
            const jobId = `J${1 + int(step + 1)}`;
            onBoth((queue) => queue.cancel(jobId));
          } else if (dice < 0.97) {
            clock.advance(int(3_000));
          } else {
            clock.set(clock.now() - int(2_000));
          }
          if (step === sharedAt) readers[0] = JobQueue.attach(kept.share(), clock);
          const [seenKept, seenEncoded] = readers.map((reader) => reader.jobs({ limit: capacity }).jobs);
          expect(seenKept, `step ${step}`).toEqual(seenEncoded);
        }
        for (const queue of [...readers, kept, encoded]) queue.close();
      }
    });
  });
});
