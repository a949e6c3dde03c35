/**
 * bull-board's page and API for leasehold queues, as a Hono app (to mount in
 * an app of your own), and that app served on 127.0.0.1 behind an access
 * token (what `leasehold dashboard` runs). Loaded on first use (./index.ts).
 */
import type { AddressInfo } from 'node:net';
import { createBullBoard } from '@bull-board/api';
import { HonoAdapter } from '@bull-board/hono';
import { serve } from '@hono/node-server';
import { serveStatic } from '@hono/node-server/serve-static';
import { Hono, type MiddlewareHandler } from 'hono';
import { refuseWrites, requireToken } from './access.js';
import type { LeaseholdBoardAdapter } from './adapter.js';

export interface DashboardAppOptions {
  /**
   * Where the app is mounted in yours (`app.route(basePath, board)`): the page's links and API calls start with it.
   * @default "/"
   */
  basePath?: string;
  /** @default "leasehold" */
  title?: string;
}

/**
 * bull-board over `adapters`, as a Hono app. Its page asks no other host for
 * anything: bull-board's template links IBM Plex from Google Fonts, which
 * would tell a third party who opens the board, when, and from where; the
 * link is taken out and the page falls back to the system's sans-serif and
 * monospace fonts (its CSS names them after IBM Plex).
 */
export function dashboardApp(adapters: readonly LeaseholdBoardAdapter[], uiBasePath: string, options: DashboardAppOptions = {}): Hono {
  const server = new HonoAdapter(serveStatic).setBasePath(options.basePath ?? '/');
  createBullBoard({
    queues: adapters,
    serverAdapter: server,
    // Neither a JobQueue nor a RedisJobQueue hands bull-board a Redis connection to report on, nor a list of workers.
    options: { uiBasePath, uiConfig: { boardTitle: options.title ?? 'leasehold', hideRedisDetails: true, showWorkers: false, hideDocsLink: true } },
  });
  return new Hono().use(withoutRemoteLinks()).route('/', server.registerPlugin());
}

/** A `<link>` (stylesheet, font, preconnect) to an absolute http(s) URL: another host's. */
const REMOTE_LINK = /<link\b[^>]*\bhref="(?:https?:)?\/\/[^"]*"[^>]*>\s*/gi;

/** Middleware: an HTML page goes out without links to other hosts (see dashboardApp). */
function withoutRemoteLinks(): MiddlewareHandler {
  return async (c, next) => {
    await next();
    if (!(c.res.headers.get('content-type') ?? '').startsWith('text/html')) return;
    const html = await c.res.text();
    const headers = new Headers(c.res.headers);
    headers.delete('content-length');
    c.res = new Response(html.replace(REMOTE_LINK, ''), { status: c.res.status, headers });
  };
}

export interface ServeOptions {
  /** 0: a free port the system picks. */
  port: number;
  /** Who may look: see ./access.ts. */
  token: string;
  /** Whether requests that change something (anything but GET and HEAD) reach the board at all. */
  allowWrites: boolean;
  title?: string;
}

/** A running dashboard server. */
export interface DashboardServer {
  /** The page, token included: what to open in a browser. */
  readonly url: string;
  readonly port: number;
  /** Stops listening and ends open connections (a browser's keep-alive ones too). */
  close(): Promise<void>;
}

/** The dashboard served on 127.0.0.1 only: it is for the operator of this machine (or an SSH tunnel to it). */
export async function serveOnLoopback(adapters: readonly LeaseholdBoardAdapter[], uiBasePath: string, options: ServeOptions): Promise<DashboardServer> {
  const host = '127.0.0.1';
  const app = new Hono().use(requireToken(options.token));
  if (!options.allowWrites) app.use(refuseWrites());
  app.route('/', dashboardApp(adapters, uiBasePath, { title: options.title }));
  const { server, port } = await new Promise<{ server: ReturnType<typeof serve>; port: number }>((resolve, reject) => {
    const listening = serve({ fetch: app.fetch, port: options.port, hostname: host }, (info: AddressInfo) => resolve({ server: listening, port: info.port }));
    listening.once('error', reject);
  });
  return {
    url: `http://${host}:${port}/?token=${options.token}`,
    port,
    close: () => new Promise<void>((resolve, reject) => {
      server.close((error) => (error === undefined ? resolve() : reject(error)));
      if ('closeAllConnections' in server) server.closeAllConnections();
    }),
  };
}
