/**
 * `leasehold demo`: a thumbnail farm on a WorkerPool, with faults injected at
 * set rates, that proves at the end that every job is accounted for.
 *
 * The main thread draws N source PNGs into `out/sources`, submits one
 * `thumbnail` job per image and lets the pool drain the queue; the pool
 * threads (workers/thumbnail-handlers.js) decode, shrink (with jimp) and write
 * `out/thumbs/*.png`. Exit code 0 only if succeeded + dead = submitted, every
 * succeeded job left a valid thumbnail of the right size, and the success log
 * names no job twice; otherwise 1, with the reasons.
 *
 * jimp is a dev dependency (and an optional peer): a clone has it, an app
 * that installed leasehold does not, so the demo loads it before anything
 * else and says what to install when it is missing.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { JobQueue, RetryPolicy, WorkerPool, systemClock, type JobView } from '../index.js';
import { account, type JobOutcome } from './accounting.js';
import { faultCounts, planFaults, type FaultRates, type PlannedFault } from './faults.js';
import { importOptional } from '../optional.js';
import { Progress } from './progress.js';
import { formatDeadLetters, formatSummary, formatVerdict } from './report.js';
import { fitWithin } from './resize.js';
import { THUMBNAIL_JOB, type ThumbnailPayload } from './thumbnail-job.js';

export { account, type Accounting, type AccountingInput, type JobOutcome } from './accounting.js';
export type { ThumbnailPayload } from './thumbnail-job.js';

export interface DemoOptions extends FaultRates {
  /** @default 200 */
  jobs: number;
  /** Pool threads. @default 2 */
  threads: number;
  /** Lease per poll; also how long a hung thread is given before it is replaced. @default 1000 */
  leaseMillis: number;
  /** Decides which jobs get which fault, and the images. @default 2026 */
  seed: number;
  /** Output folder, kept; its `sources/`, `thumbs/` and `successes.log` are replaced. @default a fresh temp folder, removed at the end */
  out: string | undefined;
  /** Side of the square source images, in pixels. @default 512 */
  size: number;
  /** Thumbnails fit in thumb × thumb. @default 64 */
  thumb: number;
  /** Give up (exit 1) if the queue has not drained by then. @default 120 */
  timeoutSeconds: number;
}

export const kDemoDefaults: Readonly<DemoOptions> = Object.freeze({
  jobs: 200,
  threads: 2,
  transient: 0.05,
  crash: 0.02,
  hang: 0.01,
  stall: 0.01,
  poison: 0.02,
  leaseMillis: 1000,
  seed: 2026,
  out: undefined,
  size: 512,
  thumb: 64,
  timeoutSeconds: 120,
});

/** Attempts per job: room for a transient fault's two failures and one crash or hang besides. */
const MAX_ATTEMPTS = 4;
const HANDLERS = new URL('../../workers/thumbnail-handlers.js', import.meta.url);

interface Planned {
  id: string;
  payload: ThumbnailPayload;
  fault: PlannedFault;
}

/** Runs the demo, writing to stdout; resolves to the exit code. Without `out`, its temp folder is removed at the end. */
export async function runDemo(options: DemoOptions): Promise<number> {
  const images = await importOptional(['jimp'], 'The demo (leasehold demo)', () => import('./images.js'));
  const out = prepareOut(options.out);
  try {
    return await runIn(out, options, images);
  } finally {
    if (options.out === undefined) rmSync(out, { recursive: true, force: true });
  }
}

/** The demo's image code (src/cli/images.ts), loaded with jimp. */
type Images = typeof import('./images.js');

async function runIn(out: string, options: DemoOptions, images: Images): Promise<number> {
  const dirs: Dirs = { sources: join(out, 'sources'), thumbs: join(out, 'thumbs'), log: join(out, 'successes.log') };
  mkdirSync(dirs.sources, { recursive: true });
  mkdirSync(dirs.thumbs, { recursive: true });
  writeFileSync(dirs.log, '');
  console.log(
    `leasehold demo: ${options.jobs} thumbnail jobs (${options.size}px → ${options.thumb}px), ${options.threads} threads, ` +
      `lease ${options.leaseMillis} ms, seed ${options.seed}`,
  );
  console.log(`  output: ${out}${options.out === undefined ? ' (removed at the end: --out DIR keeps it)' : ''}`);

  const queue = new JobQueue(systemClock, new RetryPolicy(MAX_ATTEMPTS, 50, 1000), {
    capacity: Math.max(1024, options.jobs),
  });
  const generatedIn = performance.now();
  const jobs = await makeJobs(options, dirs, queue, images);
  console.log(`  generated and submitted ${jobs.length} sources in ${((performance.now() - generatedIn) / 1000).toFixed(2)} s`);

  const run = await runPool(queue, options, jobs.length);
  const views = jobs.map((job) => viewOf(queue, job.id));
  const thumb = fitWithin(options.size, options.size, options.thumb);
  const outcomes: JobOutcome[] = await Promise.all(jobs.map(async (job, i) => {
    const view = views[i]!;
    const status = typeof view === 'string' ? view : view.status;
    const problem = status === 'SUCCEEDED' ? await images.inspectPng(job.payload.target, thumb.width, thumb.height) : null;
    return { id: job.id, status, thumbnailProblem: problem };
  }));
  // Each line: `J7 attempt 2 thread 3 at 1764000000000`; the id is what counts.
  const logLines = readFileSync(dirs.log, 'utf8').split('\n').filter((line) => line !== '');
  const successLog = logLines.map((line) => line.split(' ')[0]!);
  const accounting = account({ submitted: jobs.length, jobs: outcomes, successLog });

  const faultById = new Map(jobs.map((job) => [job.id, job.fault.fault]));
  console.log();
  console.log(formatSummary({
    submitted: jobs.length,
    succeeded: accounting.succeeded,
    dead: accounting.dead,
    attempts: views.reduce((sum, view) => sum + (typeof view === 'string' ? 0 : view.attempts), 0),
    restarts: run.restarts,
    refused: run.refused,
    elapsedMillis: run.elapsedMillis,
    planned: faultCounts(options.jobs, options),
  }));
  console.log();
  console.log(formatDeadLetters(queue.deadLetters(), (view) => faultById.get(view.id) ?? '?'));
  const surprises = [...surprisesOf(jobs, views), ...repeatsOf(logLines, jobs, views)];
  if (surprises.length > 0) console.log(`\nNotes:\n${surprises.map((note) => `  - ${note}`).join('\n')}`);
  console.log();
  if (options.out !== undefined) console.log(`Thumbnails: ${dirs.thumbs}`);
  const verdict = run.drained
    ? accounting
    : { ...accounting, ok: false, problems: [`the queue did not drain within ${options.timeoutSeconds} s`, ...accounting.problems] };
  console.log(formatVerdict(verdict, jobs.length));
  return verdict.ok ? 0 : 1;
}

interface Dirs {
  sources: string;
  thumbs: string;
  log: string;
}

interface PoolRun {
  drained: boolean;
  elapsedMillis: number;
  restarts: number;
  refused: number;
}

/** Starts the pool, shows its progress until the queue drains (or the timeout), and closes it. */
async function runPool(queue: JobQueue, options: DemoOptions, total: number): Promise<PoolRun> {
  const pool = new WorkerPool(queue, { handlers: HANDLERS, threads: options.threads, leaseMillis: options.leaseMillis, workerId: 'demo' });
  const started = performance.now();
  await pool.start();
  const progress = new Progress('Thumbnails', total, () => {
    const s = pool.stats();
    return {
      done: s.succeeded + s.dead,
      fields: { pending: s.pending, running: s.running, succeeded: s.succeeded, dead: s.dead, restarts: s.restarts },
    };
  }).every(100);
  let drained: boolean;
  let elapsedMillis: number;
  try {
    drained = await drainWithin(pool, options.timeoutSeconds * 1000);
    elapsedMillis = performance.now() - started;
  } finally {
    progress.stop();
    await pool.close();
  }
  // After close: a zombie's refused settle may come in while the pool winds down.
  const { restarts, refused } = pool.stats();
  return { drained, elapsedMillis, restarts, refused };
}

/** Draws every source PNG (poison jobs get a corrupt one) and submits its job, with a progress bar. */
async function makeJobs(options: DemoOptions, dirs: Dirs, queue: JobQueue, { corrupt, renderSource }: Images): Promise<Planned[]> {
  const plan = planFaults(options.jobs, options, options.seed);
  const jobs: Planned[] = [];
  const progress = new Progress('Sources   ', options.jobs, () => ({ done: jobs.length, fields: { submitted: jobs.length } }));
  const digits = String(options.jobs).length;
  for (let i = 0; i < options.jobs; i++) {
    const fault = plan[i]!;
    const name = String(i + 1).padStart(digits, '0');
    const source = join(dirs.sources, `src-${name}.png`);
    const png = await renderSource(options.size, (options.seed * 0x9e3779b1 + i) >>> 0);
    writeFileSync(source, fault.fault === 'poison' ? corrupt(png) : png);
    const payload: ThumbnailPayload = {
      source,
      target: join(dirs.thumbs, `thumb-${name}.png`),
      maxSide: options.thumb,
      successLog: dirs.log,
      fault: fault.fault,
      failAttempts: fault.failAttempts,
      leaseMillis: options.leaseMillis,
    };
    jobs.push({ id: queue.submit(THUMBNAIL_JOB, JSON.stringify(payload)), payload, fault });
    progress.update();
  }
  progress.stop();
  return jobs;
}

/** The output folder, made if needed; the demo's own entries in it are cleared. */
function prepareOut(out: string | undefined): string {
  if (out === undefined) return mkdtempSync(join(tmpdir(), 'leasehold-demo-'));
  const dir = resolve(out);
  mkdirSync(dir, { recursive: true });
  for (const entry of ['sources', 'thumbs', 'successes.log']) rmSync(join(dir, entry), { recursive: true, force: true });
  return dir;
}

async function drainWithin(pool: WorkerPool, millis: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((r) => (timer = setTimeout(() => r(false), millis)));
  try {
    return await Promise.race([pool.drain().then(() => true as const), late]);
  } finally {
    clearTimeout(timer);
  }
}

/** The job's final view, or why there is none (its message: evicted, not found). */
function viewOf(queue: JobQueue, id: string): JobView | string {
  try {
    return queue.view(id);
  } catch (error) {
    return `missing (${(error as Error).message})`;
  }
}

/** Outcomes that differ from the plan without breaking the accounting: worth a look, not a failure. */
function surprisesOf(jobs: readonly Planned[], views: readonly (JobView | string)[]): string[] {
  const notes: string[] = [];
  jobs.forEach((job, i) => {
    const view = views[i]!;
    if (typeof view === 'string') return;
    const expected = job.fault.fault === 'poison' ? 'DEAD' : 'SUCCEEDED';
    if (view.status !== expected) {
      notes.push(`${job.id} (fault ${job.fault.fault}) ended ${view.status}, expected ${expected}: ${view.lastError ?? ''}`);
    }
  });
  return notes;
}

/** For a job logged as succeeding more than once: its log lines and how its first attempts ended. */
function repeatsOf(logLines: readonly string[], jobs: readonly Planned[], views: readonly (JobView | string)[]): string[] {
  const byId = new Map<string, string[]>(); // not Map.groupBy: Node 20 lacks it
  for (const line of logLines) {
    const id = line.split(' ')[0]!;
    byId.set(id, [...(byId.get(id) ?? []), line]);
  }
  const notes: string[] = [];
  for (const [id, lines] of byId) {
    if (lines.length < 2) continue;
    const view = views[jobs.findIndex((job) => job.id === id)];
    const ended = typeof view === 'object' ? `; its last error: ${view.lastError ?? 'none'}` : '';
    notes.push(`${id} logged ${lines.length} successes: ${lines.join(' / ')}${ended}`);
  }
  return notes;
}
