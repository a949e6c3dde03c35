/**
 * The dashboard in a real browser: Debian's Chromium, headless, driven by
 * playwright-core. It opens the board over a queue with jobs in every
 * status, reads the counts on the tabs and the jobs each tab lists and
 * checks them against `stats()` and `jobs()`, retries a dead job by its
 * button and sees it PENDING in the queue, and is refused without the token.
 *
 * Without Chromium (`LEASEHOLD_CHROMIUM`, default /usr/bin/chromium) the
 * tests are skipped with a warning, unless LEASEHOLD_REQUIRE_BROWSER is set:
 * then they fail. `LEASEHOLD_SCREENSHOT=1` (`npm run screenshot`) also saves
 * docs/dashboard.png.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import {
  JobQueue, JobStatus, ManualClock, RetryPolicy, type JobView,
} from '../../dist/index.js';
import { createDashboardAdapter, serveDashboard, type DashboardServer } from '../../dist/dashboard/index.js';
import { fillEveryStatus, type EveryStatus } from './dashboard-fixture.js';
import { waitUntil } from '../support/helpers.js';

const CHROMIUM = process.env['LEASEHOLD_CHROMIUM'] ?? '/usr/bin/chromium';
const REQUIRED = (process.env['LEASEHOLD_REQUIRE_BROWSER'] ?? '') !== '';
const SCREENSHOT = (process.env['LEASEHOLD_SCREENSHOT'] ?? '') !== '';
const SCREENSHOT_PATH = fileURLToPath(new URL('../../docs/dashboard.png', import.meta.url));
const missing = !existsSync(CHROMIUM);
if (missing && !REQUIRED) {
  console.warn(`\n*** dashboard browser tests SKIPPED: no Chromium at ${CHROMIUM} (apt-get install -y chromium, or set LEASEHOLD_CHROMIUM; LEASEHOLD_REQUIRE_BROWSER=1 fails instead) ***\n`);
}

const Q = 'images';
/** The board's tabs, by the leasehold status (and runAt side) each lists. */
const TABS = ['active', 'waiting', 'delayed', 'failed', 'completed'] as const;
type Tab = (typeof TABS)[number];

interface Board {
  queue: JobQueue;
  clock: ManualClock;
  ids: EveryStatus;
  server: DashboardServer;
  root: string;
}

/** A queue with jobs in every status (a few more ready and finished ones, so the page has a list to show), served. */
async function board(allowWrites: boolean): Promise<Board> {
  const clock = new ManualClock(Date.now());
  const queue = new JobQueue(clock, new RetryPolicy(3, 1_000, 60_000));
  const ids = await fillEveryStatus(queue, clock);
  for (const file of ['d.png', 'e.png', 'f.png']) queue.submit('resize', JSON.stringify({ file, width: 128 }));
  const lease = queue.poll('worker-4', 60_000)!;
  queue.complete(lease.jobId, lease.token);
  const adapter = await createDashboardAdapter(queue, { name: Q, readOnly: !allowWrites, time: clock });
  const server = await serveDashboard([adapter], { allowWrites });
  onTestFinished(() => server.close());
  return { queue, clock, ids, server, root: `${new URL(server.url).origin}/` };
}

/** Which tab a job is on at `now`, as the adapter maps it; undefined for CANCELLED. */
function tabOf(view: JobView, now: number): Tab | undefined {
  if (view.status === JobStatus.PENDING) return view.nextRunAt <= now ? 'waiting' : 'delayed';
  return ({ RUNNING: 'active', SUCCEEDED: 'completed', DEAD: 'failed' } as const)[view.status as 'RUNNING'];
}

/** The ids `jobs()` has on `tab`, in its order. */
function idsOnTab(board: Board, tab: Tab): string[] {
  return board.queue.jobs().jobs.filter((view) => tabOf(view, board.clock.now()) === tab).map((view) => view.id);
}

/** The link to a job, in a list (with the tab in its query, or none on the "latest" page). */
function jobLink(page: Page, id: string) {
  return page.locator(`a[href="/queue/${Q}/${id}"], a[href^="/queue/${Q}/${id}?"]`);
}

/** A tab's link (the menu on the left links the open tab too, by the queue's name). */
function tabLink(page: Page, tab: Tab) {
  return page.locator(`a[href="/queue/${Q}?status=${tab}"]`).filter({ hasText: new RegExp(`^${tab}`, 'i') });
}

/** The count each tab's badge shows (no badge: 0). */
async function tabCounts(page: Page): Promise<Record<Tab, number>> {
  const counts = {} as Record<Tab, number>;
  for (const tab of TABS) {
    const text = await tabLink(page, tab).textContent();
    const match = new RegExp(`^${tab}(\\d*)$`, 'i').exec((text ?? '').trim());
    expect(match, `the ${tab} tab's text ${JSON.stringify(text)}`).not.toBeNull();
    counts[tab] = Number(match![1] || 0);
  }
  return counts;
}

/** The job ids the open tab lists, in the page's order. */
async function listedIds(page: Page): Promise<string[]> {
  return page.locator(`a[href*="/queue/${Q}/J"] span:first-child`).allTextContents();
}

async function openTab(page: Page, board: Board, tab: Tab, expected: readonly string[]): Promise<void> {
  await page.goto(`${board.root}queue/${Q}?status=${tab}`);
  // The list arrives with the board's first poll of the API: wait for its last job (or its "no jobs" state).
  if (expected.length > 0) await jobLink(page, expected.at(-1)!).waitFor();
  else await tabLink(page, tab).waitFor();
}

describe.skipIf(missing && !REQUIRED)('dashboard in headless Chromium', () => {
  let browser: Browser;

  beforeAll(async () => {
    // As root (CI, containers) Chromium needs --no-sandbox.
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
  });

  /** A page that opened the board's URL (the token traded for its cookie). */
  async function signedIn(b: Board): Promise<Page> {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    onTestFinished(() => context.close());
    const page = await context.newPage();
    const response = await page.goto(b.server.url);
    expect(response?.status()).toBe(200);
    expect(new URL(page.url()).search).toBe('');
    return page;
  }

  it('is refused without the token (401) and with a wrong one (403): no board, no API', async () => {
    const b = await board(false);
    const context = await browser.newContext();
    onTestFinished(() => context.close());
    const page = await context.newPage();
    const bare = await page.goto(b.root);
    expect(bare?.status()).toBe(401);
    expect(await page.locator('#root').count()).toBe(0);
    expect((await page.goto(`${b.root}api/queues`))?.status()).toBe(401);
    expect((await page.goto(`${b.root}?token=${'x'.repeat(43)}`))?.status()).toBe(403);
    expect(await page.locator('#root').count()).toBe(0);
  });

  it("shows stats()' counts on the tabs, and on each tab the jobs jobs() has in that status, in order", async () => {
    const b = await board(false);
    const page = await signedIn(b);
    const stats = b.queue.stats();
    for (const tab of TABS) {
      const expected = idsOnTab(b, tab);
      await openTab(page, b, tab, expected);
      expect(await tabCounts(page), `the counts on the ${tab} page`).toEqual({
        active: stats.running, waiting: stats.ready, delayed: stats.delayed, failed: stats.dead, completed: stats.succeeded,
      });
      expect(await listedIds(page), `the ${tab} list`).toEqual(expected);
    }
    expect(idsOnTab(b, 'failed')).toEqual([b.ids.dead]);
    if (SCREENSHOT) {
      await openTab(page, b, 'completed', idsOnTab(b, 'completed'));
      await page.goto(`${b.root}queue/${Q}`);
      await jobLink(page, b.ids.ready).waitFor();
      await page.screenshot({ path: SCREENSHOT_PATH });
    }
  });

  it('retries a dead job by its button: the job is PENDING in the queue, attempts 0, and leaves the failed tab', async () => {
    const b = await board(true);
    const page = await signedIn(b);
    await openTab(page, b, 'failed', [b.ids.dead]);
    const card = page.locator('[class*="card-"]', { has: jobLink(page, b.ids.dead) });
    await card.locator('button:has(svg.lucide-refresh-cw)').click();
    await page.getByRole('button', { name: 'Confirm' }).click();
    await waitUntil('the retry reached the queue', () => b.queue.view(b.ids.dead).status === JobStatus.PENDING);
    expect(b.queue.view(b.ids.dead)).toMatchObject({ status: JobStatus.PENDING, attempts: 0 });
    await jobLink(page, b.ids.dead).waitFor({ state: 'detached' });
    expect((await tabCounts(page)).failed).toBe(0);
  });

  it('asks no host but its own for anything: page, styles, fonts, scripts, API, on every tab and a job\'s page', async () => {
    const b = await board(false);
    const context = await browser.newContext();
    onTestFinished(() => context.close());
    const elsewhere: string[] = [];
    const own = new URL(b.root).host;
    // Every request is seen here before it leaves; one to another host is noted and aborted (no network needed).
    await context.route('**/*', (route) => {
      const url = new URL(route.request().url());
      if (url.host === own || url.protocol === 'data:') return route.continue();
      elsewhere.push(url.href);
      return route.abort();
    });
    const page = await context.newPage();
    expect((await page.goto(b.server.url))?.status()).toBe(200);
    await page.waitForLoadState('networkidle');
    for (const tab of TABS) await openTab(page, b, tab, idsOnTab(b, tab));
    await page.goto(`${b.root}queue/${Q}/${b.ids.dead}`);
    await page.waitForLoadState('networkidle');
    expect(elsewhere).toEqual([]);
  });

  it('shows a running job\'s progress: the ring on its card and the value on its Progress tab; none for a job without', async () => {
    const b = await board(false);
    const id = b.queue.submit('render', JSON.stringify({ scene: 'x' }), { priority: 100 });
    const lease = b.queue.poll('worker-5', 60_000)!;
    expect(lease.jobId).toBe(id);
    b.queue.progress(id, lease.token, 42.5);
    const page = await signedIn(b);
    await openTab(page, b, 'active', idsOnTab(b, 'active'));
    const card = page.locator('[class*="card-"]', { has: jobLink(page, id) });
    await expect.poll(() => card.locator('[role="progressbar"]').getAttribute('aria-valuenow'), { timeout: 10_000 }).toBe('42.5');
    await card.getByRole('tab', { name: 'Progress' }).or(card.getByRole('button', { name: 'Progress', exact: true })).first().click();
    const show = card.getByRole('button', { name: /show progress/i });
    if (await show.count() > 0) await show.click();
    await expect.poll(() => card.textContent(), { timeout: 10_000 }).toMatch(/"?progress"?\s*:\s*42\.5/);
    // The job running without a report: no ring, and the tab says so.
    const silent = page.locator('[class*="card-"]', { has: jobLink(page, b.ids.running) });
    expect(await silent.locator('[role="progressbar"]').count()).toBe(0);
  });

  it('shows a job\'s log lines on its Logs tab', async () => {
    const b = await board(false);
    b.queue.log(b.ids.running, 'fetched c.png (2 MiB)');
    b.queue.log(b.ids.running, 'uploading to the bucket');
    const page = await signedIn(b);
    await openTab(page, b, 'active', idsOnTab(b, 'active'));
    const card = page.locator('[class*="card-"]', { has: jobLink(page, b.ids.running) });
    await card.getByRole('tab', { name: 'Logs' }).or(card.getByRole('button', { name: 'Logs', exact: true })).first().click();
    await expect.poll(() => card.textContent(), { timeout: 10_000 }).toContain('uploading to the bucket');
    expect(await card.textContent()).toContain('fetched c.png (2 MiB)');
  });

  it('shows no retry button on a read-only board', async () => {
    const b = await board(false);
    const page = await signedIn(b);
    await openTab(page, b, 'failed', [b.ids.dead]);
    const card = page.locator('[class*="card-"]', { has: jobLink(page, b.ids.dead) });
    expect(await card.locator('button:has(svg.lucide-refresh-cw)').count()).toBe(0);
    expect(b.queue.view(b.ids.dead).status).toBe(JobStatus.DEAD);
  });
});
