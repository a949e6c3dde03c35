/**
 * Events across processes on Redis (queue.events()): two processes make the moves, this one
 * subscribes, and every job's events arrive exactly once, in the job's order, checked job by
 * job. A reader that falls behind the stream's bound is told how many it missed; a reader whose
 * connection is killed goes on from where it was; closing leaves no connection behind; a queue
 * no one watches writes no stream. Waits are counts and handshakes.
 */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { afterEach, expect, it } from 'vitest';
import {
  InvalidArgumentError, ManualClock, PartitionedRedisQueue, RedisJobQueue, RetryPolicy, systemClock,
} from '../../dist/index.js';
import { T0, waitUntil } from '../support/helpers.js';
import { expectEveryJob, expectedTotal, hear, submitMix } from '../support/heard-events.js';
import { describeRedis, fileRedis } from '../support/redis-harness.js';

const MOVER = fileURLToPath(new URL('../fixtures/redis-event-mover.mjs', import.meta.url));

function mover(handle: unknown): Promise<{ moves: number }> {
  const child = spawn(process.execPath, [MOVER, JSON.stringify(handle)], { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    createInterface({ input: child.stdout }).on('line', (line) => {
      const message = JSON.parse(line) as { ev: string; moves: number };
      if (message.ev === 'done') resolve(message);
    });
    child.once('exit', (code) => (code === 0 ? undefined : reject(new Error(`mover exited with ${code}`))));
  });
}

const closers: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).reverse().map((c) => c.close()));
});

let names = 0;
async function open(clock: ManualClock | typeof systemClock = systemClock): Promise<RedisJobQueue> {
  const { url } = await fileRedis();
  const queue = await RedisJobQueue.connect({ redis: url, name: `events-${process.pid}-${++names}`, policy: new RetryPolicy(2, 0, 0), time: clock });
  closers.push(queue);
  return queue;
}

async function admin(): Promise<Redis> {
  const redis = new Redis((await fileRedis()).url);
  closers.push({ close: async () => void redis.disconnect() });
  return redis;
}

/** Submits `count` jobs, payloads ok, once, never in turn; returns each id's payload. */

describeRedis('events across processes [redis]', () => {
  it('hears every move two other processes make, once each, in each job’s order', async () => {
    const queue = await open();
    const heard = hear(closing(await queue.events()));
    const payloads = await submitMix(queue, 150);
    const done = await Promise.all([mover(queue.share()), mover(queue.share())]);
    expect(done[0]!.moves + done[1]!.moves).toBe(50 + 2 * 50 + 2 * 50);
    await waitUntil('every event heard', () => heard.total() >= expectedTotal(payloads), 30_000);
    // A last move as a fence: any duplicate of an earlier event would have come before it.
    const fence = await queue.submit('t', 'fence');
    await queue.cancel(fence);
    await waitUntil('the fence heard', () => heard.byJob.has(fence), 30_000);
    payloads.set(fence, 'fence');
    expectEveryJob(heard, payloads);
  });

  it('hears every partition of a partitioned queue, each job in its order', async () => {
    const { url } = await fileRedis();
    const queue = await PartitionedRedisQueue.connect({ redis: url, name: `events-p-${process.pid}-${++names}`, partitions: 3, policy: new RetryPolicy(2, 0, 0) });
    closers.push(queue);
    const heard = hear(closing(await queue.events()));
    const payloads = await submitMix(queue, 60);
    await Promise.all([mover(queue.share()), mover(queue.share())]);
    await waitUntil('every event heard', () => heard.total() >= expectedTotal(payloads), 30_000);
    const fences = await Promise.all([0, 1, 2].map(() => queue.submit('t', 'fence')));
    for (const fence of fences) await queue.cancel(fence);
    await waitUntil('the fences heard', () => fences.every((fence) => heard.byJob.has(fence)), 30_000);
    for (const fence of fences) payloads.set(fence, 'fence');
    expectEveryJob(heard, payloads);
  });

  it('tells a reader that resumes past the bound how many it missed, then hears the rest', async () => {
    const queue = await open();
    const first = await queue.events({ maxLen: 10 });
    const position = first.position;
    await first.close();
    const ids: string[] = [];
    for (let i = 0; i < 400; i++) {
      const id = await queue.submit('t', 'ok');
      const lease = (await queue.poll('w', 10_000))!;
      await queue.complete(lease.jobId, lease.token);
      ids.push(id);
    }
    const late = closing(await queue.events({ after: position, maxLen: 10 }));
    const heard = hear(late);
    await waitUntil('the missed count and the rest', () => heard.missed.reduce((sum, m) => sum + m.count, 0) + heard.total() === 400, 30_000);
    expect(heard.missed).toHaveLength(1);
    expect(heard.missed[0]!.partition).toBe(0);
    // MAXLEN ~ trims whole nodes: at least the bound stays; what was heard is the newest jobs, in order.
    const heardIds = [...heard.byJob.keys()];
    expect(heardIds.length).toBeGreaterThanOrEqual(10);
    expect(heardIds.length).toBeLessThan(400);
    expect(heardIds).toEqual(ids.slice(400 - heardIds.length));
  });

  it('resumes from its position after a new subscription, hearing each later move once', async () => {
    const queue = await open();
    const first = await queue.events();
    const before = hear(first);
    const a = await queue.submit('t', 'x');
    await queue.cancel(a);
    await waitUntil('the first cancel', () => before.total() === 1);
    const position = first.position;
    await first.close();
    const b = await queue.submit('t', 'x');
    await queue.cancel(b);
    const after = hear(closing(await queue.events({ after: position })));
    const c = await queue.submit('t', 'x');
    await queue.cancel(c);
    await waitUntil('both later cancels', () => after.byJob.has(c));
    expect([...after.byJob.entries()]).toEqual([[b, ['cancelled:0']], [c, ['cancelled:0']]]);
  });

  it('goes on from where it was when its connection is killed, losing and repeating nothing', async () => {
    const queue = await open();
    const redis = await admin();
    const events = closing(await queue.events());
    const heard = hear(events);
    const errors: unknown[] = [];
    events.on('error', (event) => errors.push(event.error));
    const ids: string[] = [];
    const move = async () => {
      const id = await queue.submit('t', 'x');
      await queue.cancel(id);
      ids.push(id);
    };
    for (let i = 0; i < 5; i++) await move();
    await waitUntil('the first five', () => heard.total() === 5);
    // The reader's connection is the one blocked in XREAD.
    let reader: string | undefined;
    await waitUntil('the reader blocked in XREAD', async () => {
      const list = (await redis.call('CLIENT', 'LIST')) as string;
      reader = /id=(\d+) [^\n]*cmd=xread/.exec(list)?.[1];
      return reader !== undefined;
    });
    expect(await redis.call('CLIENT', 'KILL', 'ID', reader!)).toBe(1);
    await waitUntil('the drop reported', () => errors.length >= 1);
    for (let i = 0; i < 5; i++) await move();
    await waitUntil('all ten', () => heard.total() >= 10);
    const fence = await queue.submit('t', 'x');
    await queue.cancel(fence);
    await waitUntil('the fence', () => heard.byJob.has(fence));
    expect([...heard.byJob.keys()]).toEqual([...ids, fence]);
    expect([...heard.byJob.values()].every((lines) => lines.length === 1)).toBe(true);
  });

  it('reports a lease that ran out as stalled, then failed and retrying, whoever noticed it', async () => {
    const clock = new ManualClock(T0);
    const queue = await open(clock);
    const heard = hear(closing(await queue.events()));
    const id = await queue.submit('t', 'x');
    await queue.poll('w', 1_000);
    clock.advance(1_500);
    await queue.stats();
    await waitUntil('the expiry heard', () => heard.total() === 3);
    expect(heard.byJob.get(id)).toEqual(['stalled:1:lease expired', 'failed:1:lease expired', 'retrying:1:lease expired']);
  });

  it('writes no stream for a queue no one subscribed to, and stops writing once events are disabled', async () => {
    const queue = await open();
    const redis = await admin();
    const stream = `leasehold:{${(queue.share()).name}}:events`;
    const id = await queue.submit('t', 'x');
    await queue.cancel(id);
    expect(await redis.exists(stream)).toBe(0);
    const events = await queue.events();
    await queue.cancel(await queue.submit('t', 'x'));
    expect(await redis.xlen(stream)).toBe(1);
    await events.close();
    await queue.disableEvents();
    await queue.cancel(await queue.submit('t', 'x'));
    expect(await redis.exists(stream)).toBe(0);
  });

  it('turns events off once no subscriber renewed them, and tells a subscriber that resumes then', async () => {
    const queue = await open();
    const redis = await admin();
    const { name } = queue.share();
    const [state, stream] = [`leasehold:{${name}}:state`, `leasehold:{${name}}:events`];
    const first = await queue.events();
    expect(Number(await redis.hget(state, 'eventsUntil'))).toBeGreaterThan(0);
    await queue.cancel(await queue.submit('t', 'x'));
    const position = first.position;
    await first.close();
    // As if the last renewal were long past (a subscriber gone for over a minute).
    await redis.hset(state, 'eventsUntil', 1);
    await queue.cancel(await queue.submit('t', 'x'));
    expect(await redis.xlen(stream)).toBe(1);
    expect(await redis.hget(state, 'events')).toBe(null);
    await queue.cancel(await queue.submit('t', 'x'));
    expect(await redis.xlen(stream)).toBe(1);
    // A subscriber resuming now cannot know what went unrecorded: it is told so.
    const again = closing(await queue.events({ after: position }));
    const heard = hear(again);
    const last = await queue.submit('t', 'x');
    await queue.cancel(last);
    await waitUntil('the move after it', () => heard.byJob.has(last));
    expect(heard.missed).toEqual([{ count: Infinity, partition: 0 }]);
    expect([...heard.byJob.keys()]).toEqual([last]);
  });

  it('closes its connection with close(), and no listener runs after it', async () => {
    const queue = await open();
    const redis = await admin();
    const clients = async () => ((await redis.call('CLIENT', 'LIST')) as string).trim().split('\n').length;
    const before = await clients();
    const events = await queue.events();
    expect(await clients()).toBe(before + 1);
    const heard = hear(events);
    await events.close();
    await waitUntil('the connection closed', async () => (await clients()) === before);
    await queue.cancel(await queue.submit('t', 'x'));
    // A second subscription hears the move: the first, closed, did not.
    const second = hear(closing(await queue.events({ after: '0-0/0' })));
    await waitUntil('the second heard it', () => second.total() === 1);
    expect(heard.total()).toBe(0);
  });

  it('refuses a subscription on a closed queue, and closes its subscriptions with it', async () => {
    const queue = await open();
    const redis = await admin();
    const clients = async () => ((await redis.call('CLIENT', 'LIST')) as string).trim().split('\n').length;
    const before = await clients();
    await queue.events();
    await queue.close();
    // The queue's own connection and the subscription's are gone.
    await waitUntil('the connections closed', async () => (await clients()) <= before - 1);
    await expect(queue.events()).rejects.toMatchObject({ code: 'ERR_ILLEGAL_STATE' });
  });

  it('refuses bad options, changing nothing', async () => {
    const queue = await open();
    const redis = await admin();
    const state = `leasehold:{${queue.share().name}}:state`;
    for (const options of [{ maxLen: 0 }, { maxLen: 1.5 }, { after: 'nope' }, { after: '1-0/1,2-0/2' }, { other: 1 }, null]) {
      await expect(queue.events(options as never)).rejects.toBeInstanceOf(InvalidArgumentError);
    }
    expect(await redis.hget(state, 'events')).toBe(null);
    const events = await queue.events();
    expect(() => events.on('nope' as never, () => undefined)).toThrow(InvalidArgumentError);
    await events.close();
  });
});

function closing<T extends { close(): Promise<void> }>(thing: T): T {
  closers.push(thing);
  return thing;
}
