/**
 * Thread-termination chaos (threads die at any instant, and that must
 * never wedge the queue, lose a job or lease one twice). Worker threads run
 * tight loops of queue calls while the test calls worker.terminate() on random
 * ones at random instants and starts replacements; the queue's lock timeout is
 * short so that a lock left behind by a killed thread is recovered quickly.
 * Afterwards a fresh thread drains the queue under a deadline, and the test
 * checks every submit the workers saw return and every lease they logged.
 * Run again on a journaled queue: there, after a clean close, the reopened
 * journal must hold every job exactly as memory did, although threads were
 * killed inside calls that were writing it.
 */
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { JobQueue, ManualClock, RetryPolicy } from '../../dist/index.js';
import { patienceDoublings, pause, prng, startWorker, testSeed, withTimeout } from '../support/helpers.js';
import { tempJournal } from '../support/journal-harness.js';

const START = 1_767_225_600_000;

/** Claim record fields (Float64), STRIDE per record. */
const C = { JOB: 0, TOKEN: 1, ATTEMPT: 2, LEASE_UNTIL: 3, WORKER: 4 } as const;
const STRIDE = 5;
/** Int32 control words. */
const CTL = { STOP: 0, ACKS: 1, CLAIMS: 2, BUDGET: 3, MAX_ID: 4, STALLS: 5 } as const;
const OUTCOME = { NONE: 0, COMPLETED: 1, FAILED: 2, REFUSED: 3 } as const;
/**
 * How long the survivors may take to see the stop and return from their calls. The last replacement was started
 * a moment before, and on a loaded machine a new thread takes seconds to load its modules and attach. And under
 * load a live thread may be taken for dead, after which the queue's patience grows, up to 4 s (see patience.ts): a
 * call may then wait that long for a stalled lock holder, and its rebuild as long again for a stalled row. A wedged
 * queue never stops.
 */
const STOP_MILLIS = 20_000;
/** With rows reclaimed: threads killed after they attached (holding a row) that the run must reach to prove anything. */
const MIN_ATTACHED_KILLS = 50;

interface Chaotic {
  worker: Worker;
  incarnation: number;
  /** Once the thread said it attached: from then on it holds a row. */
  attached: boolean;
  exited: Promise<number>;
  stopped: Promise<void>;
}

describe('threads killed at any instant', () => {
  it('never wedges the queue, loses an acknowledged job or leases one twice', async () => {
    await chaos({ terminations: 80 });
  }, 120_000);

  it('on a journaled queue, also leaves the journal holding every job exactly as memory does', async () => {
    await chaos({ terminations: 40, journal: tempJournal() });
  }, 120_000);

  it('with the rows of killed threads freed (threadExited) and taken by their replacements, still loses and double-leases nothing', async () => {
    const { freed, attachedKilled } = await chaos({ terminations: 90, reclaim: true });
    // Each thread that said it attached gave back exactly its row (checked per thread in the run); most had attached.
    expect(freed).toBeGreaterThanOrEqual(attachedKilled);
    expect(attachedKilled).toBeGreaterThan(MIN_ATTACHED_KILLS);
  }, 120_000);
});

/**
 * Runs the chaos. With `reclaim`, `threadExited` is called for each thread as it is killed; returns how many rows
 * it freed, and how many of the killed threads had said they attached.
 */
async function chaos(
  { terminations: TERMINATIONS, journal, reclaim = false }: { terminations: number; journal?: string; reclaim?: boolean },
): Promise<{ freed: number; attachedKilled: number }> {
  const seed = testSeed(journal === undefined ? 'chaos' : 'chaos-journal');
  const random = prng(seed);
  const WORKERS = 4;
  const CHAOS_MILLIS = 40_000; // upper bound of the killing phase; usually done in 5-17 s, longer only on a machine too loaded to do enough work
  const LEASE = 1_000;
  const MAX_ATTEMPTS = 5;
  const MAX_SUBMITS = 40_000;
  const ACK_CAPACITY = MAX_SUBMITS + 1_000;
  const CLAIM_CAPACITY = 400_000;
  // Enough work to prove something: a journaled submit waits for its commit, so a loaded machine acknowledges far fewer.
  const MIN_ACKS = journal === undefined ? 1_000 : 250;

  const clock = new ManualClock(START);
  const policy = new RetryPolicy(MAX_ATTEMPTS, 5, 50);
  const options = { lockTimeoutMillis: 200 };
  const queue = journal === undefined ? new JobQueue(clock, policy, options) : JobQueue.open(journal, clock, policy, options);
  const handle = queue.share();
  const buffers = {
    control: new SharedArrayBuffer(8 * 4),
    acks: new SharedArrayBuffer(ACK_CAPACITY * 4),
    claims: new SharedArrayBuffer(CLAIM_CAPACITY * STRIDE * 8),
    claimFlags: new SharedArrayBuffer(CLAIM_CAPACITY * 4),
    outcomes: new SharedArrayBuffer(CLAIM_CAPACITY * 4),
  };
  const ctl = new Int32Array(buffers.control);
  const layout = { C, CTL, STRIDE };
  const problems: string[] = [];
  let incarnations = 0;
  /** The longest a new thread took to attach: seconds on a loaded machine. */
  let slowestAttach = 0;

  const spawn = (): Chaotic => {
    const incarnation = incarnations++;
    const worker = new Worker(new URL('../fixtures/chaos-worker.mjs', import.meta.url), {
      workerData: {
        handle,
        incarnation,
        seed: (seed + 104_729 * (incarnation + 1)) >>> 0,
        leaseMillis: LEASE,
        maxSubmits: MAX_SUBMITS,
        layout,
        buffers,
      },
    });
    const exited = new Promise<number>((resolve) => worker.once('exit', resolve));
    const chaotic = { worker, incarnation, attached: false } as Chaotic;
    const spawnedAt = Date.now();
    chaotic.stopped = new Promise<void>((resolve) => {
      worker.on('message', (m: { unexpected?: string; stopped?: boolean; attached?: boolean }) => {
        if (m.unexpected !== undefined) problems.push(m.unexpected);
        if (m.attached === true) {
          chaotic.attached = true;
          slowestAttach = Math.max(slowestAttach, Date.now() - spawnedAt);
        }
        if (m.stopped === true) resolve();
      });
    });
    worker.on('error', (error) => problems.push(`chaos-${incarnation} crashed: ${error.name} ${error.message}`));
    chaotic.exited = exited;
    return chaotic;
  };

  const live: Chaotic[] = Array.from({ length: WORKERS }, spawn);
  // Time moves on throughout, so leases of killed (and slow) threads expire and are retried.
  const ticker = setInterval(() => clock.advance(LEASE / 4), 5);
  const started = Date.now();
  let terminations = 0;
  let freedRows = 0;
  let attachedKilled = 0;
  let stopMillis = 0;
  try {
    // Killing goes on past TERMINATIONS while too few submits were acknowledged, or (reclaiming) too few of the killed threads
    // had attached — a slow spell of the machine: replacements then take longer to attach than the pause before the next kill.
    const tooLittle = () => Atomics.load(ctl, CTL.ACKS) <= MIN_ACKS || (reclaim && attachedKilled <= MIN_ATTACHED_KILLS);
    while ((terminations < TERMINATIONS || tooLittle()) && Date.now() - started < CHAOS_MILLIS) {
      // Random instants: mostly a while after the last kill, sometimes almost at once.
      await pause(random() < 0.25 ? Math.floor(random() * 5) : 20 + Math.floor(random() * 150));
      // Reclaiming, mostly a thread that holds a row (the case threadExited is for): under load a replacement takes
      // longer to attach than the pause before the next kill, and victims picked at random would mostly be newborns.
      // So, when none holds one, the kill waits (a while) for one to attach.
      for (let waited = 0; reclaim && !live.some((c) => c.attached) && waited < 1_000; waited += 10) await pause(10);
      const holders = reclaim ? live.flatMap((c, k) => (c.attached ? [k] : [])) : [];
      const i = holders.length > 0 && random() < 0.75 ? holders[Math.floor(random() * holders.length)]! : Math.floor(random() * live.length);
      const victim = live[i]!;
      live[i] = spawn();
      const victimId = victim.worker.threadId;
      await withTimeout(victim.worker.terminate(), 10_000, `terminate(chaos-${victim.incarnation})`);
      if (reclaim) {
        const freed = queue.threadExited(victimId);
        freedRows += freed;
        // One that said it attached holds exactly one row, wherever it was killed; one killed before it said so, one or none.
        if (victim.attached && freed !== 1) problems.push(`chaos-${victim.incarnation}, attached and killed: threadExited freed ${freed} rows`);
        if (freed > 1) problems.push(`chaos-${victim.incarnation}: threadExited freed ${freed} rows`);
        if (victim.attached) attachedKilled++;
      }
      terminations++;
    }
    await pause(200); // let the last replacements run a little

    // Stop the survivors: each must notice and return from its queue call, or the queue is wedged.
    Atomics.store(ctl, CTL.STOP, 1);
    let stopped = 0;
    const stopAsked = Date.now();
    const stops = live.map((c) => c.stopped.then(() => void stopped++));
    try {
      await withTimeout(Promise.all(stops), STOP_MILLIS, 'surviving workers stopping (is the queue wedged?)');
    } catch (error) {
      const booting = live.filter((c) => !c.attached).length;
      throw new Error(
        `${(error as Error).message}: ${stopped} of ${live.length} stopped (${booting} had not attached yet; the slowest attach took ` +
          `${slowestAttach} ms); the queue's patience had doubled ${patienceDoublings(handle)} times`,
      );
    }
    stopMillis = Date.now() - stopAsked;
    await Promise.all(live.map((c) => c.exited));
  } finally {
    clearInterval(ticker);
    await Promise.all(live.map((c) => c.worker.terminate()));
  }
  expect(terminations).toBeGreaterThanOrEqual(20);

  // Past every lease and backoff, then drain in a fresh thread under a deadline.
  clock.advance(100 * LEASE);
  const drainer = await startWorker('drain-worker.mjs', { handle, incarnation: incarnations++, leaseMillis: LEASE, layout, buffers });
  let drainReport: { drained: number; stats: Record<string, number>; queueDepth: number };
  try {
    drainReport = (await withTimeout(drainer.result, STOP_MILLIS, 'draining the queue (is it wedged?)')) as typeof drainReport;
  } finally {
    await drainer.worker.terminate();
  }
  expect(problems).toEqual([]);
  expect(drainReport.queueDepth).toBe(0);
  expect(drainReport.stats['running']).toBe(0);

  // ── every acknowledged submit ──
  const acks = new Int32Array(buffers.acks);
  const ackCount = Math.min(Atomics.load(ctl, CTL.ACKS), ACK_CAPACITY);
  const acked = new Set<number>();
  for (let i = 0; i < ackCount; i++) {
    const n = Atomics.load(acks, i);
    if (n !== 0) acked.add(n); // 0: the submitting thread was killed before it wrote the id
  }
  expect(acked.size).toBeGreaterThan(MIN_ACKS);
  const lost: string[] = [];
  const status = new Map<number, { status: string; attempts: number }>();
  const maxAcked = Math.max(...acked);
  // A killed submit may have taken an id of its own; look a little past the largest acknowledged one.
  for (let n = 1; n <= maxAcked + incarnations + 50; n++) {
    try {
      const view = queue.view(`J${n}`);
      status.set(n, { status: view.status, attempts: view.attempts });
    } catch (error) {
      if ((error as { code?: unknown }).code !== 'ERR_JOB_NOT_FOUND') throw error;
      if (acked.has(n)) lost.push(`J${n} (acknowledged, now ${(error as Error).message})`);
    }
  }
  expect(lost).toEqual([]);
  const unfinished = [...status].filter(([, s]) => s.status !== 'SUCCEEDED' && s.status !== 'DEAD').map(([n, s]) => `J${n} ${s.status}`);
  expect(unfinished).toEqual([]);

  // ── stats agree with the views ──
  const count = (st: string) => [...status.values()].filter((s) => s.status === st).length;
  const dead = count('DEAD');
  expect({ ...queue.stats() }).toEqual({ pending: 0, ready: 0, delayed: 0, running: 0, succeeded: count('SUCCEEDED'), dead, cancelled: 0, paused: false });
  expect(queue.queueDepth()).toBe(0);
  expect(queue.dlqDepth()).toBe(dead);
  expect(queue.deadLetters().map((v) => v.id)).toEqual([...status].filter(([, s]) => s.status === 'DEAD').map(([n]) => `J${n}`));

  // ── every logged lease ──
  const claims = new Float64Array(buffers.claims);
  const claimFlags = new Int32Array(buffers.claimFlags);
  const outcomes = new Int32Array(buffers.outcomes);
  const claimCount = Math.min(Atomics.load(ctl, CTL.CLAIMS), CLAIM_CAPACITY);
  const byJob = new Map<number, number[]>();
  const tokens = new Set<number>();
  const violations: string[] = [];
  const describeClaim = (pos: number) =>
    `{by ${claims[pos * STRIDE + C.WORKER]} attempt ${claims[pos * STRIDE + C.ATTEMPT]} token ${claims[pos * STRIDE + C.TOKEN]} ` +
    `outcome ${Atomics.load(outcomes, pos)}}`;
  let logged = 0;
  for (let pos = 0; pos < claimCount; pos++) {
    if (Atomics.load(claimFlags, pos) !== 1) continue; // the claiming thread was killed mid-record
    logged++;
    const job = claims[pos * STRIDE + C.JOB]!;
    const token = claims[pos * STRIDE + C.TOKEN]!;
    if (tokens.has(token)) violations.push(`token ${token} handed out twice (again for J${job})`);
    tokens.add(token);
    if (!status.has(job)) violations.push(`a lease for J${job}, which does not exist`);
    if (!byJob.has(job)) byJob.set(job, []);
    byJob.get(job)!.push(pos);
  }
  for (const [job, list] of byJob) {
    const s = status.get(job);
    if (s === undefined) continue;
    list.sort((a, b) => claims[a * STRIDE + C.ATTEMPT]! - claims[b * STRIDE + C.ATTEMPT]!);
    const history = list.map(describeClaim).join(' ');
    const attempts = list.map((pos) => claims[pos * STRIDE + C.ATTEMPT]!);
    // A repeated attempt number means two leases of one attempt: the job was leased twice.
    if (new Set(attempts).size !== attempts.length) violations.push(`J${job}: an attempt leased twice: ${history}`);
    if (attempts[attempts.length - 1]! > s.attempts) violations.push(`J${job}: view says ${s.attempts} attempts: ${history}`);
    for (let k = 1; k < list.length; k++) {
      if (!(claims[list[k]! * STRIDE + C.TOKEN]! > claims[list[k - 1]! * STRIDE + C.TOKEN]!)) {
        violations.push(`J${job}: tokens do not increase from attempt to attempt: ${history}`);
      }
    }
    const completes = list.filter((pos) => Atomics.load(outcomes, pos) === OUTCOME.COMPLETED);
    if (completes.length > 1) violations.push(`J${job}: completed by more than one lease: ${history}`);
    if (completes.length === 1) {
      if (s.status !== 'SUCCEEDED') violations.push(`J${job} is ${s.status} after an accepted complete: ${history}`);
      if (claims[completes[0]! * STRIDE + C.ATTEMPT] !== s.attempts) {
        violations.push(`J${job}: leased again after an accepted complete (view: ${s.attempts} attempts): ${history}`);
      }
    }
    if (s.status === 'DEAD' && s.attempts !== MAX_ATTEMPTS) violations.push(`J${job} DEAD after ${s.attempts} attempts: ${history}`);
  }
  console.log(
    `[chaos] ${terminations} terminations, ${incarnations - 1} worker threads, ${acked.size} acknowledged submits, ` +
      `${logged} logged leases, drained ${drainReport.drained}; ${count('SUCCEEDED')} SUCCEEDED, ${dead} DEAD; ` +
      `${Atomics.load(ctl, CTL.STALLS)} loop iterations of >= 40 ms (lock waits after a kill, or descheduling); ` +
      `${Date.now() - started} ms, the survivors stopped in ${stopMillis} ms (patience doubled ${patienceDoublings(handle)} times; ` +
      `the slowest attach took ${slowestAttach} ms)` +
      `${reclaim ? `; ${freedRows} rows of killed threads freed (${attachedKilled} had said they attached)` : ''}`,
  );
  expect(violations.slice(0, 30)).toEqual([]);
  await queue.close();
  if (journal === undefined) return { freed: freedRows, attachedKilled };

  // ── the journal, reopened, holds every job as memory did ──
  const reopened = JobQueue.open(journal, clock, policy, options);
  try {
    const differences: string[] = [];
    for (const [n, s] of status) {
      const view = reopened.view(`J${n}`);
      if (view.status !== s.status || view.attempts !== s.attempts) {
        differences.push(`J${n}: ${s.status} after ${s.attempts} attempts in memory, ${view.status} after ${view.attempts} in the journal`);
      }
    }
    expect(differences.slice(0, 30)).toEqual([]);
    expect(reopened.stats()).toEqual({ pending: 0, ready: 0, delayed: 0, running: 0, succeeded: count('SUCCEEDED'), dead, cancelled: 0, paused: false });
  } finally {
    await reopened.close();
  }
  return { freed: freedRows, attachedKilled };
}
