import { step, ATTENTION, CLASS_OF_NAME, classOf, FREE, isBusy, statusOf, type JobRecord, type ListingIndex, type Maintenance, NAME_OF_STATUS, NOT_MAPPED, RUNNING, type TreeWalk, WORKER_ATTENTION } from '../shm/core.js';
import { JobStatus, type JobPage, type JobView, type QueueStats } from '../types.js';
import { JournalWriteError } from '../errors.js';
import { parseJobId } from '../validate/job-id.js';
import { parsedHeaders } from '../validate/job-input.js';
import { parsedResult } from '../validate/outcome.js';
import { SCAN_BUDGET, checkJobQuery, cursorAfter, type CheckedQuery } from '../validate/query.js';

/** The statuses a job ends in. */
const FINISHED: ReadonlySet<JobStatus> = new Set([JobStatus.SUCCEEDED, JobStatus.DEAD, JobStatus.CANCELLED]);
import type { QueueContext } from './context.js';
import { jobIdOf } from '../job-id.js';
import { flowFields } from './flows.js';

/**
 * The reads of one JobQueue instance. A view needs no lock when no
 * maintenance is due: the record is read seqlock-style (the same non-busy
 * word before and after). Stats and the dead letters run under the lock;
 * stats first waits out the lock-free calls in flight (microseconds), so
 * they are exact whenever no call is in flight.
 */
export class Reads {
  readonly #ctx: QueueContext;

  constructor(ctx: QueueContext) {
    this.#ctx = ctx;
  }

  /** The job's view; without `withPayload`, its payload is left out ('': the caller looks at no more than its status and outcome). */
  view(jobId: string, withPayload = true): JobView {
    const ctx = this.#ctx;
    ctx.assertOpen();
    const jobNum = parseJobId(jobId);
    const now = ctx.now();
    const memory = ctx.memory;
    const { jobMap, lockWords } = memory;
    // No rebuild under way, nothing due (read after ATTENTION), no holder of an older time at work: what the slots hold
    // now is what a locked read would see. And no holder at all as the read ends: it may have placed the job read and
    // not filed it yet (or died there), and a poll after this read would pass over a job it showed ready (I16).
    if ((step.load(lockWords, ATTENTION) & WORKER_ATTENTION) === 0 && memory.nothingDueAt(now) && !memory.holderBehind(now)) {
      const slot = jobMap.get(jobNum);
      const record = slot === NOT_MAPPED ? undefined : ctx.core.records.read(slot, withPayload);
      // A lease run out that no catch-up expired yet (its claim is still in flight): the locked read expires it.
      const lapsed = record !== undefined && record.status === RUNNING && !(now < record.leaseUntil);
      if (record !== undefined && record.jobNum === jobNum && record.status !== FREE && !lapsed && !memory.lock.heldElsewhere()) return toView(record);
    }
    return ctx.readJob(jobId, jobNum, (core, slot, at) => toView(recordAt(core, slot, at, withPayload)));
  }

  /**
   * Throws as `view` would for a job the queue does not hold (JobNotFoundError), reading none of
   * its record: for `log` and `logs`, whose job's payload may be large. Lock-free as `view` is,
   * the slot's word read before and after its JOB_NUM (I4); else under the lock.
   */
  assertHolds(jobId: string): void {
    const ctx = this.#ctx;
    ctx.assertOpen();
    const jobNum = parseJobId(jobId);
    const now = ctx.now();
    const memory = ctx.memory;
    if ((step.load(memory.lockWords, ATTENTION) & WORKER_ATTENTION) === 0 && memory.nothingDueAt(now) && !memory.holderBehind(now)) {
      const slot = memory.jobMap.get(jobNum);
      if (slot !== NOT_MAPPED) {
        const { slots } = memory;
        const word = slots.settledWord(slot);
        if (!isBusy(word) && statusOf(word) !== FREE && slots.jobNums[slot] === jobNum && slots.word(slot) === word && !memory.lock.heldElsewhere()) return;
      }
    }
    ctx.readJob(jobId, jobNum, () => 0);
  }

  /**
   * The view `finished` looks at: with a journal, a job seen finished is
   * looked at again once everything up to its move is committed (a move
   * whose commit failed is undone, and must not be reported). Without the
   * payload, which `finished` does not show: a binary job's would be a copy
   * of up to maxPayloadBytes at every look.
   */
  finishedView(jobId: string): JobView {
    const view = this.view(jobId, false);
    if (this.#ctx.journal === undefined || !FINISHED.has(view.status)) return view;
    try {
      this.#ctx.flush();
    } catch (error) {
      if (!(error instanceof JournalWriteError)) throw error;
    }
    return this.view(jobId, false);
  }

  stats(): QueueStats {
    return this.#ctx.read((core, now) => {
      core.catchUp.settle(now);
      return core.reads.stats();
    });
  }

  /** Every DEAD job, in submission order. */
  deadLetters(): JobView[] {
    return this.#ctx.read((core, now) => {
      // Leases that ran out in calls still in flight are expired first: a job dead by now is listed.
      core.catchUp.settle(now);
      return core.reads.deadSlots().map((slot) => toView(recordAt(core, slot, now)));
    });
  }

  /**
   * A page of jobs (see JobQueue#jobs), from the listing index: O(log n +
   * page) per status; with a type, O(log n + jobs looked at), at most
   * SCAN_BUDGET of them a call.
   */
  jobs(query: unknown): JobPage {
    const checked = checkJobQuery(query);
    return this.#ctx.read((core, now) => {
      // Lock-free calls in flight end first (and leases run out by now expire): their moves are in the rings.
      core.catchUp.settle(now);
      core.reads.prepareListing();
      return pageOf(core, this.#ctx.memory.listing, checked, now);
    });
  }
}

/** A page from the listing's walks: the next job is always the lowest key left of any walk. */
function pageOf(core: Maintenance, listing: ListingIndex, query: CheckedQuery, now: number): JobPage {
  const walks = listing.walks(query.status === undefined ? undefined : CLASS_OF_NAME[query.status], query.after);
  const jobs: JobView[] = [];
  let examined = 0;
  let last = query.after;
  for (;;) {
    let walk: TreeWalk | undefined;
    for (const each of walks) if (each.nextKey < (walk?.nextKey ?? Infinity)) walk = each;
    if (walk === undefined) return { jobs, next: null };
    if (jobs.length === query.limit || examined === SCAN_BUDGET) return { jobs, next: cursorAfter(last) };
    last = walk.nextKey;
    const record = recordAt(core, walk.take(), now);
    // A type filter may look at many jobs for a few: it stops at the budget. Without one, every job looked at is listed.
    if (query.type !== undefined) examined++;
    // Moved out of the class by a lock-free call since the rings were drained: listed where the next call finds it.
    if (record.jobNum !== last || classOf(record.status) !== walk.cls) continue;
    if (query.type !== undefined && record.type !== query.type) continue;
    jobs.push(toView(record));
  }
}

/** The job in `slot` (under the lock), once it is not BUSY. */
function recordAt(core: Maintenance, slot: number, now: number, withPayload = true): JobRecord {
  for (;;) {
    const record = core.records.read(slot, withPayload);
    if (record !== undefined) return record;
    core.catchUp.settledWord(slot, now);
  }
}

export function toView(job: JobRecord): JobView {
  const status = NAME_OF_STATUS[job.status];
  return {
    id: jobIdOf(job.jobNum),
    type: job.type,
    priority: job.priority,
    status,
    attempts: job.attempts,
    maxAttempts: job.maxAttempts,
    nextRunAt: job.runAt,
    lastError: job.lastError,
    payload: job.payload,
    leaseUntil: status === JobStatus.RUNNING ? job.leaseUntil : null,
    workerId: job.workerId,
    result: status === JobStatus.SUCCEEDED ? parsedResult(job.result) : undefined,
    key: job.key,
    timeoutMillis: job.timeoutMillis,
    headers: parsedHeaders(job.headers),
    submittedAt: job.submittedAt,
    startedAt: job.startedAt,
    finishedAt: job.finishedAt,
    progress: job.progress ?? undefined,
    group: job.group,
    ...flowFields(job.parent, job.waiting, status),
  };
}
