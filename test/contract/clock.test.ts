import { describe, expect, it } from 'vitest';
import { JobQueue, ManualClock, RetryPolicy, systemClock, type Lease } from '../../dist/index.js';
import { describeEachBackend, openQueue } from '../support/backends.js';
import { T0, bad, expectInvalidSync, expectStale, mustPoll, mustPollSync } from '../support/helpers.js';
import { tempDir } from '../support/journal-harness.js';
import { join } from 'node:path';

describe('ManualClock', () => {
  it('starts at 0 by default', () => {
    expect(new ManualClock().now()).toBe(0);
  });

  it('starts at the given time', () => {
    expect(new ManualClock(1234).now()).toBe(1234);
    expect(new ManualClock(1_700_000_000_000).now()).toBe(1_700_000_000_000);
  });

  it('stands still until moved', () => {
    const clock = new ManualClock(T0);
    expect([clock.now(), clock.now(), clock.now()]).toEqual([T0, T0, T0]);
  });

  it('moves by advance and jumps by set', () => {
    const clock = new ManualClock(1000);
    clock.advance(250);
    expect(clock.now()).toBe(1250);
    clock.advance(0);
    expect(clock.now()).toBe(1250);
    clock.set(5000);
    expect(clock.now()).toBe(5000);
    clock.advance(1);
    expect(clock.now()).toBe(5001);
  });

  it('adds up many advances exactly', () => {
    const clock = new ManualClock(0);
    for (let i = 0; i < 1000; i++) clock.advance(7);
    expect(clock.now()).toBe(7000);
  });

  it('keeps fractional milliseconds', () => {
    const clock = new ManualClock(10.25);
    clock.advance(0.5);
    expect(clock.now()).toBe(10.75);
  });

  it('keeps large epoch times exactly', () => {
    const clock = new ManualClock(0);
    clock.set(2 ** 52 + 1);
    expect(clock.now()).toBe(2 ** 52 + 1);
  });

  it('keeps separate clocks apart', () => {
    const a = new ManualClock(1);
    const b = new ManualClock(2);
    a.advance(10);
    expect([a.now(), b.now()]).toEqual([11, 2]);
  });

  it.each([NaN, Infinity, -Infinity])('rejects the start time %s', (t) => {
    expectInvalidSync(() => new ManualClock(t));
  });

  it.each([NaN, Infinity, -Infinity, '5'])('rejects set(%s) and advance(%s), keeping the time', (t) => {
    const clock = new ManualClock(100);
    expectInvalidSync(() => clock.set(bad(t)));
    expectInvalidSync(() => clock.advance(bad(t)));
    expect(clock.now()).toBe(100);
  });
});

describe('systemClock', () => {
  it('reads Date.now()', () => {
    const before = Date.now();
    const now = systemClock.now();
    const after = Date.now();
    expect(now).toBeGreaterThanOrEqual(before);
    expect(now).toBeLessThanOrEqual(after);
  });

  it('drives a queue in wall-clock time', () => {
    const queue = new JobQueue(systemClock, new RetryPolicy(3, 100, 1000));
    const before = Date.now();
    const id = queue.submit('t', 'p');
    const view = queue.view(id);
    expect(view.nextRunAt).toBeGreaterThanOrEqual(before);
    expect(view.nextRunAt).toBeLessThanOrEqual(Date.now());
    const lease = mustPollSync(queue, id, 60_000);
    expect(lease.leaseUntil).toBeGreaterThanOrEqual(before + 60_000);
    expect(lease.leaseUntil).toBeLessThanOrEqual(Date.now() + 60_000);
    queue.complete(id, lease.token);
  });
});

describeEachBackend('a queue on a ManualClock', (backend) => {
  const policy = () => new RetryPolicy(3, 100, 1000);

  it('reads the time from the clock it was given, for submit and poll', async () => {
    const clock = new ManualClock(T0);
    const queue = await openQueue(backend, clock, policy());
    clock.set(T0 + 42);
    const id = await queue.submit('t', 'p');
    expect((await queue.view(id)).nextRunAt).toBe(T0 + 42);
    clock.advance(8);
    expect((await mustPoll(queue, id, 100)).leaseUntil).toBe(T0 + 150);
  });

  it('sees time move only when the clock is moved', async () => {
    const clock = new ManualClock(T0);
    const queue = await openQueue(backend, clock, policy());
    const id = await queue.submit('t', 'p', 0, T0 + 1);
    for (let i = 0; i < 5; i++) expect(await queue.poll('w', 100)).toBeUndefined();
    clock.advance(1);
    const lease = await mustPoll(queue, id, 100);
    for (let i = 0; i < 5; i++) expect((await queue.view(id)).status).toBe('RUNNING');
    clock.advance(100);
    expect((await queue.view(id)).status).toBe('PENDING');
    await expectStale(() => queue.complete(id, lease.token));
  });

  it('lets two queues share one clock', async () => {
    const clock = new ManualClock(T0);
    const a = await openQueue(backend, clock, policy());
    const b = await openQueue(backend, clock, policy());
    await a.submit('t', '', 0, T0 + 10);
    await b.submit('t', '', 0, T0 + 10);
    expect(await a.poll('w', 1)).toBeUndefined();
    expect(await b.poll('w', 1)).toBeUndefined();
    clock.advance(10);
    expect((await mustPoll(a, 'J1', 1)).leaseUntil).toBe(T0 + 11);
    expect((await mustPoll(b, 'J1', 1)).leaseUntil).toBe(T0 + 11);
  });

  it('follows a clock set backwards (no hidden caching of now)', async () => {
    const clock = new ManualClock(T0);
    const queue = await openQueue(backend, clock, policy());
    await queue.submit('t', '', 0, T0 + 500);
    clock.set(T0 + 500);
    expect((await queue.stats()).ready).toBe(1);
    clock.set(T0);
    expect(await queue.stats()).toMatchObject({ ready: 0, delayed: 1 });
    expect(await queue.poll('w', 10)).toBeUndefined();
  });
});

/** Backends are opened on a ManualClock; the JobQueue constructor takes any TimeSource. */
describe('a queue on any TimeSource (memory backend only)', () => {
  it('accepts any TimeSource object', () => {
    let t = 500;
    const queue = new JobQueue({ now: () => t }, new RetryPolicy(3, 100, 1000));
    const id = queue.submit('t', 'p', 0, 600);
    expect(queue.poll('w', 10)).toBeUndefined();
    t = 600;
    expect(mustPollSync(queue, id, 10).leaseUntil).toBe(610);
  });

  it.each(['memory', 'journal'])('refuses every call whose clock throws with InvalidArgumentError naming its error, changing nothing (%s, and after a reopen)', (kind) => {
    let broken = false;
    const time = {
      now: () => {
        if (broken) throw new Error('the clock broke');
        return T0;
      },
    };
    const policy = new RetryPolicy(3, 100, 1000);
    const open = (path: string) => (kind === 'memory' ? new JobQueue(time, policy) : JobQueue.open(path, time, policy));
    const state = (queue: JobQueue) => JSON.stringify([queue.stats(), queue.jobs(), queue.deadLetters()]);
    // The same queue twice: one gets every call below with its clock broken, the other none.
    const [tried, untouched] = [join(tempDir(), 'tried.db'), join(tempDir(), 'untouched.db')].map((path) => {
      const queue = open(path);
      const id = queue.submit('t', 'p');
      queue.submit('u', 'q');
      return { path, queue, lease: mustPollSync(queue, id, 1000) };
    }) as [{ path: string; queue: JobQueue; lease: Lease }, { path: string; queue: JobQueue; lease: Lease }];
    const { queue, lease } = tried;
    const calls: (() => unknown)[] = [
      () => queue.submit('t', 'x'), () => queue.submitMany([{ type: 't' }]), () => queue.poll('w', 10), () => queue.complete(lease.jobId, lease.token),
      () => queue.completeAndPoll(lease.jobId, lease.token, 'w', 10), () => queue.fail(lease.jobId, lease.token, 'e'),
      () => queue.release(lease.jobId, lease.token), () => queue.extend(lease.jobId, lease.token, 10), () => queue.cancel('J2'), () => queue.stats(),
      () => queue.view(lease.jobId),
    ];
    for (const call of calls) {
      broken = true;
      expect(expectInvalidSync(call).message).toMatch(/TimeSource .*threw: the clock broke/);
      broken = false;
      expect(state(queue)).toBe(state(untouched.queue));
    }
    if (kind === 'journal') {
      const [reopened, reference] = [tried, untouched].map(({ path, queue }) => {
        queue.close();
        return open(path);
      }) as [JobQueue, JobQueue];
      expect(state(reopened)).toBe(state(reference));
      reopened.close();
      reference.close();
    } else {
      queue.close();
      untouched.queue.close();
    }
  });
});
