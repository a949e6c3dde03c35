/**
 * Events across threads on in-memory and journaled queues (queue.events()): real worker threads make
 * the moves (lock-free completes, fails under the lock), a subscriber on this thread and one on
 * another thread each hear every event exactly once, in each job's order, checked job by job. A
 * reader that falls behind the ring is told how many it missed; closing lets go of the thread.
 * Waits are counts and handshakes.
 */
import { Worker } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import { InvalidArgumentError, JobQueue, ManualClock, RetryPolicy, systemClock, type QueueEvents } from '../../dist/index.js';
import { T0, startWorker, terminateAll, waitUntil, type RunningWorker } from '../support/helpers.js';
import { expectEveryJob, expectedTotal, hear, submitMix } from '../support/heard-events.js';
import { openJournal, tempJournal } from '../support/journal-harness.js';

/** A subscriber on a thread of its own (fixtures/event-subscriber-thread.mjs): resolves once it is subscribed. */
async function subscriberThread(queue: JobQueue, expected: number) {
  const worker = new Worker(new URL('../fixtures/event-subscriber-thread.mjs', import.meta.url), { workerData: { handle: queue.share(), expected } });
  threads.push(worker);
  const exited = new Promise<number>((resolve) => worker.once('exit', resolve));
  const messages: unknown[] = [];
  worker.on('message', (message) => messages.push(message));
  worker.once('error', (error) => messages.push({ error }));
  await waitUntil('the thread subscribed', () => messages.length > 0, 20_000);
  expect(messages[0]).toBe('subscribed');
  return {
    worker,
    exited,
    async heard(fence: string): Promise<{ byJob: Record<string, string[]>; missed: unknown[] }> {
      worker.postMessage({ fence });
      await waitUntil('the thread heard everything', () => messages.length > 1, 30_000);
      return messages[1] as { byJob: Record<string, string[]>; missed: unknown[] };
    },
  };
}

const threads: Worker[] = [];
const movers: RunningWorker[] = [];
const subscriptions: QueueEvents[] = [];
afterEach(async () => {
  await Promise.all(subscriptions.splice(0).map((s) => s.close()));
  await terminateAll(movers.splice(0));
  await Promise.all(threads.splice(0).map((t) => t.terminate()));
});

async function moveOnThreads(queue: JobQueue, count: number): Promise<number> {
  const started = await Promise.all(Array.from({ length: count }, (_, index) => startWorker('event-mover-thread.mjs', { handle: queue.share(), index })));
  movers.push(...started);
  const results = (await Promise.all(started.map((w) => w.result))) as Array<{ moves: number }>;
  return results.reduce((sum, r) => sum + r.moves, 0);
}

describe('events across threads (memory)', () => {
  it('reach a subscriber here and one on another thread, each event once, in each job’s order', async () => {
    const queue = new JobQueue(systemClock, new RetryPolicy(2, 0, 0), { capacity: 2_000 });
    const here = queue.events();
    subscriptions.push(here);
    const heard = hear(here);
    const payloads = await submitMix(queue, 300);
    const other = await subscriberThread(queue, expectedTotal(payloads));
    expect(await moveOnThreads(queue, 3)).toBe(100 + 200 + 200);
    const fence = queue.submit('t', 'fence');
    queue.cancel(fence);
    payloads.set(fence, 'fence');
    await waitUntil('every event heard here', () => heard.byJob.has(fence), 30_000);
    expect(heard.total()).toBe(expectedTotal(payloads));
    expectEveryJob(heard, payloads);
    const there = await other.heard(fence);
    expectEveryJob({ byJob: new Map(Object.entries(there.byJob)), missed: there.missed }, payloads);
    // The thread closed its subscription and its queue: nothing holds it, and it ends by itself.
    expect(await other.exited).toBe(0);
  });

  it('tells a reader that fell behind the ring how many it missed, then hands it the rest in order', async () => {
    const queue = new JobQueue(new ManualClock(T0), new RetryPolicy(2, 0, 0), { capacity: 4_000 });
    const events = queue.events();
    subscriptions.push(events);
    const heard = hear(events);
    // 3000 moves in one turn of this thread: its reader cannot run until they are made.
    const ids: string[] = [];
    for (let i = 0; i < 3_000; i++) {
      const id = queue.submit('t', 'x');
      const lease = queue.poll('w', 1_000)!;
      queue.complete(lease.jobId, lease.token);
      ids.push(id);
    }
    await waitUntil('the last job heard', () => heard.byJob.has(ids.at(-1)!));
    expect(heard.missed).toEqual([{ count: 3_000 - 1_024, partition: 0 }]);
    expect([...heard.byJob.keys()]).toEqual(ids.slice(3_000 - 1_024));
    expect(heard.total()).toBe(1_024);
  });

  it('accounts for every event when threads outrun a slow reader: heard once each, whole, or counted missed', async () => {
    const queue = new JobQueue(systemClock, new RetryPolicy(2, 0, 0), { capacity: 8_000 });
    const events = queue.events();
    subscriptions.push(events);
    const payloads = new Map<string, string>();
    for (let i = 0; i < 6_000; i++) payloads.set(queue.submit(`type-${i % 7}`, 'ok'), `type-${i % 7}`);
    const heard = new Map<string, number>();
    let missed = 0;
    let spin = 0;
    let first = true;
    events.on('completed', (event) => {
      // Held at its first event until the movers have made half the moves (a count in shared memory, so that the
      // ring has lapped it for sure), then slow by work, not by time, while they make the rest.
      if (first) {
        first = false;
        while (queue.stats().succeeded < 3_000) spin++;
      }
      for (let k = 0; k < 20_000; k++) spin += k & 1;
      expect(event).toMatchObject({ type: payloads.get(event.jobId), attempt: 1 });
      expect(event.error).toBeUndefined();
      heard.set(event.jobId, (heard.get(event.jobId) ?? 0) + 1);
    });
    events.on('missed', ({ count }) => (missed += count));
    expect(await moveOnThreads(queue, 3)).toBe(6_000);
    await waitUntil('every event heard or counted missed', () => [...heard.values()].reduce((a, b) => a + b, 0) + missed === 6_000, 60_000);
    expect(spin).toBeGreaterThan(0);
    expect([...heard.values()].every((times) => times === 1)).toBe(true);
    expect(missed).toBeGreaterThan(0);
  });

  it('reports an expiry as stalled, failed, retrying; a cancel of a running job with its attempt', async () => {
    const clock = new ManualClock(T0);
    const queue = new JobQueue(clock, new RetryPolicy(2, 0, 0));
    const events = queue.events();
    subscriptions.push(events);
    const heard = hear(events);
    const durations: number[] = [];
    events.on('completed', (event) => durations.push(event.durationMs, event.waitMillis));
    const expired = queue.submit('t', 'x');
    queue.poll('w', 1_000);
    clock.advance(1_500);
    queue.stats();
    const cancelled = queue.submit('t', 'y', { delayMillis: 10_000 });
    const lease = queue.poll('w', 1_000)!;
    expect(lease.jobId).toBe(expired);
    queue.cancel(expired);
    clock.advance(10_300);
    const timed = queue.poll('w', 1_000)!;
    clock.advance(250);
    queue.complete(timed.jobId, timed.token);
    await waitUntil('four moves heard', () => heard.byJob.get(cancelled)?.length === 1);
    expect(heard.byJob.get(expired)).toEqual(['stalled:1:lease expired', 'failed:1:lease expired', 'retrying:1:lease expired', 'cancelled:2']);
    expect(heard.byJob.get(cancelled)).toEqual(['completed:1']);
    // It ran 250 ms, and waited 300 ms past its runAt for its lease.
    expect(durations).toEqual([250, 300]);
  });

  it('writes nothing while no one subscribes, and nothing after the last subscription closed', async () => {
    const queue = new JobQueue(new ManualClock(T0), new RetryPolicy(2, 0, 0));
    const ring = queue.share().buffers.eventRing;
    const headerBytes = ring.byteLength;
    queue.cancel(queue.submit('t', 'x'));
    // Not even grown: the moves read the subscriber count and went on.
    expect(ring.byteLength).toBe(headerBytes);
    const events = queue.events();
    const heard = hear(events);
    expect(ring.byteLength).toBeGreaterThan(headerBytes);
    const first = queue.submit('t', 'x');
    queue.cancel(first);
    await waitUntil('the cancel heard', () => heard.total() === 1);
    const position = events.position;
    await events.close();
    const unheard = queue.submit('t', 'x');
    queue.cancel(unheard);
    // A new subscription from the closed one's position: the ring holds no event of the move made meanwhile.
    const again = queue.events({ after: position });
    subscriptions.push(again);
    const later = hear(again);
    const last = queue.submit('t', 'x');
    queue.cancel(last);
    await waitUntil('the last cancel heard', () => later.total() === 1);
    expect([...later.byJob.keys()]).toEqual([last]);
    expect(heard.total()).toBe(1);
  });

  it('refuses a subscription on a closed queue, and a close ends the queue’s subscriptions', async () => {
    const queue = new JobQueue(new ManualClock(T0), new RetryPolicy(2, 0, 0));
    const ring = queue.share().buffers.eventRing;
    const events = queue.events();
    const other = JobQueue.attach(queue.share());
    const heard = hear(other.events());
    queue.close();
    await events.close();
    // Only `other`'s subscription is counted now: a move is heard there.
    other.cancel(other.submit('t', 'x'));
    await waitUntil('the other subscription heard it', () => heard.total() === 1);
    other.close();
    expect(Atomics.load(new Int32Array(ring), 0)).toBe(0);
    expect(() => queue.events()).toThrow(expect.objectContaining({ code: 'ERR_ILLEGAL_STATE' }));
  });

  it('goes on reading past a listener that throws, which is thrown as an uncaught exception', async () => {
    // In a thread of its own, whose uncaught exceptions it counts (this one's would fail the test run).
    const library = new URL('../../dist/index.js', import.meta.url).href;
    const code = `
      const { parentPort } = require('node:worker_threads');
      import(${JSON.stringify(library)}).then(({ JobQueue, ManualClock, RetryPolicy }) => {
        const uncaught = [];
        process.on('uncaughtException', (error) => uncaught.push(error.message));
        const queue = new JobQueue(new ManualClock(0), new RetryPolicy(2, 0, 0));
        const events = queue.events();
        const heard = [];
        events.on('cancelled', (event) => {
          heard.push(event.jobId);
          if (heard.length === 1) throw new Error('listener bug');
          if (heard.length === 2) setImmediate(() => events.close().then(() => { queue.close(); parentPort.postMessage({ heard, uncaught }); }));
        });
        queue.cancel(queue.submit('t', 'a'));
        queue.cancel(queue.submit('t', 'b'));
      });`;
    const worker = new Worker(code, { eval: true });
    threads.push(worker);
    const result = await new Promise((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
    });
    expect(result).toEqual({ heard: ['J1', 'J2'], uncaught: ['listener bug'] });
  });

  it('refuses bad options and event names', () => {
    const queue = new JobQueue(new ManualClock(T0), new RetryPolicy(2, 0, 0));
    for (const options of [{ after: 'x' }, { after: '1,2' }, { maxLen: -1 }, { nope: true }]) {
      expect(() => queue.events(options as never)).toThrow(InvalidArgumentError);
    }
    const events = queue.events();
    subscriptions.push(events);
    expect(() => events.on('progress' as never, () => undefined)).toThrow(InvalidArgumentError);
    expect(() => events.on('completed', 'no' as never)).toThrow(InvalidArgumentError);
  });
});

describe('events across threads (journal)', () => {
  it('reach a subscriber for moves made on other threads; not durable, but each event once', async () => {
    const queue = openJournal(tempJournal(), systemClock, new RetryPolicy(2, 0, 0));
    const events = queue.events();
    subscriptions.push(events);
    const heard = hear(events);
    const payloads = await submitMix(queue, 60);
    expect(await moveOnThreads(queue, 2)).toBe(20 + 40 + 40);
    const fence = queue.submit('t', 'fence');
    queue.cancel(fence);
    payloads.set(fence, 'fence');
    await waitUntil('every event heard', () => heard.byJob.has(fence), 30_000);
    expect(heard.total()).toBe(expectedTotal(payloads));
    expectEveryJob(heard, payloads);
  });
});
