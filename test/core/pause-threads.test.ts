import { describe, expect, it } from 'vitest';
import { JobQueue, ManualClock, RetryPolicy } from '../../dist/index.js';
import { T0, startWorker, terminateAll, withTimeout, type RunningWorker } from '../support/helpers.js';
import { closeJournal, openJournal, tempJournal } from '../support/journal-harness.js';

interface Report {
  leasedWhilePaused: string[];
  sawPaused: boolean | null;
  woken: boolean | null;
  completed: string[];
}

const PARTIES = 4;
const JOBS = 200;
const POLLS_WHILE_PAUSED = 500;
const policy = () => new RetryPolicy(3, 0, 0);

/** Runs pause-thread.mjs on `queue` in PARTIES threads; returns their reports. */
async function runThreads(queue: JobQueue): Promise<Report[]> {
  const ids = Array.from({ length: JOBS }, (_, i) => queue.submit('work', `job ${i}`));
  const controlBuffer = new SharedArrayBuffer(3 * Int32Array.BYTES_PER_ELEMENT);
  const workers: RunningWorker[] = [];
  try {
    for (let index = 0; index < PARTIES; index++) {
      workers.push(await startWorker('pause-thread.mjs', {
        handle: queue.share(), index, parties: PARTIES, pollsWhilePaused: POLLS_WHILE_PAUSED, total: JOBS + 1, controlBuffer,
      }));
    }
    const reports = (await withTimeout(Promise.all(workers.map((w) => w.result)), 60_000, 'the pause threads')) as Report[];
    const completed = reports.flatMap((r) => r.completed).sort();
    // Every job, and the one submitted while paused, leased and completed exactly once, all after the resume.
    expect(completed).toEqual([...ids, `J${JOBS + 1}`].sort());
    return reports;
  } finally {
    await terminateAll(workers);
  }
}

function expectPausedThenWoken(reports: Report[]): void {
  const pollers = reports.slice(1);
  expect(pollers.map((r) => r.leasedWhilePaused)).toEqual(pollers.map(() => []));
  expect(pollers.map((r) => r.sawPaused)).toEqual(pollers.map(() => true));
  // Woken by the resume, not by the 30 s timeout.
  expect(pollers.map((r) => r.woken)).toEqual(pollers.map(() => true));
}

describe('pause across threads', () => {
  it('in memory: while one thread has paused the queue, no thread leases; the resume wakes them all', async () => {
    const queue = new JobQueue(new ManualClock(T0), policy());
    const reports = await runThreads(queue);
    expectPausedThenWoken(reports);
    expect(queue.stats()).toMatchObject({ succeeded: JOBS + 1, pending: 0, paused: false });
    queue.close();
  });

  it('journaled: while one thread has paused the queue, no thread leases; the resume wakes them all', async () => {
    const queue = openJournal(tempJournal(), new ManualClock(T0), policy());
    const reports = await runThreads(queue);
    expectPausedThenWoken(reports);
    expect(queue.stats()).toMatchObject({ succeeded: JOBS + 1, pending: 0, paused: false });
    closeJournal(queue);
  });
});

describe('pause of a journaled queue', () => {
  it('stays paused across close and reopen, and resumed after a resume and reopen', () => {
    const path = tempJournal();
    const clock = new ManualClock(T0);
    let queue = openJournal(path, clock, policy());
    const id = queue.submit('t');
    queue.pause();
    closeJournal(queue);
    queue = openJournal(path, clock, policy());
    expect([queue.isPaused(), queue.stats().paused]).toEqual([true, true]);
    expect(queue.poll('w1', 1_000)).toBeUndefined();
    queue.resume();
    closeJournal(queue);
    queue = openJournal(path, clock, policy());
    expect(queue.isPaused()).toBe(false);
    expect(queue.poll('w1', 1_000)?.jobId).toBe(id);
    closeJournal(queue);
  });

  it('a thread that attaches to a paused queue sees it paused', async () => {
    const queue = new JobQueue(new ManualClock(T0), policy());
    queue.pause();
    const other = JobQueue.attach(queue.share());
    expect(other.isPaused()).toBe(true);
    other.resume();
    expect(queue.isPaused()).toBe(false);
    other.close();
    queue.close();
  });
});
