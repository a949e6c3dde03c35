/**
 * Scheduled histories in which the threads write payloads in place
 * (`reserveBytes`, I30 in src/shm/README.md): a thread may reserve a payload,
 * fill it with a pattern that names it (src/testing/in-place.ts), and submit
 * it (mostly) or release it later, its other calls in between, so that a
 * kill, a stall past the patience (the sleeper's row revoked and its
 * reservations reclaimed while it sleeps) or another thread's rebuild lands
 * between the reserve and the submit. A quarter of the histories each hold a
 * thread inside another's call, stall one, or kill one at a random step.
 *
 * A random stall seldom revokes a row in the middle of a reservation: only a
 * thread stalled inside a lock-free call (in memory; a journaled queue makes
 * every call under the lock) has its row revoked, and only by a call that
 * waits out the calls in flight (a rebuild, or a settle) while it sleeps. So
 * the second test searches, as ./kills.test.ts does, histories in which a
 * thread makes other calls between a reserve and its submit, kills it at the
 * first step of one, and (in memory) stalls it past the patience at each step
 * of a lock-free one in turn until its submit is refused.
 *
 * Checked, besides the contract (./recovery.ts, in `relaxed-poll`, where a
 * lease or view of a job made of a reservation must spell its name: its
 * bytes exactly the producer's, no run handed to two reservations or reused
 * under a job):
 * - every job made of a reservation and still in memory after the history
 *   holds its pattern;
 * - a submit refused with ERR_RESERVATION_LOST is a stalled thread's (taken
 *   for dead), and made no job: none spells its name;
 * - a killed thread's reservations are reclaimed once `threadExited` is told:
 *   no entry is left, and their chunks are free again.
 * A failure prints the options, which replay the history step for step.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { JobNotFoundError, type JobQueue, type JobView } from '../../dist/index.js';
import type { Call, Op } from '../../dist/testing/index.js';
import { nameIn } from '../../dist/testing/in-place.js';
import { Arena, QueueMemory } from '../../dist/testing/core-internals.js';
import { testSeed } from '../support/helpers.js';
import { MAX_THREADS, historyPlan, holdPlan, killPlan, plansFor, replayed, stallPlan } from './plans.js';
import { LOCK_TIMEOUT_MILLIS, ScheduledRecorder, replayCommand, type ScheduledBackend, type ScheduledHistory, type ScheduledHistoryOptions } from './recorder.js';
import { expectContractKept } from './recovery.js';

/** Per backend: 50 histories by default (LEASEHOLD_SCHEDULED_HISTORIES scales them: 1,000 is the default). */
const HISTORIES = Math.round(Number(process.env['LEASEHOLD_SCHEDULED_HISTORIES'] || 1_000) / 20);

const PLANS = [historyPlan, holdPlan, stallPlan, killPlan];
/** Calls per thread: more than the other suites' CALLS, so that other calls come between a reserve and its submit. */
const RESERVING_CALLS = 8;
const RESERVATION_LOST = 'ERR_RESERVATION_LOST';
/** The calls a thread may make lock-free on a queue in memory: the ones a stall can have its row revoked in. */
const LOCK_FREE: readonly Op[] = ['poll', 'complete', 'fail', 'extend', 'completeAndPoll'];
/** Histories searched for a call between a reserve and its submit; the search stops once the tests below have what they need. */
const SEARCH = 300;
/** Kills, each between a reserve and its submit, of the first targets found. */
const KILLS = 3;

interface Counts {
  /** Reservations handed out as the queue's shared memory. */
  reservations: number;
  /** Jobs made of one (submits of a reservation that returned an id). */
  adopted: number;
  /** A killed thread's reservations given back at `threadExited`. */
  reclaimed: number;
  /** Submits refused because their reservation was reclaimed meanwhile (their thread taken for dead). */
  lost: number;
}

describe.each<{ backend: ScheduledBackend }>([{ backend: 'memory' }, { backend: 'journal' }])('scheduled histories of payloads written in place, on $backend', ({ backend }) => {
  const recorder = new ScheduledRecorder(MAX_THREADS, RESERVING_CALLS);
  afterAll(() => recorder.close());

  const base = testSeed(`scheduled reservations: ${backend}`);
  const plans = plansFor(backend, HISTORIES, (i) => ({ ...PLANS[i % PLANS.length]!(base, i, backend), calls: RESERVING_CALLS, reservations: true }));
  it.skipIf(plans.length === 0)(`gives every job made of a reservation its producer's bytes in each of ${plans.length} histories`, async () => {
    const counts = newCounts();
    for (const options of plans) await expectReservationsKept(await recorder.record(options), counts);
    console.log(`[scheduled reservations: ${backend}] ${plans.length} histories, ${describeCounts(counts)}`);
    // Histories that never reserve or never submit a reservation prove little.
    if (plans.length > 1) {
      expect(counts.reservations, 'reservations').toBeGreaterThan(plans.length);
      expect(counts.adopted, 'reservations submitted').toBeGreaterThan(plans.length / 2);
    }
  }, 900_000);

  it.skipIf(replayed() !== undefined)('reclaims the reservation of a thread killed, or taken for dead, between its reserve and its submit', async () => {
    const counts = newCounts();
    let kills = 0;
    let stalls = 0;
    // In memory, until a stalled thread's submit is refused; on the journal (no lock-free call to be taken for dead in), the kills alone.
    const wantsLost = backend === 'memory';
    for await (const { options, thread, op, first, last } of inFlight(recorder, base, backend)) {
      if (kills < KILLS) {
        const killed: ScheduledHistoryOptions = { ...options, kill: { thread, step: first } };
        const history = await recorder.record(killed);
        expect(history.run.killed, replayCommand(killed)).toEqual([thread]);
        await expectReservationsKept(history, counts);
        kills++;
      }
      if (wantsLost && LOCK_FREE.includes(op)) {
        for (let step = first; step <= last && counts.lost === 0; step++) {
          await expectReservationsKept(await recorder.record({ ...options, stall: { thread, step, millis: LOCK_TIMEOUT_MILLIS * 5 } }), counts);
          stalls++;
        }
      }
      if (kills === KILLS && (!wantsLost || counts.lost > 0)) break;
    }
    console.log(`[scheduled reservations: ${backend}] ${kills} kills and ${stalls} stalls between a reserve and its submit, ${describeCounts(counts)}`);
    expect(kills, 'kills between a reserve and its submit').toBe(KILLS);
    expect(counts.reclaimed, 'reservations reclaimed from killed threads').toBeGreaterThanOrEqual(KILLS);
    if (wantsLost) expect(counts.lost, 'submits refused ReservationLostError').toBeGreaterThan(0);
  }, 900_000);
});

function newCounts(): Counts {
  return { reservations: 0, adopted: 0, reclaimed: 0, lost: 0 };
}

function describeCounts(c: Counts): string {
  return `${c.reservations} reservations in shared memory, ${c.adopted} submitted, ${c.reclaimed} reclaimed from killed threads, ${c.lost} submits refused ReservationLostError`;
}

/** Every check of this file on one history (the contract last: its recovery changes the queue), counted into `counts`. */
async function expectReservationsKept(history: ScheduledHistory, counts: Counts): Promise<void> {
  const replay = replayCommand(history.options);
  const { calls } = history;
  const names = reservationNames(calls);
  counts.reservations += calls.filter((c) => c.call.op === 'reserveBytes' && c.result.ok && c.result.value === true).length;
  counts.adopted += calls.filter((c) => isSubmitOf(c, names) && c.result.ok).length;
  expectPatternsHeld(history, names, replay);
  counts.lost += expectLostSubmitsChangedNothing(history, names, replay);
  counts.reclaimed += expectDeadThreadsReclaimed(history, replay);
  await expectContractKept(history);
}

/** A call of a thread between one of its reservations (in shared memory) and the submit of it, and the call's steps (first and last, from 1). */
interface InFlight {
  options: ScheduledHistoryOptions;
  thread: number;
  op: Op;
  first: number;
  last: number;
}

/** Of the first SEARCH histories (each run whole), those with a call of a thread between a reservation and its submit: the first such call. */
async function* inFlight(recorder: ScheduledRecorder, base: number, backend: ScheduledBackend): AsyncGenerator<InFlight> {
  for (let i = 0; i < SEARCH; i++) {
    const found = firstInFlight(await recorder.record({ ...historyPlan(base, i, backend), calls: RESERVING_CALLS, reservations: true }));
    if (found !== undefined) yield found;
  }
}

function firstInFlight({ options, calls, callSteps }: ScheduledHistory): InFlight | undefined {
  for (let thread = 0; thread < options.threads; thread++) {
    const own = calls.filter((c) => c.thread === thread).sort((a, b) => a.inv - b.inv);
    const steps = callSteps[thread]!;
    for (const [reserve, c] of own.entries()) {
      if (c.call.op !== 'reserveBytes' || !c.result.ok || c.result.value !== true) continue;
      const name = c.call.name;
      const submit = own.findIndex((s) => s.call.op === 'submit' && s.call.payload === name);
      for (let k = reserve + 1; k < submit; k++) {
        const [first, last] = [steps[2 * k]! + 1, steps[2 * k + 1]!];
        if (last >= first) return { options, thread, op: own[k]!.call.op, first, last };
      }
    }
  }
  return undefined;
}

/** The names of the reservations the history's threads made (each recorded call's own). */
function reservationNames(calls: readonly Call[]): Set<string> {
  return new Set(calls.flatMap((c) => (c.call.op === 'reserveBytes' && c.result.ok ? [c.call.name] : [])));
}

/** Whether `c` is a submit of a reservation (its payload one of `names`). */
function isSubmitOf(c: Call, names: ReadonlySet<string>): boolean {
  return c.call.op === 'submit' && names.has(c.call.payload);
}

/** Every job made of a reservation that is still in memory holds exactly its pattern. */
function expectPatternsHeld({ queue, calls }: ScheduledHistory, names: ReadonlySet<string>, replay: string): void {
  const held: { id: string; name: string; spelled: string }[] = [];
  for (const c of calls) {
    if (!isSubmitOf(c, names) || !c.result.ok) continue;
    const id = c.result.value as string;
    const view = viewIfHeld(queue, id);
    if (view !== undefined) held.push({ id, name: (c.call as { payload: string }).payload, spelled: nameIn(view.payload as Uint8Array) });
  }
  expect(held.filter((job) => job.spelled !== job.name), `jobs whose bytes are not their reservation's: ${replay}`).toEqual([]);
}

/** Each submit refused ERR_RESERVATION_LOST is a stalled thread's, and no job spells its name; how many there were. */
function expectLostSubmitsChangedNothing({ queue, calls, options }: ScheduledHistory, names: ReadonlySet<string>, replay: string): number {
  const lost = calls.filter((c) => isSubmitOf(c, names) && !c.result.ok && c.result.code === RESERVATION_LOST);
  const stalled = new Set([options.stall ?? []].flat().map((stall) => stall.thread));
  expect(lost.filter((c) => !stalled.has(c.thread)), `reservations lost by threads never taken for dead: ${replay}`).toEqual([]);
  const lostNames = new Set(lost.map((c) => (c.call as { payload: string }).payload));
  const spelling: string[] = [];
  for (const id of jobIdsUpTo(calls)) {
    const payload = viewIfHeld(queue, id)?.payload;
    if (payload instanceof Uint8Array && lostNames.has(nameIn(payload))) spelling.push(`${id}: ${nameIn(payload)}`);
  }
  expect(spelling, `jobs made by a refused submit: ${replay}`).toEqual([]);
  return lost.length;
}

/** The job's view, or undefined if no job has the id (never made, or evicted). */
function viewIfHeld(queue: JobQueue, id: string): JobView | undefined {
  try {
    return queue.view(id);
  } catch (error) {
    if (error instanceof JobNotFoundError) return undefined;
    throw error;
  }
}

/** Every job id up to past the highest the history saw: a job no call returned would be among them. */
function jobIdsUpTo(calls: readonly Call[]): string[] {
  const numbers = calls.flatMap((c) => (c.call.op === 'submit' && c.result.ok && typeof c.result.value === 'string' ? [Number(c.result.value.slice(1))] : []));
  // A few past the highest: numbers a refused submit could have taken, or a pending one's.
  return Array.from({ length: Math.max(0, ...numbers) + calls.length }, (_, i) => `J${i + 1}`);
}

/**
 * The live threads closed their instances (giving back their own); each
 * killed thread's reservations are left until `threadExited` is told, which
 * frees their chunks: then no reservation is left at all. How many were reclaimed so.
 */
function expectDeadThreadsReclaimed({ queue, killedThreadIds }: ScheduledHistory, replay: string): number {
  const memory = new QueueMemory(queue.share().buffers, LOCK_TIMEOUT_MILLIS);
  let reclaimed = 0;
  for (const threadId of killedThreadIds.values()) {
    const entries = entriesOf(memory).filter((entry) => entry.thread === threadId);
    const chunks = entries.reduce((sum, entry) => sum + Arena.chunksFor(entry.bytes), 0);
    const free = memory.arena.freeChunks;
    queue.threadExited(threadId);
    // At least: a rebuild for a call it was killed in may free that call's chunks too.
    expect(memory.arena.freeChunks - free, `chunks given back at threadExited: ${replay}`).toBeGreaterThanOrEqual(chunks);
    reclaimed += entries.length;
  }
  expect(entriesOf(memory), `reservations left after every thread closed or was reported exited: ${replay}`).toEqual([]);
  return reclaimed;
}

function entriesOf(memory: QueueMemory): { thread: number; bytes: number }[] {
  const entries: { thread: number; bytes: number }[] = [];
  memory.reservations.forEach(({ thread, bytes }) => entries.push({ thread, bytes }));
  return entries;
}
