/**
 * The served dashboard over HTTP, without a browser: nothing without the
 * token, the token traded for a cookie, writes refused unless allowed, and
 * bull-board's API answering from the queue.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it, onTestFinished } from 'vitest';
import {
  InvalidArgumentError, JobQueue, JobStatus, ManualClock, RetryPolicy,
} from '../../dist/index.js';
import { createDashboardAdapter, createDashboardApp, serveDashboard, type DashboardServer } from '../../dist/dashboard/index.js';
import { fillEveryStatus, type EveryStatus } from './dashboard-fixture.js';
import { T0, bad, expectError } from '../support/helpers.js';

interface Served {
  server: DashboardServer;
  queue: JobQueue;
  ids: EveryStatus;
  /** The server's root, without the token. */
  root: string;
  token: string;
}

async function serve(allowWrites: boolean): Promise<Served> {
  const clock = new ManualClock(T0);
  const queue = new JobQueue(clock, new RetryPolicy(3, 100, 1_000));
  const ids = await fillEveryStatus(queue, clock);
  const adapter = await createDashboardAdapter(queue, { name: 'images', readOnly: !allowWrites, time: clock });
  const server = await serveDashboard([adapter], { allowWrites });
  onTestFinished(() => server.close());
  const url = new URL(server.url);
  return { server, queue, ids, root: `${url.origin}/`, token: url.searchParams.get('token')! };
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

describe('dashboard server', () => {
  it('listens on 127.0.0.1 only, at a URL that carries a 256-bit token', async () => {
    const { server, token } = await serve(false);
    expect(new URL(server.url).hostname).toBe('127.0.0.1');
    expect(Buffer.from(token, 'base64url')).toHaveLength(32);
  });

  it('serves nothing without the token: 401 for the page, its assets and the API', async () => {
    const { root } = await serve(false);
    for (const path of ['', 'queue/images', 'static/favicon-32x32.png', 'api/queues']) {
      const response = await fetch(root + path);
      expect(response.status, path).toBe(401);
      expect(await response.text(), path).toMatch(/needs its access token/);
    }
  });

  it('refuses a wrong token with 403, in the URL, a header or a cookie', async () => {
    const { root, token } = await serve(false);
    const wrong = token.slice(1) + (token[0] === 'a' ? 'b' : 'a');
    expect((await fetch(`${root}?token=${wrong}`)).status).toBe(403);
    expect((await fetch(`${root}api/queues`, { headers: bearer(wrong) })).status).toBe(403);
    expect((await fetch(`${root}api/queues`, { headers: { cookie: `leasehold_dashboard_x=${wrong}` } })).status).toBe(401);
  });

  it('trades the token in the URL for an HttpOnly, SameSite=Strict cookie and sends the browser to the page without it', async () => {
    const { server, root } = await serve(false);
    const first = await fetch(server.url, { redirect: 'manual' });
    expect(first.status).toBe(303);
    expect(first.headers.get('location')).toBe('/');
    const cookie = first.headers.get('set-cookie')!;
    expect(cookie).toMatch(/HttpOnly/);
    expect(cookie).toMatch(/SameSite=Strict/);
    const page = await fetch(root, { headers: { cookie: cookie.split(';')[0]! } });
    expect(page.status).toBe(200);
    expect(await page.text()).toMatch(/<title>leasehold<\/title>/);
  });

  it("answers bull-board's API from the queue: its counts are stats()'", async () => {
    const { root, token, queue } = await serve(false);
    const response = await fetch(`${root}api/queues`, { headers: bearer(token) });
    expect(response.status).toBe(200);
    const { queues } = await response.json() as { queues: { name: string; counts: Record<string, number>; readOnlyMode: boolean }[] };
    const stats = queue.stats();
    expect(queues.map((q) => q.name)).toEqual(['images']);
    expect(queues[0]!.readOnlyMode).toBe(true);
    expect(queues[0]!.counts).toMatchObject({ waiting: stats.ready, delayed: stats.delayed, active: stats.running, completed: stats.succeeded, failed: stats.dead });
  });

  it('refuses every write with 403 when writes are off, and the queue is as it was', async () => {
    const { root, token, queue, ids } = await serve(false);
    for (const [method, path] of [['PUT', `api/queues/images/${ids.dead}/retry`], ['PUT', 'api/queues/images/pause'], ['PUT', `api/queues/images/${ids.ready}/clean`], ['POST', 'api/queues/images/add']]) {
      const response = await fetch(root + path!, { method, headers: bearer(token) });
      expect(response.status, `${method} ${path}`).toBe(403);
    }
    expect(queue.view(ids.dead).status).toBe(JobStatus.DEAD);
    expect(queue.view(ids.ready).status).toBe(JobStatus.PENDING);
    expect(queue.isPaused()).toBe(false);
  });

  it('retries a dead job and pauses the queue when writes are allowed', async () => {
    const { root, token, queue, ids } = await serve(true);
    expect((await fetch(`${root}api/queues/images/${ids.dead}/retry`, { method: 'PUT', headers: bearer(token) })).status).toBe(204);
    expect(queue.view(ids.dead)).toMatchObject({ status: JobStatus.PENDING, attempts: 0 });
    expect((await fetch(`${root}api/queues/images/pause`, { method: 'PUT', headers: bearer(token) })).status).toBe(200);
    expect(queue.isPaused()).toBe(true);
  });

  it("promotes a delayed job, and answers a refused action with leasehold's reason: promote of a finished job is 409, the job unchanged", async () => {
    const { root, token, queue, ids } = await serve(true);
    expect((await fetch(`${root}api/queues/images/${ids.delayed}/promote`, { method: 'PUT', headers: bearer(token) })).status).toBe(204);
    expect(queue.stats()).toMatchObject({ delayed: 0 });
    const response = await fetch(`${root}api/queues/images/${ids.succeeded}/promote`, { method: 'PUT', headers: bearer(token) });
    expect(response.status).toBe(409);
    expect(JSON.stringify(await response.json())).toMatch(/only while PENDING/);
    expect(queue.view(ids.succeeded).status).toBe(JobStatus.SUCCEEDED);
  });

  it('rejects a bad port, a short token or no adapters', async () => {
    const adapter = await createDashboardAdapter(new JobQueue(new ManualClock(T0), new RetryPolicy(3, 0, 0)));
    await expectError(() => serveDashboard([adapter], { port: 70_000 }), InvalidArgumentError, 'ERR_INVALID_ARGUMENT');
    await expectError(() => serveDashboard([adapter], { token: 'short' }), InvalidArgumentError, 'ERR_INVALID_ARGUMENT');
    await expectError(() => serveDashboard([]), InvalidArgumentError, 'ERR_INVALID_ARGUMENT');
    await expectError(() => serveDashboard([adapter, adapter]), InvalidArgumentError, 'ERR_INVALID_ARGUMENT');
  });

  it('checks each of its options objects as the queue\'s are: a misspelt key, null, or a title that is no string is refused', async () => {
    const queue = new JobQueue(new ManualClock(T0), new RetryPolicy(3, 0, 0));
    const misspelt = await expectError(() => createDashboardAdapter(queue, bad({ readonly: false })), InvalidArgumentError, 'ERR_INVALID_ARGUMENT');
    expect(misspelt.message).toMatch(/no keys but name, readOnly, description, time, got `readonly`/);
    await expectError(() => createDashboardAdapter(queue, bad(null)), InvalidArgumentError, 'ERR_INVALID_ARGUMENT');
    const adapter = await createDashboardAdapter(queue);
    expect((await expectError(() => serveDashboard([adapter], bad({ allowWrite: true })), InvalidArgumentError, 'ERR_INVALID_ARGUMENT')).message)
      .toContain('got `allowWrite`');
    await expectError(() => serveDashboard([adapter], bad({ title: 7 })), InvalidArgumentError, 'ERR_INVALID_ARGUMENT');
    await expectError(() => createDashboardApp([adapter], bad({ basepath: '/jobs' })), InvalidArgumentError, 'ERR_INVALID_ARGUMENT');
    await expectError(() => createDashboardApp([adapter], bad(null)), InvalidArgumentError, 'ERR_INVALID_ARGUMENT');
  });
});

describe('dashboard without bull-board installed', () => {
  it('leaves leasehold and leasehold/dashboard importable, the queue working, and rejects createDashboardAdapter with MissingDependencyError naming the package', () => {
    const index = new URL('../../dist/index.js', import.meta.url).href;
    const dashboard = new URL('../../dist/dashboard/index.js', import.meta.url).href;
    const code = `
      const { JobQueue, RetryPolicy, systemClock } = await import(${JSON.stringify(index)});
      const { createDashboardAdapter } = await import(${JSON.stringify(dashboard)});
      const queue = new JobQueue(systemClock, new RetryPolicy(3, 0, 0));
      const id = queue.submit('t', 'p');
      const error = await createDashboardAdapter(queue).then(() => undefined, (caught) => caught);
      console.log(JSON.stringify({ status: queue.view(id).status, name: error?.name, code: error?.code, packageName: error?.packageName }));
    `;
    const hide = fileURLToPath(new URL('../fixtures/dashboard-without-bull-board.mjs', import.meta.url));
    const run = spawnSync(process.execPath, ['--import', hide, '--input-type=module', '--eval', code], { encoding: 'utf8', timeout: 30_000 });
    expect(run.stderr).toBe('');
    expect(JSON.parse(run.stdout)).toEqual({ status: 'PENDING', name: 'MissingDependencyError', code: 'ERR_MISSING_DEPENDENCY', packageName: '@bull-board/api' });
  });
});
