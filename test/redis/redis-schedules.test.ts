import { afterEach, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { IllegalStateError, ManualClock, PartitionedRedisQueue, RedisJobQueue, RetryPolicy } from '../../dist/index.js';
import { JsonLinesChild, T0 } from '../support/helpers.js';
import { describeRedis, fileRedis } from '../support/redis-harness.js';

const PROCESSES = 4;
const ROUNDS = 40;
let names = 0;

describeRedis('repeatable jobs across Redis processes', () => {
  const opened: Array<{ close(): Promise<void> }> = [];
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((queue) => queue.close()));
  });
  const connect = async (name: string, time: ManualClock) => {
    const server = await fileRedis();
    const queue = await RedisJobQueue.connect({ redis: server.url, name, policy: new RetryPolicy(3, 0, 0), time });
    opened.push(queue);
    return queue;
  };

  it('processes running schedulers at once make exactly one job per tick, each handed to one process', async () => {
    const name = `schedules-${process.pid}-${++names}`;
    const clock = new ManualClock(T0);
    const queue = await connect(name, clock);
    await queue.schedule('every', { everyMillis: 1_000, type: 'e', missed: 'all' });
    await queue.schedule('cron', { cron: '*/3 * * * * *', type: 'c', missed: 'all' });
    const schedulers = Array.from({ length: PROCESSES }, () =>
      new JsonLinesChild<{ ev: string; fired?: string[] }>('redis-scheduler.mjs', queue.share(), 'a scheduler process'));
    opened.push(...schedulers);
    for (const scheduler of schedulers) expect((await scheduler.next()).ev).toBe('ready');
    const fired: string[] = [];
    let now = T0;
    for (let round = 0; round < ROUNDS; round++) {
      now += [1_000, 2_500, 400][round % 3]!;
      // Every process is told at once: their runs race for the same due ticks.
      for (const scheduler of schedulers) scheduler.write(`run ${now}`);
      for (const scheduler of schedulers) fired.push(...(await scheduler.next()).fired!);
    }
    clock.set(now);
    const count = (await queue.stats()).pending;
    const ids = Array.from({ length: count }, (_, i) => `J${i + 1}`);
    expect([...fired].sort()).toEqual([...ids].sort());
    const keys = (await Promise.all(ids.map(async (id) => (await queue.view(id)).key))).sort();
    const every = Array.from({ length: Math.floor((now - T0) / 1_000) }, (_, k) => `schedule:every:${T0 + (k + 1) * 1_000}`);
    // T0 (1000 s) is not a multiple of 3 s: the cron's first tick is 1002 s.
    const cron = Array.from({ length: Math.floor((now - T0 - 2_000) / 3_000) + 1 }, (_, k) => `schedule:cron:${T0 + 2_000 + k * 3_000}`);
    expect(keys).toEqual([...every, ...cron].sort());
  });

  it('a client connecting later sees the schedules, and another client fires them', async () => {
    const name = `schedules-${process.pid}-${++names}`;
    const clock = new ManualClock(T0);
    const a = await connect(name, clock);
    await a.schedule('s', { everyMillis: 1_000, type: 't' });
    const b = await connect(name, clock);
    expect((await b.schedules()).map((s) => [s.name, s.nextTick])).toEqual([['s', T0 + 1_000]]);
    clock.advance(1_000);
    const [id] = await b.runSchedules();
    expect(await a.runSchedules()).toEqual([]);
    expect((await a.view(id!)).key).toBe(`schedule:s:${T0 + 1_000}`);
    expect(await b.unschedule('s')).toBe(true);
    expect(await a.schedules()).toEqual([]);
  });

  it('a partitioned queue keeps its schedules in partition 0, and clients racing on it make one job per tick', async () => {
    const name = `schedules-${process.pid}-${++names}`;
    const server = await fileRedis();
    const clock = new ManualClock(T0);
    const clients = await Promise.all([0, 1, 2].map(() =>
      PartitionedRedisQueue.connect({ redis: server.url, name, partitions: 3, policy: new RetryPolicy(3, 0, 0), time: clock })));
    opened.push(...clients);
    await clients[0]!.schedule('s', { everyMillis: 1_000, type: 't', missed: 'all' });
    expect((await clients[2]!.schedules()).map((s) => s.name)).toEqual(['s']);
    const fired: string[] = [];
    for (const step of [1_000, 3_000, 500, 2_000]) {
      clock.advance(step);
      for (const ids of await Promise.all(clients.map((client) => client.runSchedules()))) fired.push(...ids);
    }
    expect(new Set(fired).size).toBe(fired.length);
    const keys: (string | null)[] = [];
    for (const id of fired) keys.push((await clients[0]!.view(id)).key);
    expect(keys.sort()).toEqual([1, 2, 3, 4, 5, 6].map((k) => `schedule:s:${T0 + k * 1_000}`));
    expect((await clients[0]!.stats()).pending).toBe(6);
  });
});

describeRedis('a schedule that another hand wrote into Redis', () => {
  it.each([['a definition that is not JSON', 'not json'], ['a definition schedule() would refuse', '{"type":5}']])(
    'is refused with IllegalStateError naming it, listed or due, and the queue goes on: %s',
    async (_what, definition) => {
      const server = await fileRedis();
      const name = `schedules-damaged-${process.pid}-${++names}`;
      const queue = await RedisJobQueue.connect({ redis: server.url, name, policy: new RetryPolicy(3, 0, 0), time: new ManualClock(T0) });
      const admin = new Redis(server.url);
      try {
        await admin.hset(`leasehold:{${name}}:schedules`, 'broken', definition);
        await admin.zadd(`leasehold:{${name}}:scheduleTicks`, 0, 'broken');
        for (const read of [() => queue.schedules(), () => queue.runSchedules()]) {
          const error = await read().then(() => undefined, (thrown: unknown) => thrown);
          expect(error).toBeInstanceOf(IllegalStateError);
          expect((error as Error).message).toContain('"broken" in Redis is damaged');
        }
        expect(await queue.submit('t', 'still works')).toBe('J1');
      } finally {
        admin.disconnect();
        await queue.close();
      }
    },
  );
});
