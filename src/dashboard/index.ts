/**
 * The dashboard's public calls, the package's `leasehold/dashboard` entry.
 * Each loads bull-board and hono (optional peers) on first use, and a
 * missing one is MissingDependencyError naming it. They are not in the main
 * entry because their types are bull-board's and hono's: an app that imports
 * only `leasehold` has none of them to type-check (they more than double a
 * small app's check time), nor to install.
 */
import type { Hono } from 'hono';
import { systemClock } from '../clock.js';
import { InvalidArgumentError, describe } from '../errors.js';
import { DASHBOARD_FEATURE, DASHBOARD_PACKAGES, boardUiFolder, importOptional } from '../optional.js';
import { readOptions } from '../options.js';
import { checkTimeSource } from '../validate/clock.js';
import type { DashboardAdapterOptions, LeaseholdBoardAdapter } from './adapter.js';
import type { DashboardQueue } from './queue.js';
import type { DashboardAppOptions, DashboardServer } from './server.js';

export type { DashboardAdapterOptions, LeaseholdBoardAdapter } from './adapter.js';
export type { DashboardQueue } from './queue.js';
export type { DashboardAppOptions, DashboardServer } from './server.js';

const QUEUE_METHODS = ['stats', 'jobs', 'view', 'submit', 'retryDead', 'cancel', 'pause', 'resume', 'isPaused'] as const;
const DEFAULT_NAME = 'default';
const ADAPTER_OPTIONS: ReadonlySet<string> = new Set(['name', 'readOnly', 'description', 'time']);
const APP_OPTIONS: ReadonlySet<string> = new Set(['basePath', 'title']);
const SERVE_OPTIONS: ReadonlySet<string> = new Set(['port', 'token', 'allowWrites', 'title']);
/** Shortest token `serveDashboard` accepts: 128 bits as base64url. */
const MIN_TOKEN_LENGTH = 22;

const loadAdapter = () => importOptional(DASHBOARD_PACKAGES, DASHBOARD_FEATURE, () => import('./adapter.js'));
const loadServer = () => importOptional(DASHBOARD_PACKAGES, DASHBOARD_FEATURE, () => import('./server.js'));

/**
 * A bull-board queue adapter over `queue` (a JobQueue, journaled or not, a
 * RedisJobQueue or a PartitionedRedisQueue), for `createBullBoard` with any
 * of bull-board's server adapters. Read-only unless `readOnly: false`.
 */
export async function createDashboardAdapter(queue: DashboardQueue, options: DashboardAdapterOptions = {}): Promise<LeaseholdBoardAdapter> {
  checkQueue(queue);
  const { name = DEFAULT_NAME, readOnly = true, description = '', time = systemClock } = readOptions<DashboardAdapterOptions>('options', options, ADAPTER_OPTIONS);
  if (typeof name !== 'string' || name.trim() === '') throw new InvalidArgumentError(`Expected \`name\` to be a non-blank string, got ${describe(name)}`);
  if (typeof readOnly !== 'boolean') throw new InvalidArgumentError(`Expected \`readOnly\` to be a boolean, got ${describe(readOnly)}`);
  if (typeof description !== 'string') throw new InvalidArgumentError(`Expected \`description\` to be a string, got ${describe(description)}`);
  checkTimeSource(time);
  const { LeaseholdBoardAdapter } = await loadAdapter();
  return new LeaseholdBoardAdapter(queue, { name, readOnly, description, time });
}

/**
 * bull-board over `adapters` as a Hono app, to mount in yours:
 * `app.route('/jobs', await createDashboardApp([adapter], { basePath: '/jobs' }))`.
 * It has no access control of its own: put yours in front of it.
 */
export async function createDashboardApp(adapters: readonly LeaseholdBoardAdapter[], options: DashboardAppOptions = {}): Promise<Hono> {
  const { dashboardApp } = await loadServer();
  await checkAdapters(adapters);
  const { basePath = '/', title } = readOptions<DashboardAppOptions>('options', options, APP_OPTIONS);
  if (typeof basePath !== 'string' || !basePath.startsWith('/')) throw new InvalidArgumentError(`Expected \`basePath\` to be a path starting with "/", got ${describe(basePath)}`);
  checkTitle(title);
  return dashboardApp(adapters, boardUiFolder(), { basePath, title });
}

export interface ServeDashboardOptions {
  /**
   * The port on 127.0.0.1; 0 lets the system pick a free one (see the result's `port`).
   * @default 0
   */
  port?: number;
  /**
   * The access token: without it in the URL, a cookie or an `Authorization: Bearer` header, nothing is served.
   * @default 32 random bytes (crypto.randomBytes), base64url
   */
  token?: string;
  /**
   * Let requests that change something (retry, cancel, pause, ...) through; otherwise every request but GET and HEAD gets 403.
   * Make the adapters with `readOnly: false` too, so that the board shows its buttons.
   * @default false
   */
  allowWrites?: boolean;
  /** @default "leasehold" */
  title?: string;
}

/** Serves bull-board over `adapters` on 127.0.0.1, behind an access token, until `close()`. */
export async function serveDashboard(adapters: readonly LeaseholdBoardAdapter[], options: ServeDashboardOptions = {}): Promise<DashboardServer> {
  const { serveOnLoopback } = await loadServer();
  await checkAdapters(adapters);
  const { newAccessToken } = await import('./access.js');
  const { port = 0, token = newAccessToken(), allowWrites = false, title } = readOptions<ServeDashboardOptions>('options', options, SERVE_OPTIONS);
  if (!Number.isInteger(port) || port < 0 || port > 65_535) throw new InvalidArgumentError(`Expected \`port\` to be an integer from 0 to 65535, got ${describe(port)}`);
  if (typeof token !== 'string' || token.length < MIN_TOKEN_LENGTH || !/^[\w-]+$/.test(token)) {
    throw new InvalidArgumentError(`Expected \`token\` to be at least ${MIN_TOKEN_LENGTH} URL-safe characters (A-Z a-z 0-9 _ -), got ${typeof token === 'string' ? `${token.length} characters` : describe(token)}`);
  }
  if (typeof allowWrites !== 'boolean') throw new InvalidArgumentError(`Expected \`allowWrites\` to be a boolean, got ${describe(allowWrites)}`);
  checkTitle(title);
  return serveOnLoopback(adapters, boardUiFolder(), { port, token, allowWrites, title });
}

function checkTitle(title: unknown): void {
  if (title !== undefined && typeof title !== 'string') throw new InvalidArgumentError(`Expected \`title\` to be a string, got ${describe(title)}`);
}

function checkQueue(queue: unknown): asserts queue is DashboardQueue {
  const missing = queue === null || typeof queue !== 'object' ? QUEUE_METHODS : QUEUE_METHODS.filter((name) => typeof (queue as Record<string, unknown>)[name] !== 'function');
  if (missing.length > 0) {
    throw new InvalidArgumentError(`Expected \`queue\` to be a JobQueue, RedisJobQueue or PartitionedRedisQueue (with ${missing.join(', ')}), got ${describe(queue)}`);
  }
}

async function checkAdapters(adapters: unknown): Promise<void> {
  const { LeaseholdBoardAdapter } = await loadAdapter();
  if (!Array.isArray(adapters) || adapters.length === 0 || !adapters.every((adapter) => adapter instanceof LeaseholdBoardAdapter)) {
    throw new InvalidArgumentError(`Expected \`adapters\` to be a non-empty array of createDashboardAdapter results, got ${describe(adapters)}`);
  }
  const names = adapters.map((adapter: LeaseholdBoardAdapter) => adapter.getName());
  const twice = names.find((name, index) => names.indexOf(name) !== index);
  if (twice !== undefined) throw new InvalidArgumentError(`Expected the adapters' names to differ, got ${JSON.stringify(twice)} twice`);
}
