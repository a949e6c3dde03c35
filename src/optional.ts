/**
 * The optional peer dependencies, loaded on first use: an app that keeps its
 * queue in memory installs neither better-sqlite3 (a native build) nor
 * ioredis, one that exports no metrics does without prom-client, and one that
 * traces nothing without @opentelemetry/api. A missing one is reported as MissingDependencyError, naming the
 * package to install.
 */
import { createRequire } from 'node:module';
import type BetterSqlite3 from 'better-sqlite3';
import type * as PromClient from 'prom-client';
import type * as OtelApi from '@opentelemetry/api';
import { MissingDependencyError } from './errors.js';

const require = createRequire(import.meta.url);

/** Node's "cannot find it" codes (require, import), for this package itself rather than something inside it. */
function isMissing(error: unknown, packageName: string): boolean {
  const { code, message } = error as NodeJS.ErrnoException;
  return (code === 'MODULE_NOT_FOUND' || code === 'ERR_MODULE_NOT_FOUND') && message.includes(`'${packageName}'`);
}

/** A CommonJS package, loaded synchronously; `feature` names what needs it. */
function requireOptional<T>(packageName: string, feature: string): T {
  try {
    return require(packageName) as T;
  } catch (error) {
    if (isMissing(error, packageName)) throw new MissingDependencyError(packageName, feature, { cause: error });
    throw error;
  }
}

/** better-sqlite3's Database class. Synchronous, as `JobQueue.open` is. */
export function sqliteDatabase(): typeof BetterSqlite3 {
  return requireOptional('better-sqlite3', 'The SQLite journal (JobQueue.open, leasehold stats and dlq)');
}

/** ioredis: its Redis (one server) and Cluster client classes. */
export async function redisClients(): Promise<Pick<typeof import('ioredis'), 'Redis' | 'Cluster'>> {
  try {
    const { Redis, Cluster } = await import('ioredis');
    return { Redis, Cluster };
  } catch (error) {
    if (isMissing(error, 'ioredis')) throw new MissingDependencyError('ioredis', 'RedisJobQueue', { cause: error });
    throw error;
  }
}

/** prom-client, synchronous as `collectMetrics` is (it is a CommonJS package). Resolved from here: a peer, so the app's own copy, whose Registry it was given. */
export function promClient(): typeof PromClient {
  return requireOptional('prom-client', 'Prometheus metrics (collectMetrics)');
}

/**
 * @opentelemetry/api, synchronous as a submit is (it ships CommonJS too). Resolved from here: a peer, so the app's
 * own copy; copies of one major version share the provider and propagator an SDK registered (a global).
 */
export function otelApi(): typeof OtelApi {
  return requireOptional('@opentelemetry/api', 'OpenTelemetry tracing (the `tracing` option, traceProcess)');
}
