/**
 * Binary jobs through a WorkerPool on Redis (a RedisJobQueue, and a PartitionedRedisQueue), with real
 * pool threads, each on its own connection from `queue.share()`: a handler is handed a binary job's
 * payload as a Uint8Array, and the Uint8Array it returns is the job's result, which `pool.run`
 * resolves with, and which a result over maxPayloadBytes fails the attempt (the queue refused it).
 * The in-memory and journaled queues' run in test/pool/pool-binary.test.ts.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { PartitionedRedisQueue, RedisJobQueue, RetryPolicy, WorkerPool, systemClock, type RedisQueueOptions } from '../../dist/index.js';
import { track, trackQueue } from '../support/pool-harness.js';
import { bytesOf } from '../support/helpers.js';
import { describeRedis, startRedis, type RedisServer } from '../support/redis-harness.js';

const HANDLERS = new URL('../fixtures/binary-handlers.mjs', import.meta.url);
const MIB = 1 << 20;

let server: RedisServer | undefined;
let names = 0;

type TestQueue = RedisJobQueue | PartitionedRedisQueue;

const SHAPES: ReadonlyArray<{ name: string; connect(options: RedisQueueOptions): Promise<TestQueue> }> = [
  { name: 'a RedisJobQueue', connect: (options) => RedisJobQueue.connect(options) },
  { name: 'a PartitionedRedisQueue of 3 partitions', connect: (options) => PartitionedRedisQueue.connect({ ...options, partitions: 3 }) },
];


beforeAll(async () => {
  server = await startRedis();
});
afterAll(async () => {
  await server?.stop();
});

for (const shape of SHAPES) describeRedis(`binary jobs in a WorkerPool on ${shape.name}`, () => {
  const open = async (options: Partial<RedisQueueOptions> = {}): Promise<TestQueue> => trackQueue(await shape.connect({
    redis: server!.url, name: `pool-binary-${process.pid}-${++names}`, policy: new RetryPolicy(1, 0, 0), time: systemClock, ...options,
  }));

  it('hands a handler a Uint8Array payload and resolves run with the Uint8Array it returns, 1 MiB each way', { timeout: 60_000 }, async () => {
    const queue = await open();
    const pool = track(new WorkerPool(queue, { handlers: HANDLERS, threads: 2, leaseMillis: 30_000 }));
    await pool.start();
    const sent = bytesOf(MIB);
    const results = await Promise.all([pool.run('reverseBytes', sent), pool.run('reverseBytes', bytesOf(100))]);
    expect(results[0]).toBeInstanceOf(Uint8Array);
    // Compared whole (toEqual walks a megabyte element by element, for seconds).
    expect(Buffer.from(results[0] as Uint8Array).equals(Uint8Array.from(sent).reverse())).toBe(true);
    expect(results[1]).toEqual(bytesOf(100).reverse());
    expect(await pool.run('makeBytes', '70')).toEqual(Uint8Array.from({ length: 70 }, (_, i) => i));
    expect(await pool.run('describePayload', 'abc')).toEqual({ binary: false, length: 3 });
    expect(await pool.run('describePayload', bytesOf(5))).toEqual({ binary: true, length: 5 });
  });

  it('fails the attempt of a handler whose Uint8Array result is over maxPayloadBytes: the queue refused it, changing nothing', { timeout: 60_000 }, async () => {
    const queue = await open({ maxPayloadBytes: 64 });
    const pool = track(new WorkerPool(queue, { handlers: HANDLERS, threads: 1, leaseMillis: 30_000 }));
    await pool.start();
    // makeBytes returns 65 bytes: one over the limit.
    const id = await queue.submit('makeBytes', '65');
    await expect(queue.finished(id)).rejects.toMatchObject({ name: 'JobFailedError' });
    const view = await queue.view(id);
    expect(view).toMatchObject({ status: 'DEAD', result: undefined });
    expect(view.lastError).toContain('maxPayloadBytes');
  });
});
