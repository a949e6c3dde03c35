/**
 * Prometheus metrics of a queue and, optionally, of the WorkerPool that works
 * it, through prom-client (an optional peer dependency, loaded by the first
 * call). Nothing runs on a queue's hot path: job counts are read from
 * `stats()` when the registry is scraped, and the pool's counters from the
 * events its threads already batch for listeners (`pool.on`).
 */
import type { Registry } from 'prom-client';
import { InvalidArgumentError, describe } from '../errors.js';
import { readCallers } from '../options.js';
import { promClient } from '../optional.js';
import type { JobEvent, PoolEventName, PoolEvents } from '../pool/events.js';
import type { QueueStats } from '../types.js';
import type { HistogramSeries } from './duration-histogram.js';
import { EVENT_COUNTERS, MetricSet, type CollectedQueue, type CountedEvent, type Outcome } from './metric-set.js';

/** A `type` label value per queue at most; later types are counted under OTHER_TYPE, so a stream of new types cannot grow the series without bound. */
export const MAX_TYPE_LABELS = 50;
export const OTHER_TYPE = '(other)';
const DEFAULT_NAME = 'default';

type Awaitable<T> = T | Promise<T>;

/** What metrics read of a queue: a JobQueue (journaled or not) or a RedisJobQueue. */
export interface MetricsQueue {
  stats(): Awaitable<QueueStats>;
}

/** What metrics read of a WorkerPool: its events and its own counters. */
export interface MetricsPool {
  on<E extends PoolEventName>(name: E, listener: (event: PoolEvents[E]) => void): unknown;
  off<E extends PoolEventName>(name: E, listener: (event: PoolEvents[E]) => void): unknown;
  stats(): Awaitable<{ restarts: number; refused: number }>;
}

export interface MetricsTarget {
  /** The queue whose jobs are counted by status. */
  queue: MetricsQueue;
  /**
   * The pool that works `queue` (in this process): its jobs are counted as
   * they complete, fail, retry, die or stall, and timed. Without one, only
   * the gauges of `queue` are collected.
   */
  pool?: MetricsPool;
  /**
   * The `queue` label of every series, unique in the registry.
   * @default the queue's `name` (a RedisJobQueue's), else `"default"`
   */
  name?: string;
}

/**
 * Collects the metrics of `target.queue` (and `target.pool`) into a
 * prom-client `registry`, until `close()`. Several queues share one
 * registry, each under its own `name`. Throws InvalidArgumentError on a bad
 * argument, a name or queue already collected in that registry, or a
 * registry that has a metric of the same name made elsewhere; then nothing
 * is registered or listened to.
 */
export function collectMetrics(target: MetricsTarget, registry: Registry): QueueMetrics {
  const { queue, pool, name: given } = readTarget(target);
  checkRegistry(registry);
  const name = given ?? defaultName(queue);
  if (typeof name !== 'string' || name.trim() === '') throw new InvalidArgumentError(`Expected \`name\` to be a non-blank string, got ${describe(name)}`);
  return new QueueMetrics(queue, pool, name, MetricSet.of(registry, promClient()));
}

/** One queue's attachment to a registry. */
export class QueueMetrics {
  /** The `queue` label of its series. */
  readonly name: string;
  readonly #queue: MetricsQueue;
  readonly #pool: MetricsPool | undefined;
  readonly #set: MetricSet;
  readonly #collected: CollectedQueue;
  /** Label objects by type label (at most MAX_TYPE_LABELS types, then OTHER_TYPE). */
  readonly #types = new Map<string, TypeLabels>();
  readonly #listeners: { [E in CountedEvent]: (event: JobEvent) => void };
  /** Progress events since the last scrape (see MetricSet's leasehold_progress_updates_total). */
  #progressUpdates = 0;
  readonly #onProgress = (): void => {
    this.#progressUpdates++;
  };
  #closed = false;

  /** @internal Made by collectMetrics. */
  constructor(queue: MetricsQueue, pool: MetricsPool | undefined, name: string, set: MetricSet) {
    for (const other of attached) {
      if (other.#set === set && (other.#queue === queue || (pool !== undefined && other.#pool === pool))) {
        throw new InvalidArgumentError(`Expected a queue and pool not yet collected in this registry, but they already are, as ${JSON.stringify(other.name)}`);
      }
    }
    this.name = name;
    this.#queue = queue;
    this.#pool = pool;
    this.#set = set;
    const poolCounts = pool === undefined ? undefined : oneReadPerScrape(() => pool.stats());
    this.#collected = {
      name,
      jobCounts: oneReadPerScrape(() => queue.stats()),
      poolCounts: () => poolCounts?.(),
      typeLabels: () => [...this.#types.keys()],
      flushCounts: () => this.#flushCounts(),
      takeProgressUpdates: () => {
        const updates = this.#progressUpdates;
        this.#progressUpdates = 0;
        return updates;
      },
    };
    this.#listeners = {
      completed: (event) => this.#count('completed', event, 'completed'),
      failed: (event) => this.#count('failed', event, 'failed'),
      retrying: (event) => this.#count('retrying', event),
      dead: (event) => this.#count('dead', event),
      stalled: (event) => this.#count('stalled', event),
    };
    set.add(this.#collected);
    attached.add(this);
    if (pool !== undefined) {
      for (const event of COUNTED_EVENTS) pool.on(event, this.#listeners[event]);
      pool.on('progress', this.#onProgress);
    }
  }

  /**
   * Stops listening to the pool and removes this queue's series from the
   * registry; the last queue of a registry takes the metrics out of it. A
   * second call does nothing.
   */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#pool !== undefined) {
      for (const event of COUNTED_EVENTS) this.#pool.off(event, this.#listeners[event]);
      this.#pool.off('progress', this.#onProgress);
    }
    this.#set.remove(this.#collected);
    attached.delete(this);
  }

  /**
   * Counts an event in plain numbers, added to the counters when they are
   * collected (a scrape): prom-client's `inc` hashes its labels on every
   * call (about 200 ns here), which a pool's main thread paid per job. The
   * duration and the wait go into their series at once, through the handles
   * kept for them (see DurationHistogram), made on the first of each; an
   * attempt is timed once, by the event that ends it (completed or failed).
   */
  #count(counted: CountedEvent, event: JobEvent, outcome?: Outcome): void {
    const labels = this.#labelsOf(event.type);
    labels.pending[counted]++;
    if (outcome === undefined) return;
    labels.durations[outcome] ??= this.#set.duration.series({ ...labels.counters, outcome });
    labels.durations[outcome].observe(event.durationMs / 1000);
    labels.wait ??= this.#set.wait.series(labels.counters);
    labels.wait.observe(event.waitMillis / 1000);
  }

  /** Adds the pending counts to their counters: one `inc` per series that moved. */
  #flushCounts(): void {
    const { events } = this.#set;
    for (const { counters, pending } of this.#types.values()) {
      for (const counted of COUNTED_EVENTS) {
        if (pending[counted] === 0) continue;
        events[counted].inc(counters, pending[counted]);
        pending[counted] = 0;
      }
    }
  }

  /** The label objects and duration series of a job type, made once per type: an event costs a Map lookup, not new objects. */
  #labelsOf(type: string): TypeLabels {
    const known = this.#types.get(type);
    if (known !== undefined) return known;
    const label = this.#types.size < MAX_TYPE_LABELS ? type : OTHER_TYPE;
    const labels = this.#types.get(label) ?? {
      counters: { queue: this.name, type: label },
      durations: {},
      pending: { completed: 0, failed: 0, retrying: 0, dead: 0, stalled: 0 },
    };
    // Past the cap every new type shares OTHER_TYPE's labels: the Map holds at most MAX_TYPE_LABELS + 1 entries.
    this.#types.set(label, labels);
    return labels;
  }
}

interface TypeLabels {
  counters: { queue: string; type: string };
  /** The duration series of each outcome, once it has had one. */
  durations: Partial<Record<Outcome, HistogramSeries>>;
  /** The wait series, once an attempt ended. */
  wait?: HistogramSeries;
  /** Events counted since the last flush, by counter. */
  pending: Record<CountedEvent, number>;
}

const COUNTED_EVENTS = Object.keys(EVENT_COUNTERS) as CountedEvent[];
/** Every open attachment, to refuse attaching one queue or pool twice to a registry. */
const attached = new Set<QueueMetrics>();

/**
 * `read`, called once for all the metrics of one scrape: prom-client starts
 * every metric's collect in one go, so they share the read in flight.
 */
function oneReadPerScrape<T>(read: () => Awaitable<T>): () => Promise<T> {
  let inFlight: Promise<T> | undefined;
  return () => {
    inFlight ??= Promise.resolve().then(read).finally(() => {
      inFlight = undefined;
    });
    return inFlight;
  };
}

function defaultName(queue: MetricsQueue): unknown {
  const own = (queue as { name?: unknown }).name;
  return own === undefined ? DEFAULT_NAME : own;
}

/** `target`'s queue, pool and name, each read once (a getter cannot give the check one and the metrics another), the queue and pool checked. */
function readTarget(target: unknown): MetricsTarget {
  if (target === null || typeof target !== 'object') throw new InvalidArgumentError(`Expected \`target\` to be an object { queue, pool?, name? }, got ${describe(target)}`);
  const { queue, pool, name } = readCallers('target', () => {
    const { queue, pool, name } = target as Record<string, unknown>;
    return { queue, pool, name };
  });
  if (!hasMethods('queue', queue, ['stats'])) throw new InvalidArgumentError(`Expected \`queue\` to be a JobQueue or a RedisJobQueue, got ${describe(queue)}`);
  if (pool !== undefined && !hasMethods('pool', pool, ['on', 'off', 'stats'])) {
    throw new InvalidArgumentError(`Expected \`pool\` to be a WorkerPool or undefined, got ${describe(pool)}`);
  }
  return { queue, pool, name } as MetricsTarget;
}

function checkRegistry(registry: unknown): asserts registry is Registry {
  if (!hasMethods('registry', registry, ['registerMetric', 'getSingleMetric', 'removeSingleMetric', 'metrics'])) {
    throw new InvalidArgumentError(`Expected \`registry\` to be a prom-client Registry, got ${describe(registry)}`);
  }
}

/** Whether `value` (the caller's `name`) is an object with every method of `names`. */
function hasMethods(name: string, value: unknown, names: string[]): boolean {
  return value !== null && typeof value === 'object' && readCallers(name, () => names.every((method) => typeof (value as Record<string, unknown>)[method] === 'function'));
}
