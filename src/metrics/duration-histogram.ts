/**
 * The job duration histogram, counted in plain numbers. prom-client's
 * Histogram hashes its labels on every `observe` (about 320 ns here, most of
 * what collectMetrics cost a pool's main thread per job); here a caller keeps
 * the handle of each series it feeds, and an observation finds its bucket and
 * adds to three numbers. The registry reads it like any prom-client metric:
 * `get` and `getForPromString` give what prom-client's Histogram gives for the
 * same observations (cumulative `_bucket` samples with `le`, `+Inf`, then
 * `_sum` and `_count`, series in the order they were made), so the scrape is
 * the same text and a cluster's AggregatorRegistry sums it the same way.
 */
import type { Metric, Registry } from 'prom-client';

type Labels = Readonly<Record<string, string>>;

/** One label set's counts. */
export class HistogramSeries {
  readonly labels: Labels;
  /** Observations by bucket: counts[i] took values in (bounds[i - 1], bounds[i]]; those above the last bound are only in `count`. */
  readonly counts: Float64Array;
  sum = 0;
  count = 0;
  readonly #bounds: readonly number[];

  constructor(labels: Labels, bounds: readonly number[]) {
    this.labels = labels;
    this.#bounds = bounds;
    this.counts = new Float64Array(bounds.length);
  }

  observe(value: number): void {
    const bounds = this.#bounds;
    let i = 0;
    while (i < bounds.length && value > bounds[i]!) i++;
    if (i < bounds.length) this.counts[i]!++;
    this.sum += value;
    this.count++;
  }

  zero(): void {
    this.counts.fill(0);
    this.sum = 0;
    this.count = 0;
  }
}

/** A sample as prom-client's registry reads it: `labels` first in the text, then `sharedLabels` (the series'). */
interface Sample {
  labels: Record<string, string | number>;
  sharedLabels?: Labels;
  value: number;
  metricName: string;
}

export class DurationHistogram {
  readonly name: string;
  readonly help: string;
  readonly type = 'histogram';
  /** How a cluster's AggregatorRegistry combines workers' values, as for prom-client's Histogram. */
  readonly aggregator = 'sum';
  readonly #bounds: readonly number[];
  readonly #series = new Map<string, HistogramSeries>();

  /** `bounds`: the buckets' upper bounds, ascending. Registers itself in `registry`. */
  constructor(name: string, help: string, bounds: readonly number[], registry: Registry) {
    this.name = name;
    this.help = help;
    this.#bounds = bounds;
    // The registry needs only name, help, type, aggregator, get and reset of a metric; its typings name prom-client's own classes.
    registry.registerMetric(this as unknown as Metric);
  }

  /** The series of `labels` (made, at zero, on first use): keep it, and observe into it. */
  series(labels: Labels): HistogramSeries {
    const key = keyOf(labels);
    let series = this.#series.get(key);
    if (series === undefined) {
      series = new HistogramSeries({ ...labels }, this.#bounds);
      this.#series.set(key, series);
    }
    return series;
  }

  /** Drops the series of `labels` from the scrape; a handle of it still in use counts into nothing. */
  remove(labels: Labels): void {
    this.#series.delete(keyOf(labels));
  }

  /** The registry's resetMetrics: every series back to zero, kept (its handles are held by the feeders). */
  reset(): void {
    for (const series of this.#series.values()) series.zero();
  }

  async getForPromString(): Promise<{ name: string; help: string; type: string; aggregator: string; values: Sample[] }> {
    const values: Sample[] = [];
    for (const series of this.#series.values()) {
      const sharedLabels = series.labels;
      let cumulative = 0;
      this.#bounds.forEach((le, i) => {
        cumulative += series.counts[i]!;
        values.push({ labels: { le }, sharedLabels, value: cumulative, metricName: `${this.name}_bucket` });
      });
      values.push({ labels: { le: '+Inf' }, sharedLabels, value: series.count, metricName: `${this.name}_bucket` });
      values.push({ labels: {}, sharedLabels, value: series.sum, metricName: `${this.name}_sum` });
      values.push({ labels: {}, sharedLabels, value: series.count, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  /** The same samples with each series' labels after its own (`le` first), as prom-client's `get` gives them. */
  async get(): Promise<{ name: string; help: string; type: string; aggregator: string; values: Sample[] }> {
    const data = await this.getForPromString();
    return { ...data, values: data.values.map(({ labels, sharedLabels, value, metricName }) => ({ labels: { ...labels, ...sharedLabels }, value, metricName })) };
  }
}

/** One key per label set, whatever the order its names were written in. */
function keyOf(labels: Labels): string {
  return JSON.stringify(Object.entries(labels).sort(([a], [b]) => (a < b ? -1 : 1)));
}
