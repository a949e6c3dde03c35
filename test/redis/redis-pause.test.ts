/**
 * Pause and resume of a Redis queue are seen by every client, in every
 * process: polls of any kind lease nothing while paused, and a client
 * waiting for work wakes on another process's resume.
 */
import { afterEach, expect, it } from 'vitest';
import { ManualClock, PartitionedRedisQueue, RedisJobQueue, RetryPolicy } from '../../dist/index.js';
import { JsonLinesChild, T0 } from '../support/helpers.js';
import { describeRedis, fileRedis } from '../support/redis-harness.js';

const policy = () => new RetryPolicy(3, 0, 0);
let names = 0;

/** The other process: pauses and resumes on request, answers each with whether it sees the queue paused. */
class Pauser extends JsonLinesChild<{ ev: string; paused?: boolean }> {
  constructor(handle: unknown) {
    super('redis-pauser.mjs', handle, 'the pauser process');
  }

  async ask(command: 'pause' | 'resume'): Promise<boolean | undefined> {
    this.write(command);
    const answer = await this.next();
    expect(answer.ev).toBe(command);
    return answer.paused;
  }
}

describeRedis('pause and resume across Redis clients and processes', () => {
  const opened: Array<{ close(): Promise<void> }> = [];
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((queue) => queue.close()));
  });
  const connect = async (name: string, time?: ManualClock) => {
    const server = await fileRedis();
    const queue = await RedisJobQueue.connect({ redis: server.url, name, policy: policy(), ...(time === undefined ? {} : { time }) });
    opened.push(queue);
    return queue;
  };

  it("another process's pause stops every poll of this client, and its resume wakes this client's waitForWork", async () => {
    const name = `pause-${process.pid}-${++names}`;
    const queue = await connect(name);
    const ids = [await queue.submit('t', 'a'), await queue.submit('t', 'b'), await queue.submit('t', 'c')];
    const running = await queue.poll('w1', 60_000);
    expect(running?.jobId).toBe(ids[0]);
    const pauser = new Pauser(queue.share());
    opened.push(pauser);
    expect(await pauser.next()).toMatchObject({ ev: 'ready' });
    expect(await pauser.ask('pause')).toBe(true);

    expect([await queue.isPaused(), (await queue.stats()).paused]).toEqual([true, true]);
    expect(await queue.poll('w1', 60_000)).toBeUndefined();
    expect(await queue.pollMany('w1', 60_000, 10)).toEqual([]);
    // The running job completes; nothing is leased in its place.
    const outcome = await queue.completeManyAndPoll([{ jobId: running!.jobId, token: running!.token }], 'w1', 60_000, 10);
    expect(outcome).toEqual({ refused: [], leases: [] });
    expect((await queue.view(ids[0]!)).status).toBe('SUCCEEDED');
    expect(await queue.poll('w1', 60_000)).toBeUndefined();

    const woken = queue.waitForWork(30_000);
    expect(await pauser.ask('resume')).toBe(false);
    // Woken by the resume (a timeout would resolve false, after 30 s).
    expect(await woken).toBe(true);
    expect((await queue.pollMany('w1', 60_000, 10)).map((lease) => lease.jobId)).toEqual(ids.slice(1));
    expect((await queue.stats()).paused).toBe(false);
  });

  it("a client sees another client's pause at once, and a client connecting later sees it too", async () => {
    const name = `pause-${process.pid}-${++names}`;
    const clock = new ManualClock(T0);
    const a = await connect(name, clock);
    const b = await connect(name, clock);
    await a.submit('t');
    await a.pause();
    expect(await b.poll('w2', 1_000)).toBeUndefined();
    const late = await connect(name, clock);
    expect(await late.isPaused()).toBe(true);
    await late.resume();
    expect(await a.isPaused()).toBe(false);
    expect((await b.poll('w2', 1_000))?.jobId).toBe('J1');
  });

  it('a partitioned queue pauses and resumes every partition', async () => {
    const server = await fileRedis();
    const name = `pause-parts-${process.pid}-${++names}`;
    const queue = await PartitionedRedisQueue.connect({ redis: server.url, name, partitions: 3, policy: policy(), time: new ManualClock(T0) });
    opened.push(queue);
    const ids = [];
    for (let i = 0; i < 6; i++) ids.push(await queue.submit('t', `job ${i}`));
    await queue.pause();
    expect([await queue.isPaused(), (await queue.stats()).paused]).toEqual([true, true]);
    expect(await queue.pollMany('w1', 1_000, 10)).toEqual([]);
    expect(await queue.poll('w1', 1_000)).toBeUndefined();
    await queue.resume();
    expect(await queue.isPaused()).toBe(false);
    expect((await queue.pollMany('w1', 1_000, 10)).map((lease) => lease.jobId).sort()).toEqual([...ids].sort());
  });
});
