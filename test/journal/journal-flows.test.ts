/**
 * Flows with a journal: across a kill -9 of the whole process (the links and
 * counts come back, no flow is half there, no parent runs early), and on a
 * full disk (a refused submitFlow leaves nothing, a refused complete of the
 * last child leaves its parent waiting, in memory and after a reopen).
 *
 * Fixture: test/fixtures/journal-flow-runner.mjs. The disk tests need root
 * and mount(8); where mounting is refused they are skipped and say so.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { JournalFullError, ManualClock, RetryPolicy, systemClock, type JobView } from '../../dist/index.js';
import { fillDisk, mountRefusal, mountTmpfs, unmountAll } from '../support/full-disk.js';
import { T0, expectErrorSync, mustPollSync, prng, testSeed, withTimeout } from '../support/helpers.js';
import { children, closeJournal, openJournal, tempJournal } from '../support/journal-harness.js';

const policy = (): RetryPolicy => new RetryPolicy(3, 0, 0);

/** Runs the fixture on `path` until it has printed line `lines`, then kills it with SIGKILL; its lines. */
async function runThenKill(path: string, lines: number): Promise<string[]> {
  const proc: ChildProcess = spawn(process.execPath, [new URL('../fixtures/journal-flow-runner.mjs', import.meta.url).pathname, path], { stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(proc);
  const seen: string[] = [];
  let partial = '';
  let stderr = '';
  proc.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const closed = new Promise<void>((resolve) => proc.once('close', () => resolve()));
  const reached = new Promise<void>((resolve, reject) => {
    proc.stdout!.on('data', (chunk: Buffer) => {
      const parts = (partial + chunk.toString()).split('\n');
      partial = parts.pop()!;
      seen.push(...parts);
      if (seen.length >= lines) resolve();
    });
    void closed.then(() => reject(new Error(`the runner ended (${proc.exitCode}) after ${seen.length} lines; stderr: ${stderr}`)));
  });
  await withTimeout(reached, 20_000, `line ${lines} of the runner`);
  proc.kill('SIGKILL');
  await withTimeout(closed, 10_000, 'the killed runner to end');
  expect(proc.signalCode).toBe('SIGKILL');
  return seen;
}

describe('flows in a process killed with SIGKILL', { timeout: 60_000 }, () => {
  const random = prng(testSeed('journal-flows'));
  const trials = Array.from({ length: 3 }, (_, i) => ({ trial: i + 1, lines: 20 + Math.floor(random() * 200) }));

  it.each(trials)('keep every acknowledged flow whole, its counts, and run parents only after their children (trial $trial: killed after line $lines)', async ({ lines }) => {
    const path = tempJournal();
    const printed = await runThenKill(path, lines);
    const flows = printed.filter((line) => line.split(' ')[1] === 'flow').map((line) => line.split(' ').slice(2));
    const done = new Set(printed.filter((line) => line.split(' ')[1] === 'done').map((line) => line.split(' ')[2]!));
    expect(flows.length).toBeGreaterThan(0);

    const queue = openJournal(path, systemClock, policy());
    const stats = queue.stats();
    // One flow, one commit: the jobs come in whole flows of five (the kill may have kept one flow more than printed).
    const total = stats.pending + stats.running + stats.succeeded + stats.dead + stats.cancelled;
    expect(total % 5).toBe(0);
    expect(total).toBeGreaterThanOrEqual(flows.length * 5);
    for (const id of done) expect(queue.view(id).status).toBe('SUCCEEDED');
    for (let first = 1; first <= total; first += 5) {
      const [root, leaf, mid, leaf1, leaf2] = [0, 1, 2, 3, 4].map((k) => queue.view(`J${first + k}`));
      expectWaits(mid!, [leaf1!, leaf2!]);
      expectWaits(root!, [leaf!, mid!]);
    }
    // The rest runs now: each parent only once its children succeeded.
    for (let lease = queue.poll('w', 60_000); lease !== undefined; lease = queue.poll('w', 60_000)) {
      if (lease.type === 'parent') expect(Object.keys(queue.childResults(lease.jobId))).toHaveLength(JSON.parse(String(lease.payload)).children);
      queue.complete(lease.jobId, lease.token);
    }
    expect(queue.stats()).toMatchObject({ succeeded: total, pending: 0 });
    closeJournal(queue);
  });
});

/** A parent's view against its children's: SUCCEEDED only after all of them; while PENDING, waiting for those not SUCCEEDED. */
function expectWaits(parent: JobView, kids: JobView[]): void {
  const unfinished = kids.filter((kid) => kid.status !== 'SUCCEEDED').length;
  for (const kid of kids) expect(kid.parentId).toBe(parent.id);
  if (parent.status === 'PENDING') expect(parent.waitingChildren, `${parent.id} waits for ${unfinished}`).toBe(unfinished === 0 ? undefined : unfinished);
  else expect(unfinished, `${parent.id} is ${parent.status} with children unfinished`).toBe(0);
}

// ── a full disk ───────────────────────────────────────────────────────────

const canMount = mountRefusal === undefined;
if (mountRefusal !== undefined) console.warn(`\n!!! SKIPPING the full-disk tests of test/journal/journal-flows.test.ts: cannot mount a tmpfs here (${mountRefusal.message}).\n`);

afterEach(unmountAll);

describe.skipIf(!canMount)('flows with a journal on a full disk', () => {
  it('refuse a submitFlow with JournalFullError, leaving no job of it, in memory and after a reopen', () => {
    const dir = mountTmpfs('3M');
    const path = join(dir, 'queue.db');
    const clock = new ManualClock(T0);
    let queue = openJournal(path, clock, policy());
    const kept = queue.submit('keep', 'a');
    const freeSpace = fillDisk(dir, path);
    const big = { type: 'parent', payload: 'p'.repeat(1_000), children: Array.from({ length: 20 }, () => ({ type: 'leaf', payload: 'l'.repeat(1_000) })) };
    expectErrorSync(() => queue.submitFlow(big), JournalFullError, 'ERR_JOURNAL_FULL');
    expect(queue.stats()).toMatchObject({ pending: 1 });
    expect(() => queue.view('J2')).toThrow(/No job|evicted/);
    freeSpace();
    closeJournal(queue);
    queue = openJournal(path, clock, policy());
    expect(queue.stats()).toMatchObject({ pending: 1 });
    expect(queue.view(kept).status).toBe('PENDING');
    // Job numbers go on after the undone ones.
    const ids = queue.submitFlow({ type: 'parent', children: [{ type: 'leaf' }] });
    expect(queue.view(ids[0]!).waitingChildren).toBe(1);
    closeJournal(queue);
  });

  it("refuse the last child's complete with JournalFullError: the parent still waits, the child's lease still holds; with room it goes through", () => {
    const dir = mountTmpfs('3M');
    const path = join(dir, 'queue.db');
    const clock = new ManualClock(T0);
    let queue = openJournal(path, clock, policy());
    const [parent, child] = queue.submitFlow({ type: 'parent', children: [{ type: 'leaf' }] });
    const lease = mustPollSync(queue, child, 60_000);
    const freeSpace = fillDisk(dir, path);
    expectErrorSync(() => queue.complete(child!, lease.token, 'r'.repeat(2_000)), JournalFullError, 'ERR_JOURNAL_FULL');
    expect(queue.view(parent!)).toMatchObject({ status: 'PENDING', waitingChildren: 1 });
    expect(queue.view(child!).status).toBe('RUNNING');
    expect(queue.poll('w', 60_000)).toBeUndefined();
    freeSpace();
    queue.complete(child!, lease.token, 'r');
    expect(queue.view(parent!).waitingChildren).toBeUndefined();
    closeJournal(queue);
    queue = openJournal(path, clock, policy());
    const run = mustPollSync(queue, parent);
    expect(queue.childResults(run.jobId)).toEqual({ [child!]: 'r' });
    closeJournal(queue);
  });
});
