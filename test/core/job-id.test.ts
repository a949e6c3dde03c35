/**
 * Job ids are "J" and the job's number in decimal. jobIdOf builds them from a
 * table of three-digit endings (to keep V8's number-to-string cache out of a
 * million submits): it must give exactly what `J${n}` gives, for every number.
 */
import { describe, expect, it } from 'vitest';
import { jobIdOf } from '../../dist/job-id.js';
import { parseJobId } from '../../dist/validate/job-id.js';
import { prng, testSeed } from '../support/helpers.js';

describe('job ids', () => {
  it('are J and the number in decimal, around every power of ten up to 2^53 - 1', () => {
    const numbers = [1, 2, 9, 10, 99, 100, 999, 1000, 1001, 1009, 1010, 1099, 1100, 9999, 10_000, 10_001, 999_999, 1_000_000, 1_000_999, 2 ** 31, 2 ** 32 + 5];
    for (let p = 1; p <= 16; p++) numbers.push(10 ** p - 1, 10 ** p, 10 ** p + 1);
    numbers.push(2 ** 53 - 2, 2 ** 53 - 1);
    for (const n of numbers.filter((n) => n <= 2 ** 53 - 1)) {
      expect(jobIdOf(n)).toBe(`J${n}`);
      expect(parseJobId(jobIdOf(n))).toBe(n);
    }
  });

  it('match J${n} for 100,000 numbers of every size, seeded', () => {
    const random = prng(testSeed('job ids'));
    for (let i = 0; i < 100_000; i++) {
      const n = Math.floor(random() * 10 ** (1 + Math.floor(random() * 15))) + 1;
      expect(jobIdOf(n)).toBe(`J${n}`);
    }
  });

  it('match J${n} for every number up to 20,000', () => {
    const wrong: number[] = [];
    for (let n = 1; n <= 20_000; n++) if (jobIdOf(n) !== `J${n}`) wrong.push(n);
    expect(wrong).toEqual([]);
  });
});
