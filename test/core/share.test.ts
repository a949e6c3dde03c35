/**
 * share() / JobQueue.attach(): a handle is plain data plus SharedArrayBuffers,
 * survives structured cloning, and opens the same queue; anything else is
 * refused at the edge before it could touch shared memory.
 */
import { describe, expect, it } from 'vitest';
import { JobQueue, ManualClock, RetryPolicy, systemClock, type SharedQueueHandle } from '../../dist/index.js';
import { bad, expectIllegalStateSync, expectInvalidSync } from '../support/helpers.js';

function queueWith(clock = new ManualClock(1_000)) {
  return new JobQueue(clock, new RetryPolicy(3, 100, 1_000), { capacity: 16 });
}

describe('share and attach', () => {
  it('opens the same queue through a structured clone of the handle, clock and policy included', () => {
    const clock = new ManualClock(1_000);
    const queue = queueWith(clock);
    const other = JobQueue.attach(structuredClone(queue.share()));
    const id = other.submit('email', 'hi');
    expect(queue.view(id)).toMatchObject({ status: 'PENDING', payload: 'hi' });
    const lease = queue.poll('w', 50)!;
    clock.advance(50); // the attached view reads the same shared clock: the lease expired for it too
    expect(other.view(id)).toMatchObject({ status: 'PENDING', attempts: 1, lastError: 'lease expired', nextRunAt: 1_050 + 100 });
    expect(() => other.complete(id, lease.token)).toThrow();
  });

  it('carries systemClock, and refuses a clock that cannot cross threads unless one is given', () => {
    expect(JobQueue.attach(new JobQueue(systemClock, new RetryPolicy(1, 0, 0)).share()).stats().pending).toBe(0);
    const custom = new JobQueue({ now: () => 5 }, new RetryPolicy(1, 0, 0));
    expectInvalidSync(() => JobQueue.attach(custom.share()));
    const attached = JobQueue.attach(custom.share(), { now: () => 5 });
    attached.submit('t');
    expect(custom.stats().pending).toBe(1);
  });

  it.each<[string, (h: SharedQueueHandle) => unknown]>([
    ['null', () => null],
    ['an empty object', () => ({})],
    ['a handle of another kind', (h) => ({ ...h, kind: 'other' })],
    ['a missing buffer', (h) => ({ ...h, buffers: { ...h.buffers, slotWords: undefined } })],
    ['a buffer of the wrong size', (h) => ({ ...h, buffers: { ...h.buffers, slotWords: new SharedArrayBuffer(8) } })],
    ['options that do not match the buffers', (h) => ({ ...h, options: { ...h.options, capacity: 17 } })],
    ['bad options', (h) => ({ ...h, options: { ...h.options, capacity: -1 } })],
    ['no policy', (h) => ({ ...h, policy: null })],
    ['a bad policy', (h) => ({ ...h, policy: { ...h.policy, maxAttempts: 0 } })],
  ])('refuses %s with InvalidArgumentError', (_, garble) => {
    const queue = queueWith();
    expectInvalidSync(() => JobQueue.attach(bad(garble(queue.share()))));
  });

  it('closes one thread view without closing the queue for the others', () => {
    const queue = queueWith();
    const other = JobQueue.attach(queue.share());
    other.close();
    expectIllegalStateSync(() => other.submit('t'));
    expect(queue.submit('t')).toBe('J1');
  });
});
