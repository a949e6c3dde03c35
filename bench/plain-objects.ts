/**
 * A floor for suite "single", not a queue anyone should use: the steps the
 * contract asks of one thread's submit, poll and complete, on plain
 * JavaScript objects — argument checks, a clock reading per call, a binary
 * heap in best-job order (priority, then runAt, then submission), string
 * ids, fencing tokens and attempts, and the lease's end checked at complete.
 * It leaves out everything shared memory and other threads need (and lease
 * expiry's own index), so no design that keeps job state where worker
 * threads can claim it by CAS runs under it: the suite reports it beside
 * fastq to show how near a thread-safe queue can come.
 */

interface PlainJob {
  readonly seq: number;
  readonly type: string;
  readonly payload: string;
  readonly priority: number;
  readonly runAt: number;
  token: number;
  attempts: number;
  leaseUntil: number;
}

export interface PlainLease {
  readonly jobId: string;
  readonly token: number;
  readonly type: string;
  readonly payload: string;
  readonly attempt: number;
  readonly leaseUntil: number;
}

/** True if `a` is the better job: higher priority, then earlier runAt, then submitted first. */
function better(a: PlainJob, b: PlainJob): boolean {
  if (a.priority !== b.priority) return a.priority > b.priority;
  return a.runAt !== b.runAt ? a.runAt < b.runAt : a.seq < b.seq;
}

export class PlainObjectQueue {
  readonly #ready: PlainJob[] = [];
  readonly #leased = new Map<number, PlainJob>();
  #seq = 0;

  submit(type: string, payload: string, priority: number): string {
    if (typeof type !== 'string' || type.trim() === '') throw new TypeError('type');
    if (typeof payload !== 'string') throw new TypeError('payload');
    if (!Number.isInteger(priority)) throw new TypeError('priority');
    const job: PlainJob = { seq: ++this.#seq, type, payload, priority, runAt: Date.now(), token: 0, attempts: 0, leaseUntil: 0 };
    this.#push(job);
    return `J${job.seq}`;
  }

  poll(workerId: string, leaseMillis: number): PlainLease | undefined {
    if (typeof workerId !== 'string' || workerId === '') throw new TypeError('workerId');
    if (!(leaseMillis > 0) || !Number.isFinite(leaseMillis)) throw new TypeError('leaseMillis');
    const now = Date.now();
    const job = this.#pop();
    if (job === undefined) return undefined;
    job.token++;
    job.attempts++;
    job.leaseUntil = now + leaseMillis;
    this.#leased.set(job.seq, job);
    return { jobId: `J${job.seq}`, token: job.token, type: job.type, payload: job.payload, attempt: job.attempts, leaseUntil: job.leaseUntil };
  }

  complete(jobId: string, token: number): void {
    const job = this.#leased.get(Number(jobId.slice(1)));
    const now = Date.now();
    if (job === undefined || job.token !== token || now >= job.leaseUntil) throw new Error(`stale lease of ${jobId}`);
    this.#leased.delete(job.seq);
  }

  #push(job: PlainJob): void {
    const heap = this.#ready;
    let at = heap.length;
    heap.push(job);
    while (at > 0) {
      const parent = (at - 1) >> 1;
      if (!better(job, heap[parent]!)) break;
      heap[at] = heap[parent]!;
      at = parent;
    }
    heap[at] = job;
  }

  #pop(): PlainJob | undefined {
    const heap = this.#ready;
    const top = heap[0];
    const last = heap.pop();
    if (heap.length === 0 || last === undefined) return top;
    let at = 0;
    for (;;) {
      let child = 2 * at + 1;
      if (child >= heap.length) break;
      if (child + 1 < heap.length && better(heap[child + 1]!, heap[child]!)) child++;
      if (!better(heap[child]!, last)) break;
      heap[at] = heap[child]!;
      at = child;
    }
    heap[at] = last;
    return top;
  }
}
