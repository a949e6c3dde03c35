import { laterReading } from '../clock.js';
import { refusalError } from '../errors.js';
import { jobIdOf } from '../job-id.js';
import { AWAITS_COMMIT, type Maintenance, NAME_OF_STATUS, parentLink } from '../shm/core.js';
import { JobStatus } from '../types.js';
import { checkFlow, type CheckedFlowJob } from '../validate/flow-input.js';
import { parseJobId } from '../validate/job-id.js';
import { parsedResult, type StoredResult } from '../validate/outcome.js';
import type { QueueContext } from './context.js';

/**
 * The flow calls of one JobQueue instance (see moves/flows.ts for how a
 * parent waits): submitFlow, all or none, and childResults.
 */
export class FlowSide {
  readonly #ctx: QueueContext;

  constructor(ctx: QueueContext) {
    this.#ctx = ctx;
  }

  /**
   * Submits the flow in one lock hold, the root first and each parent before
   * its children; returns their ids in that order. Room for every job is made
   * before the first is placed, so a full queue refuses the whole flow; with a
   * journal the flow is one commit, and a failed commit undoes every job of it.
   */
  submitFlow(flow: unknown): string[] {
    const ctx = this.#ctx;
    ctx.assertOpen();
    const jobs = checkFlow(flow, ctx.options.maxPayloadBytes);
    const batch: FlowBatch = { jobs, nums: new Array<number>(jobs.length).fill(0), placed: 0 };
    for (;;) {
      const done = ctx.locked(this.#submitFlowLocked, batch);
      if (done !== AWAITS_COMMIT) break;
      ctx.makeDurable(ctx.core.notes.awaitedTicket());
    }
    ctx.memory.signal.bump();
    return batch.nums.map(jobIdOf);
  }

  /**
   * Under the lock. Run again after a takeover (this holder was taken for dead
   * between two of its jobs: relies on I13), it goes on from the first job
   * not placed, whose parents are placed with their numbers kept in `batch`,
   * room made again for the rest (as submitMany, a queue filled meanwhile
   * refuses the rest: its parent then waits for children it never got).
   */
  readonly #submitFlowLocked = (core: Maintenance, now: number, batch: FlowBatch): true | typeof AWAITS_COMMIT => {
    const { jobs, nums } = batch;
    let chunks = 0;
    /** The reservations this run adopts, each once (see Maintenance#batchJobChunks). */
    const adopted = new Set<Uint8Array>();
    for (let i = batch.placed; i < jobs.length; i++) {
      const { job } = jobs[i]!;
      // Before any job is placed: a group the table has no room for refuses the whole flow.
      if (job.group !== null) core.groupNumber(job.group);
      const jobChunks = core.batchJobChunks(job, adopted);
      // Before a job of this run is placed: a reservation reclaimed refuses them all (keeps I30).
      if (jobChunks < 0) throw refusalError(jobChunks, '', this.#ctx.options.capacity);
      chunks += jobChunks;
    }
    const refusal = core.roomFor(jobs.length - batch.placed, chunks);
    if (refusal === AWAITS_COMMIT) return AWAITS_COMMIT;
    if (refusal < 0) throw refusalError(refusal, '', this.#ctx.options.capacity);
    // Before the first child is placed: from here on every complete takes the lock (keeps I28).
    this.#ctx.memory.startFlows();
    for (let i = batch.placed; i < jobs.length; i++) {
      const job = jobs[i]!;
      const link = job.parent < 0 ? 0 : parentLink(nums[job.parent]!, jobs[job.parent]!.ignoresChildFailure);
      const num = this.#place(core, job, link, now);
      if (num === AWAITS_COMMIT) return AWAITS_COMMIT;
      nums[i] = num;
      batch.placed = i + 1;
    }
    return true;
  };

  /** Places one job of the flow, `link` its PARENT column (see moves/flows.ts): its number. */
  #place(core: Maintenance, { job, children }: CheckedFlowJob, link: number, now: number): number | typeof AWAITS_COMMIT {
    // As ProducerSide#place: a runAt from the clock is read as the job is placed (relies on I2).
    const at = job.runAtMillis === undefined && !this.#ctx.memory.exclusive ? laterReading(this.#ctx.time, now) : now;
    const runAt = job.runAtMillis ?? at + job.delayMillis;
    const num = core.submit(job, runAt, at, { parent: link, children });
    if (num === AWAITS_COMMIT) return AWAITS_COMMIT;
    if (num < 0) throw refusalError(num, '', this.#ctx.options.capacity);
    return num;
  }

  /**
   * The results of the direct children of `parentId` that SUCCEEDED and are
   * still in memory, by child id (a child that completed without a result
   * maps to undefined). A child evicted for room (or removed) is missing.
   */
  childResults(parentId: string): Record<string, unknown> {
    const parentNum = parseJobId(parentId);
    const stored = this.#ctx.readJob(parentId, parentNum, (core) => {
      const found: [number, StoredResult | null][] = [];
      for (const slot of core.childrenOf(parentNum)) {
        const record = core.records.read(slot);
        if (record !== undefined && NAME_OF_STATUS[record.status] === JobStatus.SUCCEEDED) found.push([record.jobNum, record.result]);
      }
      return found;
    });
    const results: Record<string, unknown> = {};
    for (const [num, result] of stored) results[jobIdOf(num)] = parsedResult(result);
    return results;
  }
}

/** A submitFlow's jobs and how far it got: kept across the runs of its locked call. */
interface FlowBatch {
  jobs: readonly CheckedFlowJob[];
  /** Per job: its number once placed. */
  nums: number[];
  /** Jobs before this one are placed. */
  placed: number;
}

/** The fields a view shows of a job's flow: its parent's id (a child), and while PENDING the children it waits for (a parent). */
export function flowFields(link: number, waiting: number, status: JobStatus): { parentId?: string; waitingChildren?: number } {
  const fields: { parentId?: string; waitingChildren?: number } = {};
  if (link !== 0) fields.parentId = jobIdOf(Math.abs(link));
  if (waiting > 0 && status === JobStatus.PENDING) fields.waitingChildren = waiting;
  return fields;
}
