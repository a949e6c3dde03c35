/**
 * The leasehold metrics of one prom-client Registry: made when the first
 * queue is attached to it, shared by every queue attached after (each under
 * its own `queue` label), unregistered when the last one is detached.
 * Gauges and the pool's own counters are read at scrape time, in prom-client
 * `collect` callbacks. The event counters are counted by the attachments as
 * the pool's events arrive and added to at scrape time, in their `collect`;
 * the histograms are fed as the events arrive.
 */
import type * as PromClient from 'prom-client';
import type { Counter, Gauge, Metric, Registry } from 'prom-client';
import { InvalidArgumentError } from '../errors.js';
import type { QueueStats } from '../types.js';
import { DurationHistogram } from './duration-histogram.js';

/** The `status` label of `leasehold_jobs`: the counts of `stats()` (pending is ready + delayed, so it has no series of its own). */
export const STATUSES = ['ready', 'delayed', 'running', 'succeeded', 'dead', 'cancelled'] as const satisfies (keyof QueueStats)[];

/** The counters fed by pool events, by event name. */
export const EVENT_COUNTERS = {
  completed: ['leasehold_jobs_completed_total', 'Jobs whose handler returned (they are SUCCEEDED)'],
  failed: ['leasehold_jobs_failed_total', 'Attempts that failed: the handler threw or timed out, the type had no handler, or the thread died or hung'],
  retrying: ['leasehold_jobs_retried_total', 'Failed attempts after which the job will run again, after its backoff'],
  dead: ['leasehold_jobs_dead_total', 'Failed attempts after which the job was dead-lettered'],
  stalled: ['leasehold_jobs_stalled_total', 'Attempts that lost their lease: a heartbeat found it expired, or the thread died or hung'],
} as const;
export type CountedEvent = keyof typeof EVENT_COUNTERS;

/** Outcomes of the duration histogram. */
export const OUTCOMES = ['completed', 'failed'] as const;
export type Outcome = (typeof OUTCOMES)[number];

/** Seconds: a millisecond job to a five-minute one. */
const DURATION_BUCKETS = [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300];
/** Seconds: a job leased at once to one that waited an hour (a backlog, a paused queue). */
const WAIT_BUCKETS = [0.001, 0.01, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600];

/** What the set reads from one attached queue at scrape time. */
export interface CollectedQueue {
  /** Its `queue` label. */
  readonly name: string;
  jobCounts(): Promise<QueueStats>;
  /** The pool's own counters; undefined for a queue attached without a pool. */
  poolCounts(): Promise<{ restarts: number; refused: number }> | undefined;
  /** Every `type` label this queue's series were given, to remove them on detach. */
  typeLabels(): readonly string[];
  /** Adds the events counted since the last scrape to the event counters. */
  flushCounts(): void;
  /** The progress updates counted since the last scrape (then 0 again). */
  takeProgressUpdates(): number;
}

const sets = new WeakMap<Registry, MetricSet>();

export class MetricSet {
  readonly #registry: Registry;
  readonly #queues = new Map<string, CollectedQueue>();
  readonly jobs: Gauge<'queue' | 'status'>;
  readonly events: { [E in CountedEvent]: Counter<'queue' | 'type'> };
  readonly restarts: Counter<'queue'>;
  readonly refused: Counter<'queue'>;
  readonly progressUpdates: Counter<'queue'>;
  readonly duration: DurationHistogram;
  readonly wait: DurationHistogram;

  /** The registry's set: the one already there, or a new one registered in it. */
  static of(registry: Registry, prom: typeof PromClient): MetricSet {
    const existing = sets.get(registry);
    // (A set whose metrics were cleared from the registry behind its back is replaced.)
    if (existing !== undefined && existing.#isRegistered()) return existing;
    for (const name of METRIC_NAMES) {
      if (registry.getSingleMetric(name) !== undefined) {
        throw new InvalidArgumentError(`Expected a registry without a metric named ${name}, but it already has one that collectMetrics did not make`);
      }
    }
    const set = new MetricSet(registry, prom);
    sets.set(registry, set);
    return set;
  }

  private constructor(registry: Registry, prom: typeof PromClient) {
    this.#registry = registry;
    const registers = [registry];
    const queues = (): CollectedQueue[] => [...this.#queues.values()];
    const jobs = new prom.Gauge({
      name: 'leasehold_jobs', help: 'Jobs in the queue by status, read from stats() at scrape time', labelNames: ['queue', 'status'], registers,
      async collect() {
        const counted = await Promise.all(queues().map(async (queue) => ({ queue: queue.name, counts: await queue.jobCounts() })));
        for (const { queue, counts } of counted) for (const status of STATUSES) jobs.set({ queue, status }, counts[status]);
      },
    });
    this.jobs = jobs;
    const poolCounter = (name: string, help: string, field: 'restarts' | 'refused'): Counter<'queue'> => {
      const counter = new prom.Counter({
        name, help, labelNames: ['queue'], registers,
        async collect() {
          await Promise.all(queues().map(async (queue) => {
            const counts = await queue.poolCounts();
            if (counts === undefined) return;
            // The pool keeps the total; a counter cannot be set, so its series is made again at that total.
            counter.remove({ queue: queue.name });
            counter.inc({ queue: queue.name }, counts[field]);
          }));
        },
      });
      return counter;
    };
    this.restarts = poolCounter('leasehold_thread_restarts_total', 'Pool threads replaced after they crashed or hung', 'restarts');
    this.refused = poolCounter(
      'leasehold_zombie_refused_total', 'complete or fail calls of a pool thread refused because its lease had been lost (zombies)', 'refused',
    );
    const progressUpdates = new prom.Counter({
      name: PROGRESS_UPDATES,
      help: 'Progress values a pool wrote to its running jobs: one per job per watchdog tick in which its handler reported (a tight loop of ctx.progress counts once a tick)',
      labelNames: ['queue'], registers,
      collect() {
        for (const queue of queues()) {
          const updates = queue.takeProgressUpdates();
          if (updates > 0) progressUpdates.inc({ queue: queue.name }, updates);
        }
      },
    });
    this.progressUpdates = progressUpdates;
    const eventCounter = ([name, help]: readonly [string, string]) =>
      new prom.Counter({
        name, help, labelNames: ['queue', 'type'], registers,
        // Whichever counter is collected first adds every queue's pending counts; the others then find none.
        collect() {
          for (const queue of queues()) queue.flushCounts();
        },
      });
    this.events = {
      completed: eventCounter(EVENT_COUNTERS.completed),
      failed: eventCounter(EVENT_COUNTERS.failed),
      retrying: eventCounter(EVENT_COUNTERS.retrying),
      dead: eventCounter(EVENT_COUNTERS.dead),
      stalled: eventCounter(EVENT_COUNTERS.stalled),
    };
    this.duration = new DurationHistogram(
      'leasehold_job_duration_seconds', 'How long attempts ran (wall clock), by how they ended', DURATION_BUCKETS, registry,
    );
    this.wait = new DurationHistogram(
      'leasehold_job_wait_seconds', "How long jobs waited for each attempt's lease: from their runAt (or submit, if later) to the lease's start, queue clock",
      WAIT_BUCKETS, registry,
    );
  }

  /** Collects `queue` from now on. Its name must be new to this registry. */
  add(queue: CollectedQueue): void {
    if (this.#queues.has(queue.name)) {
      throw new InvalidArgumentError(`Expected a \`name\` not yet collected in this registry, got ${JSON.stringify(queue.name)}: detach the other one first, or name this one apart`);
    }
    this.#queues.set(queue.name, queue);
  }

  /** Whether `queue` is collected here already. */
  has(queue: CollectedQueue): boolean {
    return this.#queues.get(queue.name) === queue;
  }

  /** Stops collecting `queue` and removes its series; the last one out unregisters the metrics. */
  remove(queue: CollectedQueue): void {
    if (!this.has(queue)) return;
    this.#queues.delete(queue.name);
    const name = queue.name;
    for (const status of STATUSES) this.jobs.remove({ queue: name, status });
    this.restarts.remove({ queue: name });
    this.refused.remove({ queue: name });
    this.progressUpdates.remove({ queue: name });
    for (const type of queue.typeLabels()) {
      for (const counter of Object.values(this.events)) counter.remove({ queue: name, type });
      for (const outcome of OUTCOMES) this.duration.remove({ queue: name, type, outcome });
      this.wait.remove({ queue: name, type });
    }
    if (this.#queues.size > 0) return;
    for (const [name, metric] of this.#metrics()) {
      if (this.#registry.getSingleMetric(name) === metric) this.#registry.removeSingleMetric(name);
    }
    if (sets.get(this.#registry) === this) sets.delete(this.#registry);
  }

  /** Each metric by its name. */
  #metrics(): [string, Metric | DurationHistogram][] {
    return [this.jobs, ...Object.values(this.events), this.restarts, this.refused, this.progressUpdates, this.duration, this.wait].map((metric) => [nameOf(metric), metric]);
  }

  #isRegistered(): boolean {
    return this.#metrics().every(([name, metric]) => this.#registry.getSingleMetric(name) === metric);
  }
}

/** A counter with the `queue` label only: progress is reported per job, and a job label would grow without bound. */
const PROGRESS_UPDATES = 'leasehold_progress_updates_total';

const METRIC_NAMES = [
  'leasehold_jobs', ...Object.values(EVENT_COUNTERS).map(([name]) => name),
  'leasehold_thread_restarts_total', 'leasehold_zombie_refused_total', PROGRESS_UPDATES, 'leasehold_job_duration_seconds', 'leasehold_job_wait_seconds',
];

/** prom-client keeps a metric's name as a plain property its typings do not declare (ours declares it). */
function nameOf(metric: Metric | DurationHistogram): string {
  return (metric as unknown as { name: string }).name;
}
