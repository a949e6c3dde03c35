/**
 * A pool thread's heartbeats share one timer (src/pool/heartbeats.ts): each
 * running job must still beat every period, from its own start, until it
 * stops, whatever the other jobs do. Fake timers and a fake performance.now
 * make the times exact.
 */
import { spawnSync } from 'node:child_process';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Heartbeats } from '../../dist/pool/heartbeats.js';

const HEARTBEATS_URL = new URL('../../dist/pool/heartbeats.js', import.meta.url).href;

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
});
afterEach(() => {
  vi.useRealTimers();
});

/** The times (ms since the test began) at which a beat ran. */
function recorder(): { times: number[]; beat: () => void } {
  const start = performance.now();
  const times: number[] = [];
  return { times, beat: () => times.push(performance.now() - start) };
}

describe('heartbeats on one timer', () => {
  it('beats a job every period from its start until it stops', () => {
    const heartbeats = new Heartbeats();
    const job = recorder();
    const entry = heartbeats.start(100, job.beat);
    vi.advanceTimersByTime(350);
    expect(job.times).toEqual([100, 200, 300]);
    heartbeats.stop(entry);
    vi.advanceTimersByTime(1_000);
    expect(job.times).toEqual([100, 200, 300]);
  });

  it('beats a job started after a longer one on its own period, from its own start', () => {
    const heartbeats = new Heartbeats();
    const slow = recorder();
    heartbeats.start(1_000, slow.beat);
    vi.advanceTimersByTime(50);
    const fast = recorder();
    heartbeats.start(100, fast.beat);
    vi.advanceTimersByTime(1_000);
    expect(fast.times).toEqual([100, 200, 300, 400, 500, 600, 700, 800, 900, 1_000]);
    expect(slow.times).toEqual([1_000]);
  });

  it('beats the next of back-to-back jobs a period after its start, not after the first one\'s', () => {
    const heartbeats = new Heartbeats();
    const first = recorder();
    heartbeats.stop(heartbeats.start(100, first.beat));
    vi.advanceTimersByTime(30);
    const second = recorder();
    heartbeats.start(100, second.beat);
    vi.advanceTimersByTime(250);
    expect(first.times).toEqual([]);
    expect(second.times).toEqual([100, 200]);
  });

  it('goes on beating the others when a beat stops its own job (a lease found lost)', () => {
    const heartbeats = new Heartbeats();
    const other = recorder();
    heartbeats.start(100, other.beat);
    let lostBeats = 0;
    const lost = heartbeats.start(100, () => {
      lostBeats++;
      heartbeats.stop(lost);
    });
    vi.advanceTimersByTime(300);
    expect(lostBeats).toBe(1);
    expect(other.times).toEqual([100, 200, 300]);
  });

  it('leaves no timer once every job has stopped and its last arming has fired', () => {
    const heartbeats = new Heartbeats();
    heartbeats.stop(heartbeats.start(100, () => undefined));
    vi.advanceTimersByTime(100);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('keeps no process alive while a beat is pending: its timer is unref\'d', () => {
    const script = `import('${HEARTBEATS_URL}').then(({ Heartbeats }) => new Heartbeats().start(60_000, () => console.log('beat')))`;
    const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 20_000 });
    expect(child.error).toBeUndefined();
    expect({ status: child.status, stdout: child.stdout }).toEqual({ status: 0, stdout: '' });
  });
});
