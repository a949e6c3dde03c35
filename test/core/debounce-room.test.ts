/**
 * A debounced submit whose new payload finds no room in the arena (the
 * shared-memory backend's own limit): refused with QueueFullError, and the
 * holder keeps its payload and its runAt — neither half of the edit stays.
 */
import { describe, expect, it } from 'vitest';
import { JobQueue, ManualClock, QueueFullError, RetryPolicy } from '../../dist/index.js';
import { expectErrorSync } from '../support/helpers.js';

describe('a debounced submit without room for its payload', () => {
  it('is refused with QueueFullError and changes nothing; with room it replaces as ever', () => {
    const clock = new ManualClock(0);
    const queue = new JobQueue(clock, new RetryPolicy(3, 0, 0), { capacity: 8, maxPayloadBytes: 4_000, arenaBytes: 10_080 });
    try {
      const id = queue.submit('t', 'a'.repeat(4_000), { key: 'k', debounceMillis: 100 });
      const filler = queue.submit('t', 'b'.repeat(4_000));
      clock.advance(50);
      const before = { ...queue.view(id) };
      const stats = queue.stats();
      expectErrorSync(() => queue.submit('t', 'c'.repeat(4_000), { key: 'k', debounceMillis: 100 }), QueueFullError as never, 'ERR_QUEUE_FULL');
      expect({ ...queue.view(id) }).toEqual(before);
      expect(queue.view(id).nextRunAt).toBe(100);
      expect(queue.stats()).toEqual(stats);
      queue.cancel(filler);
      queue.remove(filler);
      expect(queue.submit('t', 'c'.repeat(4_000), { key: 'k', debounceMillis: 100 })).toBe(id);
      expect(queue.view(id)).toMatchObject({ payload: 'c'.repeat(4_000), nextRunAt: 150 });
    } finally {
      queue.close();
    }
  });
});
