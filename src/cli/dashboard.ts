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
import { backendError, createClient } from '../redis/connection.js';
import { queueKeys } from '../redis/keys.js';
import { QueueNotFoundError } from '../errors.js';
import { JournalSnapshot } from './journal-snapshot.js';

export interface DashboardCommandOptions {
  journal?: string;
  redis?: string;
  name?: string;
  partitions?: number;
  port: number;
  allowWrites: boolean;
  /** The app's policy. Without it a read-only journal shows only the attempts jobs were given at submit. */
  maxAttempts?: number;
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
  if (options.journal !== undefined) {
    const name = basename(options.journal);
    if (!options.allowWrites) {
      // 0: the policy is not known (the journal does not record it), so the board shows no attempts for jobs without their own.
      const snapshot = new JournalSnapshot(options.journal, options.maxAttempts ?? 0);
      // Read once before serving: a missing file or one that is no journal is refused here, not on every page.
      snapshot.stats();
      return { queue: snapshot, name, close: () => {} };
    }
    const queue = JobQueue.open(options.journal, systemClock, policyOf(options));
    return { queue, name, close: () => queue.close() };
  }
  await refuseUnknownRedisQueue(options.redis!, options.name!, options.partitions);
  const target = { redis: options.redis!, name: options.name!, policy: policyOf(options) };
  const queue = options.partitions === undefined
    ? await RedisJobQueue.connect(target)
    : await PartitionedRedisQueue.connect({ ...target, partitions: options.partitions });
  return { queue, name: options.name!, close: () => queue.close() };
}

/** How long the check that a Redis queue exists waits for an answer. */
const COMMAND_TIMEOUT_MILLIS = 10_000;

/** The attempts of the policy when `--max-attempts` is not given, for a queue the board opens (`--redis`, `--allow-writes`). */
const DEFAULT_MAX_ATTEMPTS = 5;

/**
 * The policy a queue the board opens is run with (lease expiry needs one): the
 * app's as the options give it, else DEFAULT_MAX_ATTEMPTS, as the command has
 * always taken. Give your app's: the journal and Redis do not record it.
 */
function policyOf(options: DashboardCommandOptions): RetryPolicy {
  return new RetryPolicy(options.maxAttempts ?? DEFAULT_MAX_ATTEMPTS, options.backoffMs, options.maxBackoffMs);
}


/**
 * Refuses a `--name` under which Redis holds no queue (no job was ever
 * submitted to it: its job counter is absent), rather than serve an empty
 * board for a misspelt name. A partitioned queue is known by its partition 0.
 */
async function refuseUnknownRedisQueue(url: string, name: string, partitions: number | undefined): Promise<void> {
  const stored = partitions === undefined ? name : `${name}#0`;
  const client = await createClient(url, COMMAND_TIMEOUT_MILLIS);
  try {
    await client.connect().catch((error: unknown) => { throw backendError(error, `Redis at ${url}`); });
    const found = await client.exists(queueKeys(stored).named.jobSeq);
    if (found === 0) throw new QueueNotFoundError(name, `Redis at ${url}`);
  } finally {
    client.disconnect();
  }
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
