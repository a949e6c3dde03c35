/**
 * The main thread's sampling of progress words (ProgressWatch), on buffers laid out as a pool's: which leases it
 * extends, and that reports of one job never extend the next job's lease in the same place.
 */
import { describe, expect, it } from 'vitest';
import { ProgressWatch } from '../../dist/pool/progress-watch.js';
import { ProgressPlace } from '../../dist/pool/job-context.js';
import { INFLIGHT_ATTEMPT, INFLIGHT_JOB_NUM, INFLIGHT_TOKEN, allocateControl, inflightAt, progressAt } from '../../dist/pool/layout.js';

const LEASE = 300;

function setup() {
  const control = allocateControl(1, 1);
  const inflight = new Float64Array(control.inflight);
  const extends_: [string, number, number][] = [];
  const writes: [string, number, number][] = [];
  const queue = {
    extend: (jobId: string, token: number, ms: number) => (extends_.push([jobId, token, ms]), 0),
    progress: (jobId: string, token: number, value: number) => void writes.push([jobId, token, value]),
  };
  const watch = new ProgressWatch(queue, inflight, control.progress, 1, 1, LEASE);
  const place = new ProgressPlace(new Int32Array(control.progress), progressAt(0, 1, 0));
  const publish = (jobNum: number, token: number) => {
    const at = inflightAt(0, 1, 0);
    inflight[at + INFLIGHT_TOKEN] = token;
    inflight[at + INFLIGHT_ATTEMPT] = 1;
    inflight[at + INFLIGHT_JOB_NUM] = jobNum;
  };
  // As a pool thread starts a job: the place begins it, then its inflight words are written.
  const run = (jobNum: number, token: number) => {
    place.begin(token);
    publish(jobNum, token);
  };
  return { watch, place, run, publish, extends_, writes };
}

describe('ProgressWatch', () => {
  it('extends the running job\'s lease, with its own token, once reports came and a third of a lease passed', () => {
    const { watch, place, run, extends_ } = setup();
    run(1, 7);
    expect(watch.sample(0, 0, undefined)).toBe(false); // baseline
    place.report(10);
    const heard: unknown[] = [];
    expect(watch.sample(0, 50, (r) => heard.push(r))).toBe(true);
    expect(extends_).toEqual([]); // too soon after the baseline
    expect(heard).toEqual([{ jobId: 'J1', attempt: 1, progress: 10 }]);
    expect(watch.sample(0, LEASE / 3 + 1, undefined)).toBe(false);
    expect(extends_).toEqual([['J1', 7, LEASE]]); // the report that came too soon still counts
    expect(watch.sample(0, LEASE, undefined)).toBe(false);
    expect(extends_).toHaveLength(1); // no report since: no extend
  });

  it('never extends the next job\'s lease for the reports of the job before it in the same place', () => {
    const { watch, place, run, extends_ } = setup();
    run(1, 7);
    watch.sample(0, 0, undefined);
    // J1 reports, ends; J2 starts in the place before the next sample, and never reports.
    for (let i = 0; i < 100; i++) place.report(i);
    run(2, 8);
    expect(watch.sample(0, LEASE, undefined)).toBe(false);
    expect(watch.sample(0, 2 * LEASE, undefined)).toBe(false);
    expect(extends_).toEqual([]);
    place.report(1);
    expect(watch.sample(0, 3 * LEASE, undefined)).toBe(true);
    expect(extends_).toEqual([['J2', 8, LEASE]]);
  });

  it('writes the value sampled to the job once per sample, with the token read with it, and only when reports moved', () => {
    const { watch, place, run, writes } = setup();
    run(1, 7);
    watch.sample(0, 0, undefined);
    for (let i = 1; i <= 1000; i++) place.report(i); // a tight loop: one write for the whole of it
    watch.sample(0, 20, undefined);
    expect(writes).toEqual([['J1', 7, 1000]]);
    watch.sample(0, 40, undefined);
    expect(writes).toHaveLength(1); // nothing reported since
    place.report(2000);
    run(2, 8); // J1 ended before the sample: its report is not written under J2's token, nor J1's
    watch.sample(0, 60, undefined);
    place.report(5);
    watch.sample(0, 80, undefined);
    expect(writes).toEqual([['J1', 7, 1000], ['J2', 8, 5]]);
  });

  it('counts the reports a job made before its first sample as its own, and none of the job before it', () => {
    const { watch, place, run, writes } = setup();
    run(1, 7);
    for (let i = 1; i <= 50; i++) place.report(i); // J1 reports at once, before any sample
    const heard: unknown[] = [];
    expect(watch.sample(0, 0, (r) => heard.push(r))).toBe(true);
    place.report(60); // J1's last report, never sampled: J1 ends
    run(2, 2 ** 31 + 9); // J2 begins (its LEASE word: the token modulo 2^31) and reports nothing
    expect(watch.sample(0, 20, (r) => heard.push(r))).toBe(false);
    place.report(3);
    expect(watch.sample(0, 40, (r) => heard.push(r))).toBe(true);
    expect(writes).toEqual([['J1', 7, 50], ['J2', 2 ** 31 + 9, 3]]);
    expect(heard).toEqual([{ jobId: 'J1', attempt: 1, progress: 50 }, { jobId: 'J2', attempt: 1, progress: 3 }]);
  });

  it('waits to sample a job until the place began it (LEASE names its token), then counts from BASE', () => {
    const { watch, place, publish, writes } = setup();
    place.report(1); // a report of the job before, in this place
    publish(1, 7); // J1's inflight words seen before the place's begin(7) (a torn look)
    expect(watch.sample(0, 0, undefined)).toBe(false);
    expect(writes).toEqual([]);
    place.begin(7);
    place.report(4);
    expect(watch.sample(0, 20, undefined)).toBe(true);
    expect(writes).toEqual([['J1', 7, 4]]); // the report of the job before is not J1's
  });

  it('goes on when the queue refuses a write (the lease ended), synchronously or by a rejection', () => {
    const control = allocateControl(1, 1);
    const inflight = new Float64Array(control.inflight);
    let calls = 0;
    const refuse = (async: boolean) => () => {
      calls++;
      if (async) return Promise.reject(new Error('stale'));
      throw new Error('stale');
    };
    for (const async of [false, true]) {
      const queue = { extend: () => 0, progress: refuse(async) as () => void };
      const watch = new ProgressWatch(queue, inflight, control.progress, 1, 1, LEASE);
      const place = new ProgressPlace(new Int32Array(control.progress), progressAt(0, 1, 0));
      const at = inflightAt(0, 1, 0);
      place.begin(7);
      inflight[at + INFLIGHT_TOKEN] = 7;
      inflight[at + INFLIGHT_JOB_NUM] = 1;
      watch.sample(0, 0, undefined);
      place.report(1);
      expect(watch.sample(0, 20, undefined)).toBe(true);
    }
    expect(calls).toBe(2);
  });

  it('keeps a value as a float32: integers exact to 2^24, fractions to 7 significant digits', () => {
    const { watch, place, run } = setup();
    run(1, 7);
    watch.sample(0, 0, undefined);
    const heard: number[] = [];
    for (const value of [33.33, 16_777_216, -0.125, 123_456_789]) {
      place.report(value);
      watch.sample(0, 0, (r) => heard.push(r.progress));
    }
    expect(heard).toEqual([33.33, 16_777_216, -0.125, 123_456_792]);
  });
});
