/** The in-memory log store of a JobQueue instance: bounded per job, and it lets go of the logs of jobs no longer held. */
import { describe, expect, it } from 'vitest';
import { LogStore } from '../../dist/queue/job-logs.js';

describe('LogStore', () => {
  it('lets go of the logs of jobs no longer held once it holds logs of twice the capacity in jobs', () => {
    const store = new LogStore({ maxLogLines: 2, maxLogLineBytes: 16 }, 2);
    const held = new Set([1, 2, 3, 4, 5]);
    const exists = (num: number) => held.has(num);
    for (let num = 1; num <= 4; num++) store.append(num, `job ${num}`, exists);
    held.delete(1);
    held.delete(2);
    store.append(3, 'again', exists); // an existing log: no sweep
    expect(store.read(1).lines).toEqual(['job 1']);
    store.append(5, 'job 5', exists); // a fifth job's log: jobs 1 and 2 are let go
    expect(store.read(1)).toEqual({ lines: [], dropped: 0 });
    expect(store.read(2)).toEqual({ lines: [], dropped: 0 });
    expect(store.read(3)).toEqual({ lines: ['job 3', 'again'], dropped: 0 });
    expect(store.read(5).lines).toEqual(['job 5']);
  });

  it('hands out a copy: a caller that changes it changes no log', () => {
    const store = new LogStore({ maxLogLines: 2, maxLogLineBytes: 16 }, 2);
    store.append(1, 'a', () => true);
    store.read(1).lines.push('b');
    expect(store.read(1).lines).toEqual(['a']);
  });
});
