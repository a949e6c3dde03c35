/**
 * The optional peer dependencies, loaded on first use: an app that keeps its
 * queue in memory installs neither better-sqlite3 (a native build) nor
 * ioredis, one that exports no metrics does without prom-client, one with no
 * dashboard without bull-board and hono, and one that traces nothing without
 * @opentelemetry/api. A missing one is reported as MissingDependencyError,
 * naming the package to install and the versions that fit.
 */
import { createRequire } from 'node:module';
import type BetterSqlite3 from 'better-sqlite3';
import type * as PromClient from 'prom-client';
import { dirname } from 'node:path';
import type * as OtelApi from '@opentelemetry/api';
import { MissingDependencyError } from './errors.js';

const require = createRequire(import.meta.url);

/**
 * The versions of each optional peer that fit: package.json's
 * peerDependencies, the one table of them (npm checks an installed peer
 * against it, the README's install commands name the same ranges, and a
 * test holds the two together). Read from the package's own package.json,
 * which every install has beside dist/ and src/.
 */
const PEER_RANGES: Readonly<Record<string, string>> = (require('../package.json') as { peerDependencies?: Record<string, string> }).peerDependencies ?? {};

/** The error for `packageName` not installed: it names the range of it that fits. */
function missing(packageName: string, feature: string, cause: unknown): MissingDependencyError {
  const range = PEER_RANGES[packageName];
  return new MissingDependencyError(packageName, feature, range === undefined ? { cause } : { cause, range });
}

/** Node's "cannot find it" codes (require, import), for this package itself rather than something inside it. */
function isMissing(error: unknown, packageName: string): boolean {
  const { code, message } = error as NodeJS.ErrnoException;
  return (code === 'MODULE_NOT_FOUND' || code === 'ERR_MODULE_NOT_FOUND') && message.includes(`'${packageName}'`);
}

/** A CommonJS package, loaded (or resolved) synchronously; `feature` names what needs it. */
function requireOptional<T>(specifier: string, feature: string, load: (specifier: string) => unknown = require): T {
  try {
    return load(specifier) as T;
  } catch (error) {
    if (isMissing(error, specifier)) throw missing(packageOf(specifier), feature, error);
    throw error;
  }
}

/** The package a specifier names: `@scope/name` or `name`, without the path inside it. */
function packageOf(specifier: string): string {
  return specifier.split('/').slice(0, specifier.startsWith('@') ? 2 : 1).join('/');
}

/** better-sqlite3's Database class. Synchronous, as `JobQueue.open` is. */
export function sqliteDatabase(): typeof BetterSqlite3 {
  return requireOptional('better-sqlite3', 'The SQLite journal (JobQueue.open, leasehold stats and dlq)');
}

/** An ES module (or several) that needs `packageNames`: the first of them found missing is the one named. */
export async function importOptional<T>(packageNames: readonly string[], feature: string, load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (error) {
    const absent = packageNames.find((name) => isMissing(error, name));
    if (absent !== undefined) throw missing(absent, feature, error);
    throw error;
  }
}

/** ioredis: its Redis (one server) and Cluster client classes. */
export async function redisClients(): Promise<Pick<typeof import('ioredis'), 'Redis' | 'Cluster'>> {
  const { Redis, Cluster } = await importOptional(['ioredis'], 'RedisJobQueue', () => import('ioredis'));
  return { Redis, Cluster };
}

/** The packages the dashboard loads, each an optional peer. */
export const DASHBOARD_PACKAGES = ['@bull-board/api', '@bull-board/hono', '@bull-board/ui', '@hono/node-server', 'hono'] as const;
export const DASHBOARD_FEATURE = 'The dashboard (createDashboardAdapter, leasehold dashboard)';

/**
 * The folder of @bull-board/ui (its page and assets), resolved from here, as
 * bull-board would from its own folder (where a peer may not be).
 */
export function boardUiFolder(): string {
  return dirname(requireOptional<string>('@bull-board/ui/package.json', DASHBOARD_FEATURE, (name) => require.resolve(name)));
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
