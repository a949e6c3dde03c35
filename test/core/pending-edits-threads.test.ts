/**
 * Edits of a PENDING job racing polls on other threads (real worker_threads,
 * in memory and on a journal): round after round one thread edits a job
 * while three poll once at the same instant (a shared-memory barrier). Either
 * a poll leases the job as it was and the edit is refused with
 * IllegalStateError, or the edit is made and whoever leases the job sees it
 * edited: never an edit lost, a job leased twice, or a lease of a job the
 * edit delayed.
 */
import { describe, expect, it } from 'vitest';
import { JobQueue, ManualClock, RetryPolicy } from '../../dist/index.js';
import { startWorker, terminateAll, withTimeout } from '../support/helpers.js';
import { closeJournal, openJournal, tempJournal } from '../support/journal-harness.js';

const START = 1_767_225_600_000;
const WORKERS = 4;
/** changeDelay's delay: never reached, as the clock stands still. */
const FAR_AHEAD = 3_600_000;
const EDIT_NAMES = ['updatePayload', 'changePriority', 'changeDelay', 'promote'] as const;

async function raceEdits(queue: JobQueue, rounds: number): Promise<void> {
  const controlBuffer = new SharedArrayBuffer(8);
  const resultBuffer = new SharedArrayBuffer(rounds * WORKERS * 2 * 8);
  const submittedBuffer = new SharedArrayBuffer(rounds * 4);
  const handle = queue.share();
  const threads = await Promise.all(
    Array.from({ length: WORKERS }, (_, index) =>
      startWorker('edit-race-worker.mjs', { handle, index, workers: WORKERS, rounds, controlBuffer, resultBuffer, submittedBuffer, farAhead: FAR_AHEAD }),
    ),
  );
  try {
    await withTimeout(Promise.all(threads.map((t) => t.result)), 90_000, 'racing edits');
  } finally {
    await terminateAll(threads);
  }
  const result = new Float64Array(resultBuffer);
  const submitted = new Int32Array(submittedBuffer);
  const violations: string[] = [];
  const made = { updatePayload: 0, changePriority: 0, changeDelay: 0, promote: 0 };
  for (let r = 0; r < rounds; r++) {
    const job = submitted[r]!;
    const edit = EDIT_NAMES[r % 4]!;
    const outcome = result[r * WORKERS * 2]!;
    const winners = [1, 2, 3].filter((w) => result[(r * WORKERS + w) * 2] !== 0);
    const edited = winners.map((w) => result[(r * WORKERS + w) * 2 + 1] === 1);
    const say = (what: string) => violations.push(`round ${r} (J${job}, ${edit} ${outcome === 1 ? 'made' : 'refused'}): ${what}`);
    for (const w of winners) if (result[(r * WORKERS + w) * 2] !== job) say(`w${w} leased J${result[(r * WORKERS + w) * 2]}`);
    if (outcome === 1) made[edit]++;
    const view = queue.view(`J${job}`);
    switch (edit) {
      case 'updatePayload':
      case 'changePriority': {
        if (winners.length !== 1) say(`leased by ${winners.length} polls`);
        // Edit made: the lease saw it; refused: a poll leased the job as it was first.
        if (edit === 'updatePayload' && edited[0] !== (outcome === 1)) say(`the lease had the ${edited[0] ? 'new' : 'old'} payload`);
        if (edit === 'changePriority' && view.priority !== (outcome === 1 ? 7 : 0)) say(`priority ${view.priority}`);
        if (view.status !== 'SUCCEEDED') say(`ended ${view.status}`);
        break;
      }
      case 'changeDelay':
        // Made: delayed an hour, nobody may lease it; refused: a poll had leased it.
        if (winners.length !== (outcome === 1 ? 0 : 1)) say(`leased by ${winners.length} polls`);
        if (view.status !== (outcome === 1 ? 'PENDING' : 'SUCCEEDED')) say(`ended ${view.status}`);
        break;
      case 'promote': {
        // Never refused (the job is PENDING until promoted); leased by a poll after it, or by thread 0 after the round.
        const cleanup = result[r * WORKERS * 2 + 1]!;
        if (outcome !== 1) say('refused');
        if (winners.length + (cleanup === job ? 1 : 0) !== 1) say(`leased by ${winners.length} polls and ${cleanup === job ? 'thread 0' : 'not thread 0'}`);
        if (view.status !== 'SUCCEEDED') say(`ended ${view.status}`);
        break;
      }
    }
  }
  console.log(`[edits vs polls] ${rounds} rounds, edits made: ${JSON.stringify(made)} (the rest refused as leased first)`);
  expect(violations.slice(0, 10)).toEqual([]);
  expect(queue.stats()).toMatchObject({ running: 0, pending: made.changeDelay, delayed: made.changeDelay });
}

describe('an edit of a PENDING job racing polls on other threads', () => {
  it('in memory: the poll leases the job as it was and the edit is refused, or the edit lands and the poll sees it', async () => {
    const queue = new JobQueue(new ManualClock(START), new RetryPolicy(3, 100, 1_000));
    await raceEdits(queue, 2_000);
    await queue.close();
  }, 120_000);

  it('on a journal: the same, every call under the lock and durable', async () => {
    const path = tempJournal();
    const queue = openJournal(path, new ManualClock(START), new RetryPolicy(3, 100, 1_000));
    await raceEdits(queue, 400);
    closeJournal(queue);
  }, 120_000);
});
