/**
 * remove racing polls of the same PENDING job, in real threads: in each
 * round one job is submitted, then removed while two threads poll at once.
 * For every job, exactly one side wins. Either a poll leased it (once) and the remove
 * was refused with IllegalStateError (the job is RUNNING), or the remove took
 * it and no poll ever leased it. Fixture: test/fixtures/remove-racer.mjs.
 */
import { describe, expect, it } from 'vitest';
import { JobQueue, ManualClock, RetryPolicy } from '../../dist/index.js';
import { T0, startWorker, terminateAll, withTimeout, type RunningWorker } from '../support/helpers.js';
import { closeJournal, openJournal, tempJournal } from '../support/journal-harness.js';

const PARTIES = 3; // one remover, two pollers
const OUTCOME = { removed: 1, running: 2, notFound: 3, other: 4 };

async function race(queue: JobQueue, total: number): Promise<void> {
  const controlBuffer = new SharedArrayBuffer(3 * Int32Array.BYTES_PER_ELEMENT);
  const outcomeBuffer = new SharedArrayBuffer((total + 1) * Int32Array.BYTES_PER_ELEMENT);
  const leasedBuffer = new SharedArrayBuffer((total + 1) * Int32Array.BYTES_PER_ELEMENT);
  const workers: RunningWorker[] = [];
  try {
    for (let index = 0; index < PARTIES; index++) {
      workers.push(await startWorker('remove-racer.mjs', {
        handle: queue.share(), index, parties: PARTIES, total, controlBuffer, outcomeBuffer, leasedBuffer,
      }));
    }
    const reports = (await withTimeout(Promise.all(workers.map((w) => w.result)), 120_000, 'the remove racers')) as { others: string[] }[];
    expect(reports.flatMap((r) => r.others)).toEqual([]);
  } finally {
    await terminateAll(workers);
  }
  const outcome = new Int32Array(outcomeBuffer);
  const leased = new Int32Array(leasedBuffer);
  const wrong: string[] = [];
  let removed = 0;
  for (let n = 1; n <= total; n++) {
    const id = `J${n}`;
    let status: string;
    try {
      status = queue.view(id).status;
    } catch (error) {
      status = (error as { code: string }).code;
    }
    const removedWon = outcome[n] === OUTCOME.removed && leased[n] === 0 && status === 'ERR_JOB_NOT_FOUND';
    const pollWon = outcome[n] === OUTCOME.running && leased[n] === 1 && status === 'RUNNING';
    if (removedWon) removed++;
    if (!removedWon && !pollWon) wrong.push(`${id}: remove outcome ${outcome[n]}, leased ${leased[n]} times, now ${status}`);
  }
  // Every job checked, not a sample.
  expect(wrong).toEqual([]);
  expect(queue.stats()).toMatchObject({ pending: 0, running: total - removed });
}

describe('remove racing polls of the same jobs, in threads', () => {
  it('in memory: each job is leased once with its remove refused, or removed and never leased', async () => {
    const queue = new JobQueue(new ManualClock(T0), new RetryPolicy(3, 0, 0), { capacity: 8192 });
    await race(queue, 2000);
    queue.close();
  });

  it('journaled: the same, every call under the lock', async () => {
    const queue = openJournal(tempJournal(), new ManualClock(T0), new RetryPolicy(3, 0, 0));
    await race(queue, 500);
    closeJournal(queue);
  });
});
