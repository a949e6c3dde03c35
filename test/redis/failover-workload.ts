/**
 * The workload of the failover tests (test/redis/redis-failover.test.ts on
 * Sentinel, test/redis/redis-cluster-failover.test.ts on a Cluster): a producer
 * submitting and a worker polling and completing, each going on through
 * BackendUnavailableError while the master is gone, on a clock that stands
 * still (no lease can expire, so a job leased twice is a lease the failover
 * lost). `expectNothingLost` then checks every acknowledged submit, lease and
 * complete, and runs every job to the end.
 */
import { expect } from 'vitest';
import { BackendUnavailableError, StaleLeaseError, type Lease, type ManualClock } from '../../dist/index.js';
import { pause } from '../support/helpers.js';

/** What the workload calls: RedisJobQueue and PartitionedRedisQueue both. */
interface FailoverQueue {
  submit(type: string, payload: string): Promise<string>;
  poll(workerId: string, leaseMillis: number): Promise<Lease | undefined>;
  complete(jobId: string, token: number): Promise<void>;
  view(jobId: string): Promise<{ status: string }>;
}

/** How long a wait for a count or a state may take before the test fails: a hang, not a pace. */
const WAIT_MILLIS = 120_000;

/**
 * Polls `condition` until it holds (an error it throws counts as not yet);
 * fails after WAIT_MILLIS saying what it waited for, or at once with the
 * error of `failure` (a workload loop that failed).
 */
export async function until(what: string, condition: () => boolean | Promise<boolean>, failure: () => unknown = () => undefined): Promise<void> {
  const deadline = Date.now() + WAIT_MILLIS;
  while (!(await Promise.resolve().then(condition).catch(() => false))) {
    if (failure() !== undefined) throw failure();
    if (Date.now() > deadline) throw new Error(`timed out after ${WAIT_MILLIS} ms waiting for ${what}`);
    await pause(20);
  }
}

export class FailoverWorkload {
  readonly acknowledged: string[] = [];
  readonly leases = new Map<string, Lease>();
  readonly leasedTwice: string[] = [];
  readonly completed = new Set<string>();
  /** Completes whose reply was lost or not confirmed by a replica: they may or may not have taken effect. */
  readonly uncertain: Lease[] = [];
  readonly failed = { submits: 0, polls: 0 };
  #running = true;
  readonly #loops: Promise<unknown>;
  #loopFailure: unknown;

  constructor(producer: FailoverQueue, worker: FailoverQueue) {
    this.#loops = Promise.all([this.#produce(producer), this.#work(worker)]);
    // A loop that fails (an error other than BackendUnavailableError) ends the waits at once, with its error.
    this.#loops.catch((error: unknown) => (this.#loopFailure = error));
  }

  /** The error a loop failed with, if one did: for `until`. */
  readonly failure = (): unknown => this.#loopFailure;

  async stop(): Promise<void> {
    this.#running = false;
    await this.#loops;
  }

  /** After `stop`: no job leased twice, every acknowledged write there, and every job run to the end once the clock passed every lease. */
  async expectNothingLost(worker: FailoverQueue, clock: ManualClock): Promise<void> {
    expect(this.leasedTwice).toEqual([]);
    for (const id of this.acknowledged) {
      const view = await worker.view(id);
      const lease = this.leases.get(id);
      if (this.completed.has(id)) expect(view, id).toMatchObject({ status: 'SUCCEEDED', attempts: 1 });
      else if (lease !== undefined && !this.uncertain.includes(lease)) expect(view, id).toMatchObject({ status: 'RUNNING', attempts: 1, token: lease.token });
      else expect(['PENDING', 'RUNNING', 'SUCCEEDED'], id).toContain(view.status);
    }
    // A complete whose outcome is unknown is done again: it ran (StaleLeaseError, SUCCEEDED) or runs now.
    for (const lease of this.uncertain) {
      await worker.complete(lease.jobId, lease.token).catch((error: unknown) => expect(error).toBeInstanceOf(StaleLeaseError));
      expect((await worker.view(lease.jobId)).status).toBe('SUCCEEDED');
    }
    // Leases whose poll reply was lost expire; then every job runs to the end.
    clock.advance(120_000);
    for (let lease = await worker.poll('w', 60_000); lease !== undefined; lease = await worker.poll('w', 60_000)) {
      await worker.complete(lease.jobId, lease.token);
    }
    const views = await Promise.all(this.acknowledged.map((id) => worker.view(id)));
    expect(views.filter((view) => view.status !== 'SUCCEEDED')).toEqual([]);
  }

  async #produce(producer: FailoverQueue): Promise<void> {
    for (let i = 0; this.#running; i++) {
      try {
        this.acknowledged.push(await producer.submit('t', String(i)));
      } catch (error) {
        if (!(error instanceof BackendUnavailableError)) throw error;
        this.failed.submits++;
        await pause(20); // No master yet: the client finds the promoted one in the background.
      }
    }
  }

  async #work(worker: FailoverQueue): Promise<void> {
    while (this.#running) {
      let lease: Lease | undefined;
      try {
        lease = await worker.poll('w', 60_000);
      } catch (error) {
        if (!(error instanceof BackendUnavailableError)) throw error;
        this.failed.polls++;
        await pause(20);
        continue;
      }
      if (lease === undefined) {
        await pause(5);
        continue;
      }
      if (this.leases.has(lease.jobId)) this.leasedTwice.push(lease.jobId);
      this.leases.set(lease.jobId, lease);
      try {
        await worker.complete(lease.jobId, lease.token);
        this.completed.add(lease.jobId);
      } catch (error) {
        if (!(error instanceof BackendUnavailableError)) throw error;
        this.uncertain.push(lease);
      }
    }
  }
}
