/**
 * collectMetrics at its edge, without threads: arguments, several queues in
 * one registry, close, the cap on type labels, and a pool's listeners (a
 * stand-in pool that records on/off and emits events by hand).
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Counter, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import {
  JobQueue, MAX_TYPE_LABELS, OTHER_TYPE, RetryPolicy, collectMetrics, systemClock,
  type JobEvent, type MetricsPool, type PoolEventName, type PoolEvents,
} from '../../dist/index.js';
import { bad, expectInvalidSync } from '../support/helpers.js';
import { scrape, series } from './metrics-scrape.js';

function queue(): JobQueue {
  return new JobQueue(systemClock, new RetryPolicy(3, 0, 0));
}

/** A pool as metrics see it: events emitted by the test, listeners recorded. */
class StandInPool implements MetricsPool {
  readonly listeners = new Map<PoolEventName, Set<(event: JobEvent) => void>>();
  restarts = 0;
  refused = 0;
  on<E extends PoolEventName>(name: E, listener: (event: PoolEvents[E]) => void): this {
    if (!this.listeners.has(name)) this.listeners.set(name, new Set());
    this.listeners.get(name)!.add(listener as (event: JobEvent) => void);
    return this;
  }
  off<E extends PoolEventName>(name: E, listener: (event: PoolEvents[E]) => void): this {
    this.listeners.get(name)?.delete(listener as (event: JobEvent) => void);
    return this;
  }
  stats(): { restarts: number; refused: number } {
    return { restarts: this.restarts, refused: this.refused };
  }
  emit(name: PoolEventName, event: JobEvent): void {
    for (const listener of this.listeners.get(name) ?? []) listener(event);
  }
  listening(): number {
    return [...this.listeners.values()].reduce((n, set) => n + set.size, 0);
  }
}

const event = (type: string, durationMs = 5, waitMillis = 0): JobEvent => ({ jobId: 'J1', type, attempt: 1, waitMillis, durationMs });

describe('collectMetrics arguments', () => {
  it('refuses a bad target, queue, pool, name or registry, and registers nothing then', () => {
    const registry = new Registry();
    const q = queue();
    expectInvalidSync(() => collectMetrics(bad(null), registry));
    expectInvalidSync(() => collectMetrics(bad({ queue: {} }), registry));
    expectInvalidSync(() => collectMetrics({ queue: q, pool: bad({ on() {} }) }, registry));
    expectInvalidSync(() => collectMetrics({ queue: q, name: bad('  ') }, registry));
    expectInvalidSync(() => collectMetrics({ queue: q, name: bad(7) }, registry));
    expectInvalidSync(() => collectMetrics({ queue: q }, bad({})));
    expect(registry.getMetricsAsArray()).toEqual([]);
  });

  it('refuses a registry that already has a metric of its names made elsewhere, and adds nothing to it', () => {
    const registry = new Registry();
    const foreign = new Counter({ name: 'leasehold_jobs_completed_total', help: 'someone else', registers: [registry] });
    const error = expectInvalidSync(() => collectMetrics({ queue: queue() }, registry));
    expect(error.message).toContain('leasehold_jobs_completed_total');
    expect(registry.getMetricsAsArray()).toEqual([foreign]);
  });

  it('refuses attaching a queue, a pool or a name twice to one registry, and keeps the first attachment whole', async () => {
    const registry = new Registry();
    const q = queue();
    const pool = new StandInPool();
    const first = collectMetrics({ queue: q, pool, name: 'a' }, registry);
    const listening = pool.listening();
    expect(expectInvalidSync(() => collectMetrics({ queue: q, name: 'b' }, registry)).message).toContain('"a"');
    expectInvalidSync(() => collectMetrics({ queue: queue(), pool, name: 'b' }, registry));
    expectInvalidSync(() => collectMetrics({ queue: queue(), name: 'a' }, registry));
    expect(pool.listening()).toBe(listening);
    q.submit('t', '');
    expect(series(await scrape(registry), 'leasehold_jobs')).toEqual(expect.objectContaining({ '{queue="a",status="ready"}': 1 }));
    first.close();
  });

  it("names the series after a RedisJobQueue-like queue's own name, else \"default\"", async () => {
    const registry = new Registry();
    const named = Object.assign(queue(), { name: 'emails' });
    const a = collectMetrics({ queue: named }, registry);
    const b = collectMetrics({ queue: queue() }, registry);
    expect([a.name, b.name]).toEqual(['emails', 'default']);
    a.close();
    b.close();
  });
});

describe('collectMetrics with several queues in one registry', () => {
  it('keeps a series per queue, and close removes only its own; the last close empties the registry', async () => {
    const registry = new Registry();
    const one = queue();
    const two = queue();
    one.submit('t', '');
    two.submit('t', '');
    two.submit('t', '');
    const a = collectMetrics({ queue: one, name: 'one' }, registry);
    const b = collectMetrics({ queue: two, name: 'two' }, registry);
    expect(series(await scrape(registry), 'leasehold_jobs')).toEqual(expect.objectContaining({ '{queue="one",status="ready"}': 1, '{queue="two",status="ready"}': 2 }));
    a.close();
    const left = series(await scrape(registry), 'leasehold_jobs');
    expect(Object.keys(left).filter((key) => key.includes('queue="one"'))).toEqual([]);
    expect(left['{queue="two",status="ready"}']).toBe(2);
    a.close(); // a second close does nothing
    b.close();
    expect(registry.getMetricsAsArray()).toEqual([]);
    // Detached, the queue can be attached again, here or anywhere.
    const again = collectMetrics({ queue: one, name: 'one' }, registry);
    expect(series(await scrape(registry), 'leasehold_jobs')['{queue="one",status="ready"}']).toBe(1);
    again.close();
  });

  it('attaches anew to a registry whose metrics were cleared behind its back', async () => {
    const registry = new Registry();
    const q = queue();
    const stale = collectMetrics({ queue: q, name: 'q' }, registry);
    registry.clear();
    const fresh = collectMetrics({ queue: queue(), name: 'q' }, registry);
    expect(Object.keys(series(await scrape(registry), 'leasehold_jobs'))).toHaveLength(6);
    stale.close();
    expect(Object.keys(series(await scrape(registry), 'leasehold_jobs'))).toHaveLength(6);
    fresh.close();
  });
});

describe('collectMetrics with a pool', () => {
  it('counts the pool events and reads restarts and refusals from the pool at scrape time', async () => {
    const registry = new Registry();
    const pool = new StandInPool();
    const metrics = collectMetrics({ queue: queue(), pool, name: 'q' }, registry);
    pool.emit('completed', event('a', 1500, 250));
    pool.emit('failed', event('a', 5, 20_000));
    pool.emit('retrying', event('a', 5, 20_000));
    pool.emit('stalled', event('b', 5, 7));
    pool.restarts = 2;
    pool.refused = 3;
    let samples = await scrape(registry);
    expect(series(samples, 'leasehold_jobs_completed_total')).toEqual({ '{queue="q",type="a"}': 1 });
    expect(series(samples, 'leasehold_jobs_failed_total')).toEqual({ '{queue="q",type="a"}': 1 });
    expect(series(samples, 'leasehold_jobs_retried_total')).toEqual({ '{queue="q",type="a"}': 1 });
    expect(series(samples, 'leasehold_jobs_stalled_total')).toEqual({ '{queue="q",type="b"}': 1 });
    expect(series(samples, 'leasehold_job_duration_seconds_sum')['{queue="q",type="a",outcome="completed"}']).toBe(1.5);
    // The wait: once per attempt (its completed or failed event), in seconds, in the buckets it falls in.
    expect(series(samples, 'leasehold_job_wait_seconds_count')).toEqual({ '{queue="q",type="a"}': 2 });
    expect(series(samples, 'leasehold_job_wait_seconds_sum')).toEqual({ '{queue="q",type="a"}': 20.25 });
    expect(samples.get('leasehold_job_wait_seconds_bucket{le="0.1",queue="q",type="a"}')).toBe(0);
    expect(samples.get('leasehold_job_wait_seconds_bucket{le="0.5",queue="q",type="a"}')).toBe(1);
    expect(samples.get('leasehold_job_wait_seconds_bucket{le="10",queue="q",type="a"}')).toBe(1);
    expect(samples.get('leasehold_job_wait_seconds_bucket{le="30",queue="q",type="a"}')).toBe(2);
    expect(series(samples, 'leasehold_thread_restarts_total')).toEqual({ '{queue="q"}': 2 });
    expect(series(samples, 'leasehold_zombie_refused_total')).toEqual({ '{queue="q"}': 3 });
    pool.refused = 4;
    samples = await scrape(registry);
    expect(series(samples, 'leasehold_zombie_refused_total')).toEqual({ '{queue="q"}': 4 });
    metrics.close();
  });

  it('counts the progress updates a pool wrote, under the queue label only, once each across scrapes; stops at close', async () => {
    const registry = new Registry();
    const pool = new StandInPool();
    const metrics = collectMetrics({ queue: queue(), pool, name: 'q' }, registry);
    expect(pool.listeners.get('progress')?.size).toBe(1);
    const progress = (jobId: string, value: number) => pool.emit('progress', { jobId, attempt: 1, progress: value } as unknown as JobEvent);
    for (let n = 1; n <= 5; n++) progress(`J${n}`, n * 10);
    expect(series(await scrape(registry), 'leasehold_progress_updates_total')).toEqual({ '{queue="q"}': 5 });
    progress('J1', 99);
    expect(series(await scrape(registry), 'leasehold_progress_updates_total')).toEqual({ '{queue="q"}': 6 });
    expect(series(await scrape(registry), 'leasehold_progress_updates_total')).toEqual({ '{queue="q"}': 6 });
    metrics.close();
    expect(pool.listening()).toBe(0);
  });

  it('counts every event once, whether a scrape comes between events or not, in each of two queues of one registry', async () => {
    const registry = new Registry();
    const pools = [new StandInPool(), new StandInPool()];
    const attached = pools.map((pool, i) => collectMetrics({ queue: queue(), pool, name: `q${i}` }, registry));
    const completed = async () => series(await scrape(registry), 'leasehold_jobs_completed_total');
    for (let n = 0; n < 3; n++) pools[0]!.emit('completed', event('a'));
    pools[1]!.emit('completed', event('b'));
    expect(await completed()).toEqual({ '{queue="q0",type="a"}': 3, '{queue="q1",type="b"}': 1 });
    expect(await completed()).toEqual({ '{queue="q0",type="a"}': 3, '{queue="q1",type="b"}': 1 });
    pools[0]!.emit('completed', event('a'));
    pools[0]!.emit('dead', event('a'));
    // Read through the metric itself, not the registry's text: its collect adds the pending counts too.
    const single = registry.getSingleMetric('leasehold_jobs_completed_total')!;
    expect((await single.get()).values.map(({ labels, value }) => [labels.queue, labels.type, value])).toEqual([['q0', 'a', 4], ['q1', 'b', 1]]);
    expect(series(await scrape(registry), 'leasehold_jobs_dead_total')).toEqual({ '{queue="q0",type="a"}': 1 });
    attached[0]!.close();
    pools[1]!.emit('completed', event('b'));
    expect(await completed()).toEqual({ '{queue="q1",type="b"}': 2 });
    attached[1]!.close();
  });

  it('reads the queue and the pool once per scrape, however many metrics need them', async () => {
    const registry = new Registry();
    const q = queue();
    const pool = new StandInPool();
    let queueReads = 0;
    let poolReads = 0;
    const counted = { stats: () => (queueReads++, q.stats()) };
    const countedPool = Object.assign(pool, { stats: () => (poolReads++, { restarts: 0, refused: 0 }) });
    const metrics = collectMetrics({ queue: counted, pool: countedPool, name: 'q' }, registry);
    await scrape(registry);
    expect([queueReads, poolReads]).toEqual([1, 1]);
    metrics.close();
  });

  it('gives job types past MAX_TYPE_LABELS the one label OTHER_TYPE', async () => {
    const registry = new Registry();
    const pool = new StandInPool();
    const metrics = collectMetrics({ queue: queue(), pool, name: 'q' }, registry);
    for (let n = 0; n < MAX_TYPE_LABELS + 5; n++) pool.emit('completed', event(`type-${n}`));
    const completed = series(await scrape(registry), 'leasehold_jobs_completed_total');
    expect(Object.keys(completed)).toHaveLength(MAX_TYPE_LABELS + 1);
    expect(completed[`{queue="q",type="${OTHER_TYPE}"}`]).toBe(5);
    expect(completed[`{queue="q",type="type-${MAX_TYPE_LABELS - 1}"}`]).toBe(1);
    metrics.close();
  });

  it('stops listening to the pool on close, so a pool without metrics records no events', () => {
    const registry = new Registry();
    const pool = new StandInPool();
    const metrics = collectMetrics({ queue: queue(), pool, name: 'q' }, registry);
    expect([...pool.listeners.keys()].sort()).toEqual(['completed', 'dead', 'failed', 'progress', 'retrying', 'stalled']);
    metrics.close();
    expect(pool.listening()).toBe(0);
  });

  it('gives a queue without a pool only the gauges', async () => {
    const registry = new Registry();
    const metrics = collectMetrics({ queue: queue(), name: 'q' }, registry);
    const samples = await scrape(registry);
    expect([...samples.keys()].every((key) => key.startsWith('leasehold_jobs{'))).toBe(true);
    expect(samples.size).toBe(6);
    metrics.close();
  });
});

describe('collectMetrics without prom-client installed', () => {
  it('leaves a queue working, and throws MissingDependencyError naming prom-client only when called', () => {
    const code = `
      import { JobQueue, RetryPolicy, collectMetrics, systemClock } from ${JSON.stringify(new URL('../../dist/index.js', import.meta.url).href)};
      const queue = new JobQueue(systemClock, new RetryPolicy(3, 0, 0));
      const id = queue.submit('t', '');
      const lease = queue.poll('w', 1000);
      queue.complete(lease.jobId, lease.token);
      const registry = { registerMetric() {}, getSingleMetric() {}, removeSingleMetric() {}, metrics() {} };
      let error;
      try { collectMetrics({ queue }, registry); } catch (caught) { error = caught; }
      console.log(JSON.stringify({ status: queue.view(id).status, name: error?.name, code: error?.code, packageName: error?.packageName, message: error?.message }));
    `;
    const hide = fileURLToPath(new URL('../fixtures/metrics-without-prom-client.cjs', import.meta.url));
    const run = spawnSync(process.execPath, ['--require', hide, '--input-type=module', '--eval', code], { encoding: 'utf8', timeout: 30_000 });
    expect(run.stderr).toBe('');
    expect(JSON.parse(run.stdout)).toEqual({
      status: 'SUCCEEDED', name: 'MissingDependencyError', code: 'ERR_MISSING_DEPENDENCY', packageName: 'prom-client',
      message: 'Prometheus metrics (collectMetrics) needs the package prom-client: install it with `npm install prom-client@15`',
    });
  });
});
