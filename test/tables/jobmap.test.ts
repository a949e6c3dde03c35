import { describe, expect, it } from 'vitest';
import { INITIAL_SLOTS } from '../../dist/shm/memory/layout.js';
import { placeJob, twoViews } from './tables.js';

/**
 * The job map (src/shm/tables/jobmap.ts), through its own API: job number → slot,
 * a job in its home slot ((n - 1) % capacity) with no entry, the others in an
 * open-addressing table keyed by the slot's own JOB_NUM.
 */
describe('job map', () => {
  it('finds a job in its home slot without an entry, and one elsewhere by its entry', () => {
    const capacity = 4 * INITIAL_SLOTS;
    const { first } = twoViews(capacity);
    placeJob(first, 0, 1);
    expect(first.jobMap.get(1)).toBe(0);
    // Job 2 placed in slot 7, away from its home slot 1.
    placeJob(first, 7, 2);
    expect(first.jobMap.get(2)).toBe(-1);
    first.jobMap.set(2, 7);
    expect(first.jobMap.get(2)).toBe(7);
    first.jobMap.delete(2, 7);
    expect(first.jobMap.get(2)).toBe(-1);
  });

  it('keeps every entry of many jobs away from home, and removes them without losing the others', () => {
    const capacity = 4 * INITIAL_SLOTS;
    const { first } = twoViews(capacity);
    // Job n in slot (n * 7) % capacity: mostly away from home.
    const jobs = Array.from({ length: 3 * INITIAL_SLOTS }, (_, i) => i + 1);
    const slotOf = (n: number) => (n * 7) % capacity;
    for (const n of jobs) {
      placeJob(first, slotOf(n), n);
      first.jobMap.set(n, slotOf(n));
    }
    expect(jobs.every((n) => first.jobMap.get(n) === slotOf(n))).toBe(true);
    for (const n of jobs.filter((n) => n % 3 === 0)) first.jobMap.delete(n, slotOf(n));
    expect(jobs.every((n) => first.jobMap.get(n) === (n % 3 === 0 && slotOf(n) !== n - 1 ? -1 : slotOf(n)))).toBe(true);
  });

  it('reads a home slot past the grown slots as no job, and finds the job once another view grew the slots', () => {
    const capacity = 8 * INITIAL_SLOTS;
    const { first, second } = twoViews(capacity);
    const n = 5 * INITIAL_SLOTS + 1;
    expect(second.jobMap.get(n)).toBe(-1);
    placeJob(first, n - 1, n);
    expect(second.jobMap.get(n)).toBe(n - 1);
    const far = 6 * INITIAL_SLOTS;
    placeJob(first, far, n + 1);
    first.jobMap.set(n + 1, far);
    expect(second.jobMap.get(n + 1)).toBe(far);
  });
});
