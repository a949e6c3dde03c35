/**
 * The wake-up a pool thread sleeps on when the queue is empty
 * (`waitForWork`): new work from another thread or client — a submit, a retry
 * after a failed attempt, a retryDead, a release — wakes it, and nothing else
 * does. Handshakes, not timing windows: the waiting side says when it has
 * polled; a missed wake-up shows as a wait that never resolves (the test's
 * bound), a spurious one as `true` where no work came.
 */
import { Worker } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import { JobQueue, RedisJobQueue, RetryPolicy, systemClock } from '../../dist/index.js';
import { withTimeout } from '../support/helpers.js';
import { trackQueue } from '../support/pool-harness.js';
import { describeRedis, fileRedis } from '../support/redis-harness.js';

/** Far longer than any test here may take: only a wake-up ends such a wait in time. */
const FOREVER = 120_000;
/** How long the waits that must not be woken sleep. */
const SHORT = 300;

interface Idle {
  /** Polls (finding nothing) and then waits; resolves once the poll is done, with the wait's outcome to come. */
  pollThenWait(wait: number, gated?: boolean, complete?: boolean): Promise<{ woke: Promise<{ woke: boolean; next: string | null }>; go(): void }>;
}

const workers: Worker[] = [];
afterEach(async () => {
  await Promise.all(workers.splice(0).map((worker) => worker.terminate()));
});

function idleWorker(queue: JobQueue): Idle {
  const worker = new Worker(new URL('../fixtures/pool-wakeup-worker.mjs', import.meta.url), { workerData: { handle: queue.share() } });
  workers.push(worker);
  const next = () => new Promise<Record<string, unknown>>((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  return {
    async pollThenWait(wait, gated = false, complete = false) {
      const polled = next();
      worker.postMessage({ wait, go: gated, complete });
      expect(await withTimeout(polled, 10_000, 'the worker polled')).toEqual({ polled: true, found: null });
      return { woke: next() as Promise<{ woke: boolean; next: string | null }>, go: () => worker.postMessage('go') };
    },
  };
}

describe('waitForWork across threads (shared memory)', { timeout: 20_000 }, () => {
  const queueOf = () => trackQueue(new JobQueue(systemClock, new RetryPolicy(3, 50_000, 50_000)));

  it('resolves true after a submit from another thread, and the job is there', async () => {
    const queue = queueOf();
    const { woke } = await idleWorker(queue).pollThenWait(FOREVER);
    const id = queue.submit('t', 'x');
    expect(await withTimeout(woke, 10_000, 'the wake-up')).toEqual({ woke: true, next: id });
  });

  it('resolves true at once when the submit came between the poll and the wait', async () => {
    const queue = queueOf();
    const { woke, go } = await idleWorker(queue).pollThenWait(FOREVER, true);
    const id = queue.submit('t', 'x');
    go();
    expect(await withTimeout(woke, 10_000, 'the wake-up')).toEqual({ woke: true, next: id });
  });

  // A pool thread whose job's completeAndPoll found nothing blocks without polling again: that poll's look at the signal is its last.
  it('resolves true at once when the submit came between a completeAndPoll that found nothing and the wait', async () => {
    const queue = queueOf();
    queue.submit('t', 'done by the worker');
    const { woke, go } = await idleWorker(queue).pollThenWait(FOREVER, true, true);
    const id = queue.submit('t', 'x');
    go();
    expect(await withTimeout(woke, 10_000, 'the wake-up')).toEqual({ woke: true, next: id });
  });

  it('stays asleep until its timeout, resolving false, while calls that bring no new work run in another thread', async () => {
    const queue = queueOf();
    const running = queue.submit('t', 'held');
    const lease = queue.poll('main', 60_000)!;
    const delayed = queue.submit('t', 'later', 0, Date.now() + 60_000);
    const { woke } = await idleWorker(queue).pollThenWait(SHORT);
    queue.extend(running, lease.token, 60_000);
    queue.view(running);
    queue.stats();
    queue.deadLetters();
    queue.cancel(delayed);
    queue.complete(running, lease.token);
    expect(await withTimeout(woke, 10_000, 'the wait')).toEqual({ woke: false, next: null });
  });

  it('resolves false at its timeout when nothing at all happens', async () => {
    const queue = queueOf();
    const { woke } = await idleWorker(queue).pollThenWait(SHORT);
    expect(await withTimeout(woke, 10_000, 'the wait')).toEqual({ woke: false, next: null });
  });

  it.each([
    ['a failed attempt (its retry)', (queue: JobQueue, id: string, token: number) => queue.fail(id, token, 'boom')],
    ['a release', (queue: JobQueue, id: string, token: number) => queue.release(id, token)],
    ['a retryDead', (queue: JobQueue, id: string, token: number) => {
      queue.fail(id, token, 'boom', { permanent: true });
      queue.retryDead(id);
    }],
  ])('resolves true after %s in another thread', async (_, move) => {
    const queue = queueOf();
    const id = queue.submit('t', 'x');
    const lease = queue.poll('main', 60_000)!;
    const { woke } = await idleWorker(queue).pollThenWait(FOREVER);
    move(queue, id, lease.token);
    expect((await withTimeout(woke, 10_000, 'the wake-up')).woke).toBe(true);
  });
});

describeRedis('waitForWork across clients (Redis)', () => {
  let names = 0;
  async function clients(): Promise<[RedisJobQueue, RedisJobQueue]> {
    const server = await fileRedis();
    const name = `wakeup-${process.pid}-${++names}`;
    const open = async () => trackQueue(await RedisJobQueue.connect({ redis: server.url, name, policy: new RetryPolicy(3, 50_000, 50_000), time: systemClock }));
    return [await open(), await open()];
  }

  it.each([
    ['a submit', async (other: RedisJobQueue) => {
      await other.submit('t', 'x');
    }],
    ['a failed attempt (its retry)', async (other: RedisJobQueue, id: string, token: number) => other.fail(id, token, 'boom')],
    ['a release', async (other: RedisJobQueue, id: string, token: number) => other.release(id, token)],
  ])('resolves true after %s by another client', { timeout: 20_000 }, async (_, move) => {
    const [worker, other] = await clients();
    const id = await other.submit('t', 'held');
    const lease = (await other.poll('main', 60_000))!;
    expect(await worker.poll('idle', 60_000)).toBeUndefined();
    const woke = worker.waitForWork(FOREVER);
    await move(other, id, lease.token);
    expect(await withTimeout(woke, 10_000, 'the wake-up')).toBe(true);
  });

  it('stays asleep until its timeout, resolving false, while calls that bring no new work run on another client', { timeout: 20_000 }, async () => {
    const [worker, other] = await clients();
    const id = await other.submit('t', 'held');
    const lease = (await other.poll('main', 60_000))!;
    expect(await worker.poll('idle', 60_000)).toBeUndefined();
    const woke = worker.waitForWork(SHORT);
    await other.extend(id, lease.token, 60_000);
    await other.stats();
    await other.complete(id, lease.token);
    expect(await withTimeout(woke, 10_000, 'the wait')).toBe(false);
  });
});
