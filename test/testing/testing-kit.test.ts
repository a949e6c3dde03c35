/**
 * `leasehold/testing` as a user meets it (the built `dist/testing/`): a
 * HistoryLog shared with real worker threads (test/fixtures/testing-thread.mjs),
 * each recording its own calls; the checker and its report on what they
 * recorded: the real queue passes, a planted double lease and a planted
 * out-of-order poll are named as the first violation, a thread killed inside
 * a call leaves that call pending. Also the process path (Redis INCR stamps,
 * merged histories) and every refused input.
 */
import { appendFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  InvalidArgumentError, JobQueue, ManualClock, QueueFullError, RedisJobQueue, RetryPolicy, UnsupportedOperationError,
} from '../../dist/index.js';
import {
  HistoryFile, HistoryLog, checkHistory, doubleLeases, findViolation, mergeHistories, overlappingCalls, redisStamps,
  type Call, type HistorySetup, type LeaseResult,
} from '../../dist/testing/index.js';
import { describeRedis, startRedis, type RedisServer } from '../support/redis-harness.js';
import { expectError, expectInvalid, thrownBy } from '../support/helpers.js';

const START = 1_000_000;
const SETUP: HistorySetup = { start: START, policy: { maxAttempts: 3, base: 0, max: 0 }, capacity: 64 };
const MODES = ['linearizable', 'relaxed-poll'] as const;
const FIXTURE = new URL('../fixtures/testing-thread.mjs', import.meta.url);

function newQueue(): { queue: JobQueue; clock: ManualClock } {
  const clock = new ManualClock(START);
  return { queue: new JobQueue(clock, new RetryPolicy(3, 0, 0), { capacity: 64 }), clock };
}

interface ThreadData {
  role: 'worker' | 'first' | 'second' | 'hang';
  block: number;
  calls?: number;
}

/** Starts a fixture thread on `queue`, recording into block `block` of `log`. */
function thread(queue: JobQueue, clock: ManualClock, log: HistoryLog, mailbox: SharedArrayBuffer, data: ThreadData): { worker: Worker; done: Promise<void> } {
  const worker = new Worker(FIXTURE, { workerData: { ...data, log: log.share(), handle: queue.share(), clockBuffer: clock.buffer, mailboxBuffer: mailbox } });
  const done = new Promise<void>((resolve, reject) => {
    worker.once('message', () => resolve());
    worker.once('error', reject);
  });
  return { worker, done };
}

const mailbox = () => new SharedArrayBuffer(5 * Int32Array.BYTES_PER_ELEMENT);

describe('a history recorded by worker threads through leasehold/testing', () => {
  // relaxed-poll, the mode the shared-memory queue promises (docs/concurrency.md): its lock-free polls need not be linearizable.
  it('of the real queue is accepted as relaxed-poll, with every call from every thread', async () => {
    const { queue, clock } = newQueue();
    const log = HistoryLog.create({ blocks: 4 });
    const main = log.recorder(3).wrap(queue);
    for (let i = 0; i < 30; i++) main.submit('email', String(i), i % 3);
    const box = mailbox();
    const threads = [0, 1, 2].map((block) => thread(queue, clock, log, box, { role: 'worker', block, calls: 12 }));
    await Promise.all(threads.map((t) => t.done));
    const calls = log.calls();
    expect(calls.filter((c) => c.call.op === 'poll')).toHaveLength(36);
    expect(new Set(calls.map((c) => c.thread))).toEqual(new Set([0, 1, 2, 3]));
    expect(findViolation(calls, SETUP, 'relaxed-poll')?.text).toBeUndefined();
    expect(doubleLeases(calls)).toEqual([]);
    queue.close();
  });

  it('names a planted double lease as the first violation, in both modes', async () => {
    const { queue, clock } = newQueue();
    const log = HistoryLog.create({ blocks: 3 });
    log.recorder(2).wrap(queue).submit('email', 'a');
    const box = mailbox();
    const threads = [thread(queue, clock, log, box, { role: 'first', block: 0 }), thread(queue, clock, log, box, { role: 'second', block: 1 })];
    await Promise.all(threads.map((t) => t.done));
    const calls = log.calls();
    expect(doubleLeases(calls)).toEqual([expect.stringContaining('J1 attempt 1 leased twice')]);
    for (const mode of MODES) {
      const violation = findViolation(calls, SETUP, mode);
      expect(violation, mode).toBeDefined();
      expect(violation!.call.call.op).toBe('poll');
      expect((violation!.call.result as { value: LeaseResult }).value.jobId).toBe('J1');
      expect(violation!.reason).toMatch(mode === 'linearizable' ? /the model returns undefined/ : /J1 is not a ready job here/);
      expect(violation!.text).toContain('first violation');
      expect(violation!.around).toContain(violation!.call);
    }
    queue.close();
  });

  it('names a planted out-of-order poll: one that leased J1 while the better J2 was ready for its whole call', () => {
    const { queue } = newQueue();
    const log = HistoryLog.create({ blocks: 1 });
    const recorder = log.recorder(0);
    const recorded = recorder.wrap(queue);
    recorded.submit('email', 'low', 0);
    recorded.submit('email', 'high', 5);
    // The planted bug: take the best job, keep the second best, give the best back.
    const skipped = recorder.call({ op: 'poll', workerId: 'w', leaseMillis: 1_000 }, () => {
      const best = queue.poll('w', 1_000)!;
      const second = queue.poll('w', 1_000)!;
      queue.fail(best.jobId, best.token);
      return second;
    });
    expect(skipped.jobId).toBe('J1');
    const calls = log.calls();
    for (const mode of MODES) {
      const violation = findViolation(calls, SETUP, mode);
      expect(violation?.call.call.op, mode).toBe('poll');
      expect(violation!.reason).toMatch(mode === 'linearizable' ? /the model leases .*J2/ : /better ready job J2 stayed ready/);
    }
    expect(doubleLeases(calls), 'not a double lease: only the checker sees this one').toEqual([]);
    queue.close();
  });

  it('keeps the call of a thread killed inside it as pending, and the checker lets it take effect', async () => {
    const { queue, clock } = newQueue();
    const log = HistoryLog.create({ blocks: 2 });
    const main = log.recorder(1);
    const recorded = main.wrap(queue);
    recorded.submit('email', 'a');
    const box = mailbox();
    const hang = thread(queue, clock, log, box, { role: 'hang', block: 0 });
    // Waits for the thread's lease (a handshake, not a sleep), then kills it inside its call.
    const word = new Int32Array(box);
    await Atomics.waitAsync(word, 0, 0).value;
    await hang.worker.terminate();
    main.advance(clock, 1_000);
    const retry = recorded.poll('w-main', 1_000);
    expect(retry?.attempt, 'the dead thread took attempt 1').toBe(2);
    const calls = log.calls();
    const pending = calls.filter((c) => c.pending === true);
    expect(pending.map((c) => [c.thread, c.call.op])).toEqual([[0, 'poll']]);
    for (const mode of MODES) {
      expect(checkHistory(calls, SETUP, mode).ok, mode).toBe(true);
      // Without the pending call nothing explains attempt 2: the record of the dead thread's call is what makes the history fit.
      expect(checkHistory(calls.filter((c) => c.pending !== true), SETUP, mode).ok, mode).toBe(false);
    }
    queue.close();
  });
});

describe('stamps from Redis, for recorders in several processes', () => {
  // (Each client below stands for a process: its own connection, its own log; only the INCR key is shared.)
  describeRedis('with a real Redis server', () => {
    let redis: RedisServer;
    beforeAll(async () => {
      redis = await startRedis();
    });
    afterAll(async () => {
      await redis.stop();
    });

    it('orders the calls of separate clients so that the merged history checks', async () => {
      const clock = new ManualClock(START);
      const policy = new RetryPolicy(3, 0, 0);
      const queues = await Promise.all([0, 1].map(() => RedisJobQueue.connect({ redis: redis.url, name: 'kit', policy, time: clock, capacity: 64 })));
      const stampClients = [new Redis(redis.url), new Redis(redis.url)];
      try {
        const parts = await Promise.all(queues.map(async (queue, i) => {
          const log = HistoryLog.create({ blocks: 1 });
          const recorded = log.recorder(0, redisStamps(stampClients[i]!, 'kit:stamps')).wrap(queue);
          for (let n = 0; n < 6; n++) {
            await recorded.submit('email', `${i}-${n}`);
            const lease = await recorded.poll(`w${i}`, 1_000);
            if (lease !== undefined) await recorded.complete(lease.jobId, lease.token);
          }
          return log.calls();
        }));
        const merged = mergeHistories(parts);
        expect(merged).toHaveLength(36);
        expect(new Set(merged.map((c) => c.thread))).toEqual(new Set([0, 1]));
        expect(overlappingCalls(merged), 'the two clients ran at once').toBeGreaterThan(0);
        expect(findViolation(merged, SETUP, 'linearizable')).toBeUndefined();
      } finally {
        await Promise.all(queues.map((q) => q.close()));
        stampClients.forEach((c) => c.disconnect());
      }
    });
  });
});

describe('a history file, for a recorder in a process of its own', () => {
  it('reads back every finished record, a call without its response as pending, and skips a cut-off last line', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'leasehold-history-file-'));
    try {
      const path = join(dir, 'calls.jsonl');
      let stamp = 0;
      const file = HistoryFile.open(path, 4, { sync: true, next: () => stamp++ });
      const { queue } = newQueue();
      const recorded = file.recorder.wrap(queue);
      recorded.submit('email', 'a');
      const lease = recorded.poll('w', 1_000)!;
      // The process dies inside this complete: its invocation is written, its response never.
      await thrownBy(() => file.recorder.call({ op: 'complete', jobId: lease.jobId, token: lease.token }, () => {
        throw new Error('killed');
      }));
      file.close();
      appendFileSync(path, '{"k":"r","s":2,"t":9'); // cut off mid-write
      const calls = HistoryFile.read(path, 4);
      expect(calls.map((c) => [c.thread, c.call.op, c.pending === true])).toEqual([[4, 'submit', false], [4, 'poll', false], [4, 'complete', false]]);
      expect(calls[2]!.result).toMatchObject({ ok: false, code: 'UNEXPECTED' });
      writeFileSync(path, `${readFileSync(path, 'utf8').split('\n').slice(0, 5).join('\n')}\n`);
      expect(HistoryFile.read(path, 4).map((c) => c.pending === true)).toEqual([false, false, true]);
      queue.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('leasehold/testing refuses', () => {
  it('a log of no blocks, of a fraction of a block, or of blocks too small', async () => {
    await expectInvalid(() => HistoryLog.create({ blocks: 0 }));
    await expectInvalid(() => HistoryLog.create({ blocks: 1.5 }));
    await expectInvalid(() => HistoryLog.create({ blocks: 1, bytesPerBlock: 16 }));
  });

  it('a handle that is not a log\'s, and a block the log does not have', async () => {
    await expectInvalid(() => HistoryLog.attach({ kind: 'x' } as never));
    await expectInvalid(() => HistoryLog.attach(null as never));
    await expectInvalid(() => HistoryLog.create({ blocks: 2 }).recorder(2));
  });

  it('to read a log that ran out of room, with QueueFullError, while the calls themselves went on', async () => {
    const log = HistoryLog.create({ blocks: 1, bytesPerBlock: 1024 });
    const recorder = log.recorder(0);
    let made = 0;
    for (let i = 0; i < 50; i++) recorder.call({ op: 'stats' }, () => made++);
    expect(made).toBe(50);
    await expectError(() => log.calls(), QueueFullError, 'ERR_QUEUE_FULL');
    log.clear();
    expect(log.calls()).toEqual([]);
  });

  it('a sync call on async stamps, with UnsupportedOperationError', async () => {
    const recorder = HistoryLog.create({ blocks: 1 }).recorder(0, redisStamps({ incr: async () => 1 }, 'k'));
    await expectError(() => recorder.call({ op: 'stats' }, () => 0), UnsupportedOperationError, 'ERR_UNSUPPORTED');
  });

  it('a recorded submit with options the model cannot replay, before the call is made', async () => {
    const { queue } = newQueue();
    const recorded = HistoryLog.create({ blocks: 1 }).recorder(0).wrap(queue);
    await expectError(() => recorded.submit('email', 'a', { key: 'k' }), UnsupportedOperationError, 'ERR_UNSUPPORTED');
    expect(queue.stats().pending).toBe(0);
    expect(recorded.submit('email', 'a', { priority: 2, runAt: START })).toBe('J1');
    queue.close();
  });

  it('to merge histories whose stamps repeat (not stamped from one shared clock)', async () => {
    const part = (): Call[] => [{ thread: 0, inv: 0, resp: 1, call: { op: 'stats' }, result: { ok: true, value: undefined } }];
    const error = await expectInvalid(() => mergeHistories([part(), part()]));
    expect(error).toBeInstanceOf(InvalidArgumentError);
    expect(error.message).toMatch(/stamp 0 occurs twice/);
  });
});
