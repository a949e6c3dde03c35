/**
 * A pool handler that returns `snooze(ms)`: the thread hands the job back
 * with that delay (release with delayMillis), the attempt not counted, so a
 * job of one attempt may snooze any number of times and still run it. On
 * every pool backend.
 */
import { expect, it } from 'vitest';
import { RetryPolicy, WorkerPool, snooze } from '../../dist/index.js';
import { bad, expectInvalidSync, waitUntil } from '../support/helpers.js';
import { describePoolBackends } from '../support/pool-backends.js';
import { HANDLERS, scratch, track } from '../support/pool-harness.js';

describePoolBackends('a handler that returns snooze(ms)', (backend) => {
  it('runs the job again no sooner than ms later, on the same attempt: snoozes never use one up', async () => {
    const s = scratch();
    const queue = await backend.open(new RetryPolicy(1, 0, 0));
    const pool = track(new WorkerPool(queue, { handlers: HANDLERS, threads: 2, leaseMillis: 10_000 }));
    await pool.start();
    const id = await queue.submit('snoozer', s.payload({ snoozes: 3, ms: 40 }));
    await waitUntil('the job succeeded', async () => (await queue.view(id)).status === 'SUCCEEDED');
    await pool.close();
    const starts = s.events('start', id);
    expect(starts.map((line) => line.attempt)).toEqual([1, 1, 1, 1]);
    expect(s.events('ok', id)).toHaveLength(1);
    // Each run after a snooze comes at least its delay later (Date.now, whole milliseconds: 1 ms of rounding).
    for (let i = 1; i < starts.length; i++) expect(starts[i]!.t - starts[i - 1]!.t).toBeGreaterThanOrEqual(39);
    expect(await queue.view(id)).toMatchObject({ status: 'SUCCEEDED', attempts: 1, lastError: null });
  });

  it('fails the attempt when the delay is bad: snooze throws InvalidArgumentError in the handler', async () => {
    const queue = await backend.open(new RetryPolicy(1, 0, 0));
    const pool = track(new WorkerPool(queue, { handlers: HANDLERS, threads: 1, leaseMillis: 10_000 }));
    await pool.start();
    const id = await queue.submit('snoozesBadly', '{}');
    await waitUntil('the job is dead', async () => (await queue.view(id)).status === 'DEAD');
    await pool.close();
    expect((await queue.view(id)).lastError).toMatch(/delayMillis/);
  });
});

it('snooze(ms) refuses a delay that is not a span of 0 to 2^53 - 1 milliseconds', () => {
  for (const delay of [-1, Number.NaN, Infinity, bad('5'), bad(undefined)]) expectInvalidSync(() => snooze(delay));
  expect(snooze(0)).toEqual({ kind: 'leasehold/snooze', delayMillis: 0 });
});
