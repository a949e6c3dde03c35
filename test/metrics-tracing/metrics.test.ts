/**
 * Prometheus metrics of a real WorkerPool (real threads) on each backend:
 * after a known mix of jobs, a scrape of the text format holds exactly the
 * counts the mix implies — every series, none missing, none extra.
 * Events reach the main thread in batches, so each test waits (bounded) until
 * the scrape shows the last event it expects, then checks everything.
 */
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { JobQueue, RetryPolicy, WorkerPool, collectMetrics, systemClock, type QueueMetrics } from '../../dist/index.js';
import { waitUntil } from '../support/helpers.js';
import { scrape, series } from './metrics-scrape.js';
import { describePoolBackends, startPool } from '../support/pool-backends.js';
import { HANDLERS, scratch, track, trackQueue } from '../support/pool-harness.js';

const Q = 'jobs';
/** The label text of a `leasehold_jobs` series. */
const status = (s: string) => `{queue="${Q}",status="${s}"}`;
const typed = (type: string) => `{queue="${Q}",type="${type}"}`;
const outcome = (type: string, o: string) => `{queue="${Q}",type="${type}",outcome="${o}"}`;

describePoolBackends('Prometheus metrics of a pool', (backend) => {
  it('scrapes exact gauges, counters and duration counts after successes, retries, a permanent failure and a dead letter', { timeout: 30_000 }, async () => {
    const s = scratch();
    const { queue, pool } = await startPool(backend, new RetryPolicy(3, 0, 0), { threads: 2, leaseMillis: 10_000 });
    const registry = new Registry();
    const metrics: QueueMetrics = collectMetrics({ queue, pool, name: Q }, registry);
    for (let n = 0; n < 5; n++) await queue.submit('noop', s.payload({ n }));
    for (let n = 0; n < 2; n++) await queue.submit('flaky', s.payload({ succeedOn: 2 }));
    await queue.submit('alwaysFails', s.payload());
    await queue.submit('poison', s.payload());
    await queue.submit('slow', s.payload({ ms: 120 }));
    const later = Date.now() + 3_600_000;
    await queue.submit('noop', s.payload(), 0, later);
    // Both backends cancel; the pool tests' queue type does not name it.
    await (queue as unknown as { cancel(jobId: string): unknown }).cancel(await queue.submit('noop', s.payload(), 0, later));

    await waitUntil('every event reached the metrics', async () => {
      const samples = await scrape(registry);
      return series(samples, 'leasehold_jobs_completed_total')[typed('slow')] === 1 &&
        Object.values(series(samples, 'leasehold_jobs_completed_total')).reduce((a, b) => a + b, 0) === 8 &&
        Object.values(series(samples, 'leasehold_jobs_dead_total')).reduce((a, b) => a + b, 0) === 2;
    }, 20_000);
    const samples = await scrape(registry);

    expect(series(samples, 'leasehold_jobs')).toEqual({
      [status('ready')]: 0, [status('delayed')]: 1, [status('running')]: 0,
      [status('succeeded')]: 8, [status('dead')]: 2, [status('cancelled')]: 1,
    });
    expect(series(samples, 'leasehold_jobs_completed_total')).toEqual({ [typed('noop')]: 5, [typed('flaky')]: 2, [typed('slow')]: 1 });
    expect(series(samples, 'leasehold_jobs_failed_total')).toEqual({ [typed('flaky')]: 2, [typed('alwaysFails')]: 3, [typed('poison')]: 1 });
    expect(series(samples, 'leasehold_jobs_retried_total')).toEqual({ [typed('flaky')]: 2, [typed('alwaysFails')]: 2 });
    expect(series(samples, 'leasehold_jobs_dead_total')).toEqual({ [typed('alwaysFails')]: 1, [typed('poison')]: 1 });
    expect(series(samples, 'leasehold_jobs_stalled_total')).toEqual({});
    expect(series(samples, 'leasehold_thread_restarts_total')).toEqual({ [`{queue="${Q}"}`]: 0 });
    expect(series(samples, 'leasehold_zombie_refused_total')).toEqual({ [`{queue="${Q}"}`]: 0 });
    expect(series(samples, 'leasehold_job_duration_seconds_count')).toEqual({
      [outcome('noop', 'completed')]: 5, [outcome('flaky', 'completed')]: 2, [outcome('slow', 'completed')]: 1,
      [outcome('flaky', 'failed')]: 2, [outcome('alwaysFails', 'failed')]: 3, [outcome('poison', 'failed')]: 1,
    });
    // One wait per attempt: the delayed job never ran, the retried ones waited once per attempt.
    expect(series(samples, 'leasehold_job_wait_seconds_count')).toEqual({
      [typed('noop')]: 5, [typed('flaky')]: 4, [typed('slow')]: 1, [typed('alwaysFails')]: 3, [typed('poison')]: 1,
    });
    // Seconds, not milliseconds: the 120 ms job took about 0.12 (its timer may fire up to 1 ms early) and far less than 120.
    const slowSeconds = series(samples, 'leasehold_job_duration_seconds_sum')[outcome('slow', 'completed')]!;
    expect(slowSeconds).toBeGreaterThanOrEqual(0.119);
    expect(slowSeconds).toBeLessThan(60);
    expect(samples.get(`leasehold_job_duration_seconds_bucket{le="0.1",queue="${Q}",type="slow",outcome="completed"}`)).toBe(0);
    expect(samples.get(`leasehold_job_duration_seconds_bucket{le="+Inf",queue="${Q}",type="slow",outcome="completed"}`)).toBe(1);
    // The gauges are the queue's own counts at the moment of the scrape.
    const stats = await queue.stats();
    expect([stats.ready, stats.delayed, stats.running, stats.succeeded, stats.dead, stats.cancelled]).toEqual([0, 1, 0, 8, 2, 1]);
    metrics.close();
  });
});

describe('Prometheus metrics of threads that die or lose their lease', { timeout: 30_000 }, () => {
  it('counts a thread restart with the stall, failure and retry of its job, then the retry completing', async () => {
    const s = scratch();
    const queue = trackQueue(new JobQueue(systemClock, new RetryPolicy(3, 0, 0)));
    const pool = track(new WorkerPool(queue, { handlers: HANDLERS, threads: 1, leaseMillis: 10_000 }));
    const registry = new Registry();
    const metrics = collectMetrics({ queue, pool, name: Q }, registry);
    await pool.start();
    queue.submit('crashByExit', s.payload());
    await waitUntil('the retry completed', async () => series(await scrape(registry), 'leasehold_jobs_completed_total')[typed('crashByExit')] === 1);
    const samples = await scrape(registry);
    expect(series(samples, 'leasehold_thread_restarts_total')).toEqual({ [`{queue="${Q}"}`]: 1 });
    expect(series(samples, 'leasehold_jobs_stalled_total')).toEqual({ [typed('crashByExit')]: 1 });
    expect(series(samples, 'leasehold_jobs_failed_total')).toEqual({ [typed('crashByExit')]: 1 });
    expect(series(samples, 'leasehold_jobs_retried_total')).toEqual({ [typed('crashByExit')]: 1 });
    expect(series(samples, 'leasehold_jobs_dead_total')).toEqual({});
    expect(series(samples, 'leasehold_zombie_refused_total')).toEqual({ [`{queue="${Q}"}`]: 0 });
    metrics.close();
  });

  it('counts the refused late complete of a thread that blocked past its lease (a zombie)', async () => {
    const s = scratch();
    const queue = trackQueue(new JobQueue(systemClock, new RetryPolicy(3, 0, 0)));
    const leaseMillis = 1_000;
    const pool = track(new WorkerPool(queue, { handlers: HANDLERS, threads: 2, leaseMillis }));
    const registry = new Registry();
    const metrics = collectMetrics({ queue, pool, name: Q }, registry);
    await pool.start();
    const id = queue.submit('block', s.payload({ blockMillis: leaseMillis + 300 }));
    await waitUntil('the zombie was refused and the retry completed', async () => {
      const samples = await scrape(registry);
      return series(samples, 'leasehold_zombie_refused_total')[`{queue="${Q}"}`] === 1 && series(samples, 'leasehold_jobs_completed_total')[typed('block')] === 1;
    });
    const samples = await scrape(registry);
    expect(s.events('zombie-returns', id)).toHaveLength(1);
    expect(series(samples, 'leasehold_thread_restarts_total')).toEqual({ [`{queue="${Q}"}`]: 0 });
    // The expired lease was processed by the queue, not reported by a thread: it is no failed event.
    expect(series(samples, 'leasehold_jobs_failed_total')).toEqual({});
    expect(series(samples, 'leasehold_jobs_completed_total')).toEqual({ [typed('block')]: 1 });
    expect(series(samples, 'leasehold_job_duration_seconds_count')).toEqual({ [outcome('block', 'completed')]: 1 });
    metrics.close();
  });
});
