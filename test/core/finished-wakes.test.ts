import { describe, expect, it } from 'vitest';
import { JobQueue, ManualClock, RetryPolicy, type TimeSource } from '../../dist/index.js';
import { FinishWaits } from '../../dist/finished.js';
import { T0, mustPollSync } from '../support/helpers.js';

/** A ManualClock that counts its readings: each `finished` look takes the lock, which reads the clock. */
class CountingClock implements TimeSource {
  readonly clock = new ManualClock(T0);
  readings = 0;

  now(): number {
    this.readings++;
    return this.clock.now();
  }
}

/** Lets every wake and look queued so far run. */
async function settle(): Promise<void> {
  for (let turn = 0; turn < 5; turn++) await new Promise((resolve) => setImmediate(resolve));
}

describe('finished() over shared memory', () => {
  it('wakes only the waits whose job finished: one complete among 200 waits makes one look, not 200', async () => {
    const time = new CountingClock();
    const queue = new JobQueue(time, new RetryPolicy(3, 100, 1_000), { capacity: 256 });
    const ids = Array.from({ length: 200 }, () => queue.submit('t'));
    const waits = ids.map((id) => queue.finished(id));
    const first = mustPollSync(queue, ids[0]);
    await settle();
    const before = time.readings;
    queue.complete(first.jobId, first.token, 'done');
    await expect(waits[0]).resolves.toBe('done');
    await settle();
    // The complete and the one look read the clock a few times; 199 needless looks would read it 199 times more.
    expect(time.readings - before).toBeLessThan(10);
    queue.close();
    await Promise.allSettled(waits);
  });

  it('settles a wait for a job whose last lease lapsed, once another finish makes the sleeper look and a look expires it', async () => {
    const time = new CountingClock();
    const queue = new JobQueue(time, new RetryPolicy(1, 100, 1_000), { capacity: 16 });
    const [lapsing, other] = [queue.submit('t'), queue.submit('t')];
    const waits = [queue.finished(lapsing), queue.finished(other)];
    mustPollSync(queue, lapsing, 1_000);
    const lease = mustPollSync(queue, other, 60_000);
    time.clock.advance(1_000);
    // The lapsed lease is the job's last attempt: its look (the lock) dead-letters it.
    queue.complete(lease.jobId, lease.token);
    await expect(waits[1]).resolves.toBeUndefined();
    await expect(waits[0]).rejects.toMatchObject({ status: 'DEAD' });
    queue.close();
  });
});

describe('FinishWaits', () => {
  it('wakes the waits for the job named, and leaves the others asleep', async () => {
    let armed = 0;
    const waits = new FinishWaits(() => void armed++);
    const [a1, a2, b] = [waits.watch('a'), waits.watch('a'), waits.watch('b')];
    for (const watch of [a1, a2, b]) await watch.arm();
    const stop = new AbortController().signal;
    const woken: string[] = [];
    const changes = [a1.changed(stop).then(() => woken.push('a1')), a2.changed(stop).then(() => woken.push('a2')), b.changed(stop).then(() => woken.push('b'))];
    waits.wake('a');
    await Promise.all(changes.slice(0, 2));
    await settle();
    expect(woken.sort()).toEqual(['a1', 'a2']);
    expect(armed).toBe(3);
    waits.wakeAll();
    await changes[2];
    expect(woken).toContain('b');
  });

  it('forgets a job once every watch over it closed', async () => {
    const waits = new FinishWaits(() => undefined);
    const [first, second] = [waits.watch('a'), waits.watch('a')];
    await first.arm();
    await second.arm();
    expect([...waits.jobs()]).toEqual(['a']);
    first.close();
    expect(waits.size).toBe(1);
    second.close();
    expect(waits.size).toBe(0);
  });

  it('ends a wait whose stop aborts, with no wake', async () => {
    const waits = new FinishWaits(() => undefined);
    const watch = waits.watch('a');
    await watch.arm();
    const stop = new AbortController();
    const changed = watch.changed(stop.signal);
    stop.abort();
    await expect(changed).resolves.toBeUndefined();
  });

  it('returns at once from a wait woken between its arm and its sleep', async () => {
    const waits = new FinishWaits(() => undefined);
    const watch = waits.watch('a');
    await watch.arm();
    waits.wake('a');
    await expect(watch.changed(new AbortController().signal)).resolves.toBeUndefined();
  });
});
