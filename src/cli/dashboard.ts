/**
 * `leasehold dashboard --journal FILE | --redis URL --name Q`: bull-board
 * over one queue, on 127.0.0.1, behind a random access token printed at
 * start, until SIGINT or SIGTERM.
 *
 * Read-only by default: a journal is then read as it is on disk (it may be
 * owned by a running app, and nothing is written to it), and every request
 * that could change something is refused. With `--allow-writes` the board's
 * buttons work: a journal is opened as a queue (so it needs the journal to
 * itself, as `dlq retry` does).
 */
import { basename } from 'node:path';
import { systemClock } from '../clock.js';
import { createDashboardAdapter, serveDashboard, type DashboardQueue } from '../dashboard/index.js';
import { RetryPolicy } from '../policy.js';
import { JobQueue } from '../queue.js';
import { PartitionedRedisQueue } from '../redis/partitioned.js';
import { RedisJobQueue } from '../redis/queue.js';
import { JournalSnapshot } from './journal-snapshot.js';

export interface DashboardCommandOptions {
  journal?: string;
  redis?: string;
  name?: string;
  partitions?: number;
  port: number;
  allowWrites: boolean;
  maxAttempts: number;
  backoffMs: number;
  maxBackoffMs: number;
}

/** A queue the dashboard shows, and how to let it go. */
interface OpenQueue {
  queue: DashboardQueue;
  name: string;
  close(): Promise<void> | void;
}

/** Why these options cannot run, or null. */
export function dashboardUsageProblem(options: DashboardCommandOptions): string | null {
  if ((options.journal === undefined) === (options.redis === undefined)) return 'give --journal FILE or --redis URL (one of them)';
  if (options.redis !== undefined && options.name === undefined) return '--redis needs --name (the queue\'s name)';
  if (options.journal !== undefined && (options.name !== undefined || options.partitions !== undefined)) return '--name and --partitions go with --redis';
  if (options.maxBackoffMs < options.backoffMs) return '--max-backoff-ms must be at least --backoff-ms';
  return null;
}

async function openQueue(options: DashboardCommandOptions): Promise<OpenQueue> {
  const policy = new RetryPolicy(options.maxAttempts, options.backoffMs, options.maxBackoffMs);
  if (options.journal !== undefined) {
    const name = basename(options.journal);
    if (!options.allowWrites) {
      const snapshot = new JournalSnapshot(options.journal, options.maxAttempts);
      // Read once before serving: a missing file or one that is no journal is refused here, not on every page.
      snapshot.stats();
      return { queue: snapshot, name, close: () => {} };
    }
    const queue = JobQueue.open(options.journal, systemClock, policy);
    return { queue, name, close: () => queue.close() };
  }
  const target = { redis: options.redis!, name: options.name!, policy };
  const queue = options.partitions === undefined
    ? await RedisJobQueue.connect(target)
    : await PartitionedRedisQueue.connect({ ...target, partitions: options.partitions });
  return { queue, name: options.name!, close: () => queue.close() };
}

/** Serves the dashboard until SIGINT or SIGTERM, then closes it and the queue. */
export async function runDashboard(options: DashboardCommandOptions): Promise<void> {
  const open = await openQueue(options);
  try {
    const adapter = await createDashboardAdapter(open.queue, { name: open.name, readOnly: !options.allowWrites });
    const server = await serveDashboard([adapter], { port: options.port, allowWrites: options.allowWrites, title: `leasehold · ${open.name}` });
    const mode = options.allowWrites ? 'writes allowed' : 'read-only (--allow-writes to act on jobs)';
    console.log(`leasehold dashboard of ${open.name}, ${mode}:\n${server.url}\n(Ctrl-C to stop)`);
    const signal = await new Promise<NodeJS.Signals>((resolve) => {
      process.once('SIGINT', resolve);
      process.once('SIGTERM', resolve);
    });
    await server.close();
    console.log(`leasehold dashboard: stopped (${signal})`);
  } finally {
    await open.close();
  }
}
