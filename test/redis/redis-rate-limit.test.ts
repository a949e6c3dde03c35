/**
 * Rate limits of a Redis queue across processes: racing pollers in several
 * processes get exactly max leases of a limited type per window; the limits
 * are seen by every client, also one that connects later.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterEach, expect, it } from 'vitest';
import { ManualClock, PartitionedRedisQueue, RedisJobQueue, RetryPolicy } from '../../dist/index.js';
import { CATCH_UP_BATCH } from '../../dist/redis/scripts.js';
import { T0, expectInvalid, withTimeout } from '../support/helpers.js';
import { describeRedis, fileRedis } from '../support/redis-harness.js';

const POLLER = fileURLToPath(new URL('../fixtures/redis-rate-limit-poller.mjs', import.meta.url));
const policy = () => new RetryPolicy(3, 0, 0);
let names = 0;

interface Leased {
  jobId: string;
  type: string;
  token: number;
  attempt: number;
}

/** A polling process (see the fixture): each round, polls at the time it is given until nothing is left. */
class Poller {
  readonly #child: ChildProcess;
  readonly #lines: AsyncIterator<string>;

  constructor(handle: unknown, many: boolean) {
    this.#child = spawn(process.execPath, [POLLER, JSON.stringify(handle), many ? 'many' : 'one'], { stdio: ['pipe', 'pipe', 'inherit'] });
    this.#lines = createInterface({ input: this.#child.stdout! })[Symbol.asyncIterator]();
  }

  async next(): Promise<{ ev: string; leases?: Leased[] }> {
    const { value, done } = await withTimeout(this.#lines.next(), 30_000, 'a poller process');
    if (done === true) throw new Error('a poller process ended');
    return JSON.parse(value as string) as { ev: string; leases?: Leased[] };
  }

  go(time: number): void {
    this.#child.stdin!.write(`go ${time}\n`);
  }

  async close(): Promise<void> {
    if (this.#child.exitCode !== null) return;
    this.#child.stdin!.end('close\n');
    await new Promise((resolve) => this.#child.once('exit', resolve));
  }
}

const PROCESSES = 4;
const MAX = 5;
const ROUNDS = 8;
const WINDOW = 1_000;
const OTHERS = 30;

describeRedis('rate limits across Redis clients and processes', () => {
  const opened: Array<{ close(): Promise<void> }> = [];
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((queue) => queue.close()));
  });
  const connect = async (name: string, time: ManualClock) => {
    const server = await fileRedis();
    const queue = await RedisJobQueue.connect({ redis: server.url, name, policy: policy(), time });
    opened.push(queue);
    return queue;
  };

  it('processes polling a limited type at once get exactly max leases per window, every lease checked', async () => {
    const name = `rate-${process.pid}-${++names}`;
    const queue = await connect(name, new ManualClock(T0));
    await queue.setRateLimit('email', { max: MAX, windowMillis: WINDOW });
    const emails = await queue.submitMany(Array.from({ length: MAX * ROUNDS }, (_, i) => ({ type: 'email', payload: `e${i}` })));
    const others = await queue.submitMany(Array.from({ length: OTHERS }, (_, i) => ({ type: 'resize', payload: `r${i}` })));
    const pollers = Array.from({ length: PROCESSES }, (_, i) => new Poller(queue.share(), i % 2 === 1));
    opened.push(...pollers);
    for (const poller of pollers) expect(await poller.next()).toEqual({ ev: 'ready' });
    const all: Leased[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      // Every process starts polling as it reads its line: they race for the window's leases.
      for (const poller of pollers) poller.go(T0 + round * WINDOW);
      const leases = [];
      for (const poller of pollers) leases.push(...(await poller.next()).leases!);
      const leasedEmails = leases.filter((l) => l.type === 'email').map((l) => l.jobId);
      expect(leasedEmails.sort(), `round ${round}`).toEqual(emails.slice(round * MAX, (round + 1) * MAX).sort());
      if (round === 0) expect(leases.filter((l) => l.type === 'resize').map((l) => l.jobId).sort()).toEqual([...others].sort());
      all.push(...leases);
    }
    expect(all.map((l) => l.jobId).sort()).toEqual([...emails, ...others].sort());
    expect(new Set(all.map((l) => l.token)).size).toBe(all.length);
    expect(all.every((l) => l.attempt === 1)).toBe(true);
    expect(await queue.stats()).toMatchObject({ pending: 0, running: 0, succeeded: MAX * ROUNDS + OTHERS });
  });

  it("a client obeys another client's limit at once, a client connecting later sees it, and its removal frees the held jobs", async () => {
    const name = `rate-${process.pid}-${++names}`;
    const clock = new ManualClock(T0);
    const a = await connect(name, clock);
    const b = await connect(name, clock);
    await a.setRateLimit('email', { max: 1, windowMillis: WINDOW });
    const [first, second] = [await a.submit('email'), await a.submit('email')];
    expect((await b.poll('w2', 60_000))?.jobId).toBe(first);
    expect(await b.pollMany('w2', 60_000, 10)).toEqual([]);
    const late = await connect(name, clock);
    expect(await late.rateLimits()).toEqual([{ type: 'email', max: 1, windowMillis: WINDOW }]);
    const woken = b.waitForWork(30_000);
    await late.setRateLimit('email', null);
    // Woken by the removal (a timeout would resolve false, after 30 s).
    expect(await woken).toBe(true);
    expect((await b.poll('w2', 60_000))?.jobId).toBe(second);
  });

  it('waitForWork after a poll that passed over limited jobs sleeps only until their window opens', async () => {
    const clock = new ManualClock(T0);
    const queue = await connect(`rate-${process.pid}-${++names}`, clock);
    await queue.setRateLimit('email', { max: 1, windowMillis: WINDOW });
    await queue.submit('email');
    await queue.submit('email');
    expect(await queue.poll('w1', 60_000)).toBeDefined();
    clock.advance(WINDOW - 20);
    expect(await queue.poll('w1', 60_000)).toBeUndefined();
    expect(await withTimeout(queue.waitForWork(60_000), 10_000, 'waitForWork')).toBe(true);
    clock.advance(20);
    expect(await queue.poll('w1', 60_000)).toBeDefined();
  });

  it('a partitioned queue splits max over its partitions: at most max per window over all of them', async () => {
    const server = await fileRedis();
    const clock = new ManualClock(T0);
    const queue = await PartitionedRedisQueue.connect({ redis: server.url, name: `rate-parts-${process.pid}-${++names}`, partitions: 3, policy: policy(), time: clock });
    opened.push(queue);
    await expectInvalid(() => queue.setRateLimit('email', { max: 2, windowMillis: WINDOW }));
    expect(await queue.rateLimits()).toEqual([]);
    await queue.setRateLimit('email', { max: 4, windowMillis: WINDOW });
    expect(await queue.rateLimits()).toEqual([{ type: 'email', max: 4, windowMillis: WINDOW }]);
    for (let i = 0; i < 12; i++) await queue.submit('email', `e${i}`);
    expect(await queue.pollMany('w1', 60_000, 12)).toHaveLength(4);
    expect(await queue.poll('w1', 60_000)).toBeUndefined();
    clock.advance(WINDOW);
    expect(await queue.pollMany('w1', 60_000, 12)).toHaveLength(4);
    await queue.setRateLimit('email', null);
    expect(await queue.rateLimits()).toEqual([]);
    expect(await queue.pollMany('w1', 60_000, 12)).toHaveLength(4);
  });
});

describeRedis('rate limits of a Redis queue with a backlog', () => {
  const opened: Array<{ close(): Promise<void> }> = [];
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((queue) => queue.close()));
  });

  it('passes over a backlog of limited jobs larger than one script may move, with poll, completeAndPoll and pollMany alike', async () => {
    const server = await fileRedis();
    const clock = new ManualClock(T0);
    const queue = await RedisJobQueue.connect({ redis: server.url, name: `rate-backlog-${process.pid}-${++names}`, policy: policy(), time: clock });
    opened.push(queue);
    await queue.setRateLimit('email', { max: 1, windowMillis: WINDOW });
    const emails = await queue.submitMany(Array.from({ length: 3 * CATCH_UP_BATCH }, (_, i) => ({ type: 'email', payload: `e${i}`, priority: 5 })));
    const resizes = await queue.submitMany(Array.from({ length: 3 }, (_, i) => ({ type: 'resize', payload: `r${i}` })));
    const first = await queue.poll('w1', 60_000);
    expect(first?.jobId).toBe(emails[0]);
    // Every other email is passed over, more than one script's budget of them, to the first resize.
    const second = await queue.completeAndPoll(first!.jobId, first!.token, 'w1', 60_000);
    expect(second?.jobId).toBe(resizes[0]);
    expect((await queue.pollMany('w1', 60_000, 10)).map((l) => l.jobId)).toEqual(resizes.slice(1));
    expect(await queue.stats()).toMatchObject({ pending: emails.length - 1, ready: emails.length - 1 });
    // The next window: the backlog comes back in order, one script's budget at a time.
    clock.advance(WINDOW);
    expect((await queue.poll('w1', 60_000))?.jobId).toBe(emails[1]);
    expect(await queue.poll('w1', 60_000)).toBeUndefined();
    await queue.setRateLimit('email', null);
    expect((await queue.pollMany('w1', 60_000, 1_000)).map((l) => l.jobId)).toEqual(emails.slice(2));
  });
});
