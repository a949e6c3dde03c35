/**
 * The duration histogram counts in plain numbers instead of prom-client's
 * Histogram (see src/metrics/duration-histogram.ts); what a scrape reads must
 * not change. Each test feeds the same observations to both, each in a
 * registry of its own, and compares what the registries give.
 */
import { Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { DurationHistogram } from '../../dist/metrics/duration-histogram.js';

const NAME = 'leasehold_job_duration_seconds';
const HELP = 'How long attempts ran';
const BOUNDS = [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300];

type Labels = { queue: string; type: string; outcome: string };
const a: Labels = { queue: 'q', type: 'a', outcome: 'completed' };
const b: Labels = { queue: 'q', type: 'b "quoted"\n', outcome: 'failed' };

/** Both histograms, fed alike: `observe` goes to each. */
function pair(): { ours: Registry; theirs: Registry; observe(labels: Labels, value: number): void; histogram: DurationHistogram; reference: Histogram } {
  const ours = new Registry();
  const theirs = new Registry();
  const histogram = new DurationHistogram(NAME, HELP, BOUNDS, ours);
  const reference = new Histogram({ name: NAME, help: HELP, labelNames: ['queue', 'type', 'outcome'], buckets: BOUNDS, registers: [theirs] });
  return {
    ours, theirs, histogram, reference,
    observe(labels, value) {
      histogram.series(labels).observe(value);
      reference.observe(labels, value);
    },
  };
}

/** The same text, and the same JSON but for prom-client's empty `exemplar` fields (exemplars are off: nothing reads them). */
async function expectSameScrape(ours: Registry, theirs: Registry): Promise<void> {
  expect(await ours.metrics()).toBe(await theirs.metrics());
  const withoutExemplars = (json: unknown) => JSON.parse(JSON.stringify(json, (key, value) => (key === 'exemplar' && value == null ? undefined : value)));
  expect(await ours.getMetricsAsJSON()).toEqual(withoutExemplars(await theirs.getMetricsAsJSON()));
}

describe('the duration histogram', () => {
  it("scrapes as prom-client's Histogram does: values on a bound, between bounds, above the last, zero, in two series", async () => {
    const { ours, theirs, observe } = pair();
    for (const value of [0, 0.0005, 0.001, 0.0011, 0.005, 0.07, 1, 299.9, 300, 300.5, 1e6]) observe(a, value);
    for (const value of [0.002, 0.002, 42]) observe(b, value);
    await expectSameScrape(ours, theirs);
    expect(await ours.metrics()).toContain(`${NAME}_bucket{le="0.005",queue="q",type="a",outcome="completed"} 5`);
  });

  it('is one series per label set, whatever order the labels are written in', async () => {
    const { ours, theirs, observe, histogram, reference } = pair();
    observe(a, 0.5);
    const reordered = { outcome: 'completed', type: 'a', queue: 'q' };
    histogram.series(reordered).observe(0.25);
    reference.observe(reordered, 0.25);
    await expectSameScrape(ours, theirs);
    expect(await ours.metrics()).toContain(`${NAME}_count{queue="q",type="a",outcome="completed"} 2`);
  });

  it('drops a removed series from the scrape, and keeps the others', async () => {
    const { ours, theirs, observe, histogram, reference } = pair();
    observe(a, 0.5);
    observe(b, 0.5);
    histogram.remove(a);
    reference.remove(a);
    await expectSameScrape(ours, theirs);
    expect(await ours.metrics()).not.toContain('type="a"');
  });

  it('counts from zero after a reset, through the handle a feeder kept', async () => {
    const { ours, observe, histogram } = pair();
    const kept = histogram.series(a);
    observe(a, 0.5);
    ours.resetMetrics();
    kept.observe(0.02);
    const text = await ours.metrics();
    expect(text).toContain(`${NAME}_count{queue="q",type="a",outcome="completed"} 1`);
    expect(text).toContain(`${NAME}_sum{queue="q",type="a",outcome="completed"} 0.02`);
    expect(text).toContain(`${NAME}_bucket{le="0.01",queue="q",type="a",outcome="completed"} 0`);
    expect(text).toContain(`${NAME}_bucket{le="0.05",queue="q",type="a",outcome="completed"} 1`);
  });

  it('is refused by a registry that has a metric of its name already', () => {
    const { ours } = pair();
    expect(() => new DurationHistogram(NAME, HELP, BOUNDS, ours)).toThrow(/already been registered/);
  });
});
