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
  const queue = { extend: (jobId: string, token: number, ms: number) => (extends_.push([jobId, token, ms]), 0) };
  const watch = new ProgressWatch(queue, inflight, control.progress, 1, 1, LEASE);
  const place = new ProgressPlace(new Int32Array(control.progress), progressAt(0, 1, 0));
  const run = (jobNum: number, token: number) => {
    const at = inflightAt(0, 1, 0);
    inflight[at + INFLIGHT_TOKEN] = token;
    inflight[at + INFLIGHT_ATTEMPT] = 1;
    inflight[at + INFLIGHT_JOB_NUM] = jobNum;
  };
  return { watch, place, run, extends_ };
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
