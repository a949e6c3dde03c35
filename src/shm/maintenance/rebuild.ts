import * as step from '../memory/steps.js';
import {
  ATTENTION, CANCELLED, COMMIT_MOVED, DATA_REF, DEAD, DELAYED, FINISH_BASE, FINISH_TICKET, FREE, FREE_SLOT_COUNT, GATE, HEADERS_REF, HINTS_STALE, REFILING, ERROR_REF, JOB_NUM, KEY_REF,
  LEASE_UNTIL, MOVES, PAYLOAD_BYTES, payloadLength, WAITING, WAITING_PARENTS, PRIORITY, READY, REBUILDS, RECORD_FIELDS, RESULT_REF, RUNNING, RUN_AT, SLOT_HIGH_WATER, STATUS_COUNT, SUCCEEDED, TYPE, isBusy,
  statusOf,
} from '../memory/layout.js';
import type { Filing } from './filing.js';
import { keyHash } from '../../key-hash.js';
import { assertHeld, showProgress } from '../protocol/lock-held.js';
import type { QueueMemory } from '../queue-memory.js';
import type { MoverHolder } from '../protocol/mover.js';
import { chunksOf, countedChainBytes, leadingTypeBytes } from '../records.js';
import { NOT_COUNTED } from '../protocol/mover.js';
import { groupCap } from '../tables/concurrency.js';
import { deathUncounted, notEnded } from '../moves/flows.js';
import type { JobMoves } from '../moves/job-moves.js';
import { LAZY } from '../journal/journal-notes.js';
import type { ReservedBytes } from './reserved-bytes.js';

/**
 * The repair of the hints (rings, heaps, maps, counters, free slots, arena
 * chains): derived again from the slot table, the one truth, by the
 * maintenance lock holder with the gate shut (see `rebuild`).
 */
export class Rebuilder {
  readonly #m: QueueMemory;
  readonly #filing: Filing;
  readonly #holder: MoverHolder;
  /** The holder's moves: a flow's parent dead-lettered as its child's move would have (Flows), and the journal's notes of a recount. */
  readonly #moves: JobMoves;
  /** Whose reservations live on (I30). */
  readonly #reserved: ReservedBytes;
  /** A copy of a slot's record, read under the lock. */
  readonly #record = new Float64Array(RECORD_FIELDS);

  constructor(memory: QueueMemory, filing: Filing, holder: MoverHolder, moves: JobMoves, reserved: ReservedBytes) {
    this.#m = memory;
    this.#filing = filing;
    this.#holder = holder;
    this.#moves = moves;
    this.#reserved = reserved;
  }

  /**
   * Re-derives every hint from the slot table, with the gate shut (no
   * lock-free call runs): finishes BUSY words from their intents, then
   * recounts, re-sorts pending jobs by `now`, re-indexes leases, job numbers,
   * free slots and finished jobs, and reclaims unreferenced arena chunks.
   * O(capacity); run after a takeover of the lock, a thread that died inside
   * a call, or a clock that went back. With `fenceStale` (after a takeover, or
   * rows revoked: a thread taken for dead may be alive and go on), every free,
   * ready and delayed slot gets a new word (keeps I3), so that what such a
   * thread decides from words it read before fails its CAS. Not otherwise:
   * an undo moves its frozen jobs from the words it recorded.
   */
  rebuild(now: number, { fenceStale = false, keepTurns = true }: { fenceStale?: boolean; keepTurns?: boolean } = {}): void {
    const m = this.#m;
    const { header, slots, lockWords, helping, rows } = m;
    assertHeld(this.#m.lock);
    // Shut the gate: new worker calls take the lock (and wait for us); then wait out those in flight (keeps I11, with RowTable#enter).
    step.or(lockWords, ATTENTION, GATE);
    try {
      helping.revoke(helping.quiesce());
      const high = header[SLOT_HIGH_WATER]!;
      for (let slot = 0; slot < high; slot++) {
        // Checked per slot: a rebuilder stalled past the timeout must not finish moves over its successor's.
        assertHeld(this.#m.lock);
        helping.finish(slot);
      }
      // Read before the rings and heaps are cleared: the ready jobs' turns, kept for those that stay ready (keeps I27).
      const turns = keepTurns && m.turns.taken ? this.#turnsFiled() : NO_TURNS;
      // The groups' turn counters are kept per level: the levels are made again with the numbers they had.
      const levels = turns === NO_TURNS ? [] : m.ready.levelPriorities();
      m.ready.clear();
      m.ready.makeLevels(levels);
      m.delayed.clear();
      m.leases.clear();
      m.finished.clear();
      // Held jobs are READY: filed in the rings below, and held again by the next poll if still limited.
      m.held.clear();
      m.concurrency.clearHeld();
      m.jobMap.clear();
      m.keyMap.clear();
      rows.clearRings();
      header[FREE_SLOT_COUNT] = 0;
      header[FINISH_BASE]! += step.exchange(lockWords, FINISH_TICKET, 0) >>> 0;
      // The ticket changed, and a finish a dead thread left half-made is finished above: waiters look again.
      m.finishes.announce();
      const counts = new Array<number>(STATUS_COUNT).fill(0);
      /** RUNNING jobs per cap entry (type number, group's entry), for the concurrency caps. */
      const runningByEntry = new Map<number, number>();
      let finishedChunks = 0;
      let waitingParents = 0;
      const ready: number[] = [];
      /** The READY word each ready slot held at the scan: the one word its ring entry may carry. */
      const readyWords = new Map<number, number>();
      const chains: number[] = [];
      // LIVE is counted again: a holder that died between an entry's stamp and its count left it one short.
      m.reservations.recount();
      /** The slots' data chains, while reservations are held: an entry whose run a slot holds was adopted (I30). */
      const dataRefs = m.reservations.live > 0 ? new Set<number>() : undefined;
      const flows = m.flows;
      /** Per parent's job number, its children in memory that have not ended (flows only). */
      const openChildren = new Map<number, number>();
      /** Per parent's job number, the slot of its first child DEAD under 'fail' whose death it has yet to count (flows only). */
      const uncountedDeaths = new Map<number, number>();
      /** The waiting parents, by slot, and the word each holds after the scan (flows only). */
      const waitingWords = new Map<number, number>();
      for (let slot = 0; slot < high; slot++) {
        showProgress(this.#m.lock, slot);
        assertHeld(this.#m.lock);
        let word = slots.word(slot);
        let status = statusOf(word);
        // A BUSY word reads as FREE by its status bits: it is a job, not a free slot.
        const busy = isBusy(word);
        if (status === FREE && !busy) {
          // A new version of the free word (keeps I3): a holder taken for dead between taking this slot and
          // placing its job there (its strings stored in chunks this rebuild reclaims) now fails its place's CAS.
          // Placed meanwhile by that very holder (its CAS came first): its release marks the hints stale, for a rebuild that maps it.
          if (fenceStale && this.#holder.mover.flip(slot, word, FREE, NOT_COUNTED) < 0) continue;
          m.freeSlots[header[FREE_SLOT_COUNT]!++] = slot;
          continue;
        }
        m.jobMap.set(slots.get(slot, JOB_NUM), slot);
        chains.push(slots.get(slot, DATA_REF), leadingTypeBytes(slots.get(slot, TYPE)) + payloadLength(slots.get(slot, PAYLOAD_BYTES)));
        dataRefs?.add(slots.get(slot, DATA_REF));
        for (const field of COUNTED_REFS) {
          const ref = slots.get(slot, field);
          if (ref > 0) chains.push(ref, countedChainBytes(m.arena.countedBytes(ref)));
        }
        if (slots.get(slot, KEY_REF) > 0) {
          const key = m.keyMap.keyOf(slot);
          m.keyMap.setIfNewer(key, keyHash(key), slot);
        }
        // A flow's child: whether it has not ended, for its parent's recount below (keeps I28).
        if (flows && slots.parents[slot] !== 0) this.#noteChild(slot, word, openChildren, uncountedDeaths);
        // A move in flight that the gate did not hold back (a revoked row's call, under way as its owner was
        // presumed dead): no lock-free move changes a job's number or strings, so the job is mapped and its
        // chains kept above; its new status is its mover's to count and register.
        if (busy) continue;
        if (status === READY || status === DELAYED) {
          // Ready or delayed by `now`: a clock that went back turns ready jobs delayed again. A new word either
          // way: a holder taken for dead, still reading the rings as they were, then fails its claim's CAS
          // rather than lease a job its successor would have passed over for a better one (keeps I3).
          // A parent waiting for its children is never due, and is filed nowhere (keeps I28).
          const waits = slots.waitings[slot]! > 0;
          if (waits) waitingParents++;
          const due = !waits && slots.get(slot, RUN_AT) <= now;
          const renewed = fenceStale || due !== (status === READY) ? this.#holder.mover.flip(slot, word, due ? READY : DELAYED, NOT_COUNTED) : word;
          // Moved meanwhile by a call the gate did not hold back (as a BUSY word above): its mover's to count and register.
          if (renewed < 0) continue;
          word = renewed;
          status = due ? READY : DELAYED;
          if (waits) waitingWords.set(slot, word);
          if (due) {
            ready.push(slot);
            readyWords.set(slot, word);
          }
          else if (!waits) this.#filing.push(m.delayed, slots.get(slot, RUN_AT), slots.get(slot, JOB_NUM), 0, slot, word);
        } else if (status === RUNNING) {
          this.#filing.push(m.leases, slots.get(slot, LEASE_UNTIL), 0, 0, slot, word);
          const type = slots.types[slot]!;
          runningByEntry.set(type, (runningByEntry.get(type) ?? 0) + 1);
          const group = slots.groups[slot]!;
          if (group > 0) runningByEntry.set(groupCap(group), (runningByEntry.get(groupCap(group)) ?? 0) + 1);
        } else if (status === SUCCEEDED || status === CANCELLED) {
          // When it finished is not kept in the slot: retention's age counts from this rebuild.
          this.#filing.fileFinishedUnordered(slot, word, now);
          finishedChunks += chunksOf(slots.readInto(slot, this.#record));
        }
        counts[status]!++;
      }
      this.#filing.sortFinished();
      /** The children whose death a waiting parent has yet to count: it is dead-lettered once the hints are whole. */
      const deaths: number[] = [];
      for (const [parent, word] of waitingWords) {
        const death = uncountedDeaths.get(slots.get(parent, JOB_NUM));
        if (death !== undefined) {
          deaths.push(death);
          continue;
        }
        const counted = this.#recount(parent, word, openChildren.get(slots.get(parent, JOB_NUM)) ?? 0, now);
        if (counted === STILL_WAITING) continue;
        waitingParents--;
        if (statusOf(counted) === READY) {
          counts[DELAYED]!--;
          counts[READY]!++;
          ready.push(parent);
          readyWords.set(parent, counted);
        } else {
          this.#filing.push(m.delayed, slots.get(parent, RUN_AT), slots.get(parent, JOB_NUM), 0, parent, counted);
        }
      }
      const key = (slot: number, field: number) => slots.get(slot, field);
      // The jobs that kept a turn first, in turn order (so that they go back into the rings, not the overflow
      // heap: keeps I27); then the others, whose turns are given as they are filed (Infinity − Infinity is NaN: next key).
      const turnOf = (slot: number) => turns.get(slot) ?? Infinity;
      ready.sort((a, b) => key(b, PRIORITY) - key(a, PRIORITY) || turnOf(a) - turnOf(b) || key(a, RUN_AT) - key(b, RUN_AT) || key(a, JOB_NUM) - key(b, JOB_NUM));
      // The sort takes milliseconds of 20 000 jobs and touches no lock: a holder stalled there is taken over, and
      // lock-free moves resume once its successor's rebuild is done. So it looks at the lock again, and files each
      // job with the word of its scan, not the slot's word now: an entry made for a word read later (a job claimed
      // and completed meanwhile, SUCCEEDED) would let a poll claim that job again; one for the scanned word is
      // merely stale once the job has moved on.
      assertHeld(this.#m.lock);
      // Each job filed with the turn it had; one that has none (due by this rebuild, or its entry lost with a
      // holder that died mid-push) takes its group's next, in that order (keeps I27, see group-turns.ts).
      for (const slot of ready) this.#filing.fileReady(slot, readyWords.get(slot)!, turns.get(slot) ?? 0);
      // The chains and counts are the scan's: a holder taken over meanwhile must not free what its successor stored since.
      assertHeld(this.#m.lock);
      if (dataRefs !== undefined) this.#keepReserved(chains, dataRefs);
      m.arena.rebuild(chains);
      rows.setTotals(counts, finishedChunks);
      header[WAITING_PARENTS] = waitingParents;
      // With the gate shut no mover counts meanwhile: the counts are the scan's (the caps' hint, I1).
      m.concurrency.recount(runningByEntry, counts[RUNNING]!);
      // A holder that died setting a cap (keeps I25) or a rate limit may have left its bit clear under one set.
      m.concurrency.resync();
      m.rateLimits.resync();
      // The rings were cleared, and moves finished from intents: a listing that was built is filed afresh.
      if (m.listing.built) m.listing.build(high, this.#showProgress);
      // Every ready job is filed afresh: a refile its holder died in (or was taken over in) hides none (I26).
      step.and(lockWords, ATTENTION, ~REFILING);
      header[REBUILDS]!++;
      this.#filing.dueChanged();
      m.setLastNow(now);
      // A holder lost between a child's death and its parent's dead-lettering under 'fail': the parent is
      // dead-lettered now, as that move would have (its lastError naming the child, then up the tree; keeps I28).
      for (const child of deaths) this.#moves.flows.childEnded(child, DEAD, now);
    } finally {
      // Open the gate again — only while the lock is still ours. A rebuilder taken over (its quiesce waited
      // for a stalled call as long as the lock's waiters wait for it) leaves here by LockLost while its
      // successor rebuilds behind the same gate bit: opening it would let lock-free moves run under that
      // rebuild, which then skips a slot BUSY at its scan (a job missing from the map) and files a ready
      // entry with a word read after the scan (a SUCCEEDED job claimed again). The successor opens it; a
      // gate left shut only sends worker calls to the lock, whose release marked the hints stale for a rebuild.
      if (m.lock.held()) openGate(lockWords);
    }
  }

  /**
   * Adds to `chains` the runs reserved for producers (keeps I30): no slot
   * references them, yet their producers are filling them. An entry whose
   * run a slot holds (in `dataRefs`) was adopted by a submit whose holder
   * was lost before it let the entry go; one whose owner is known gone (its
   * row revoked or freed: see ReservedBytes#ownerGone) can never be
   * submitted. Both entries go, and the second's run, in no chain, is freed.
   */
  #keepReserved(chains: number[], dataRefs: ReadonlySet<number>): void {
    const table = this.#m.reservations;
    table.forEach((entry) => {
      if (dataRefs.has(entry.head) || this.#reserved.ownerGone(entry)) table.remove(entry.entry, entry.stamp);
      else chains.push(entry.head, entry.bytes);
    });
  }

  /**
   * Counts the child in `slot` (its word `word`) in `open` under its parent's
   * number if it has not ended (`notEnded`, the rule Flows#awaitChildren
   * counts by too); or, DEAD under 'fail' and not AWAITED (`deathUncounted`),
   * notes it in `deaths` under that number, the child first submitted of
   * those (as a live fail names the first child to die, a parent dies of one).
   */
  #noteChild(slot: number, word: number, open: Map<number, number>, deaths: Map<number, number>): void {
    const { slots } = this.#m;
    const link = slots.parents[slot]!;
    const parent = Math.abs(link);
    const awaited = slots.waitings[slot]!;
    if (deathUncounted(word, link, awaited)) {
      const first = deaths.get(parent);
      if (first === undefined || slots.jobNums[first]! > slots.jobNums[slot]!) deaths.set(parent, slot);
    } else if (notEnded(word, link, awaited)) {
      open.set(parent, (open.get(parent) ?? 0) + 1);
    }
  }

  /**
   * The waiting parent in `slot` (DELAYED, its word `word`) waits for no
   * more than its `open` children: a holder that died (or was taken over)
   * between a child's end and its count left WAITING one too high (I28).
   * Lowered to `open`, never raised: a child no longer in memory was
   * finished and evicted, or removed, and has ended either way. At none it
   * is READY (its runAt read as now, as Flows#countDown does) or DELAYED
   * till its runAt. The new word, or STILL_WAITING if it waits on. Noted for
   * the journal (lazily: lost in a crash, the reopen's rebuild counts again),
   * so that a reopen finds the parent as this rebuild left it.
   */
  #recount(slot: number, word: number, open: number, now: number): number {
    const { slots } = this.#m;
    const waiting = slots.waitings[slot]!;
    if (open >= waiting) return STILL_WAITING;
    const mover = this.#holder.mover;
    const draft = mover.start(slot);
    draft[WAITING] = open;
    const due = open === 0 && draft[RUN_AT]! <= now;
    if (due) draft[RUN_AT] = now;
    if (this.#moves.journaled) draft[MOVES]!++;
    this.#moves.notes.note(slots.get(slot, JOB_NUM), COMMIT_MOVED, LAZY);
    const next = mover.apply(slot, word, due ? READY : DELAYED, NOT_COUNTED);
    // Moved meanwhile by a call the gate did not hold back: none moves a waiting parent but the holder, so only a holder taken over.
    if (next < 0 || open > 0) return STILL_WAITING;
    return next;
  }

  /**
   * The turn of each job filed ready (in the rings or the overflow heap) or held back (in
   * the held heap, K3), by slot: entries whose slot holds another word now
   * are stale, and left out. The heaps are the holder's: after a takeover one
   * may be cut short mid-push, and a job whose entry is missing takes a new turn.
   */
  #turnsFiled(): Map<number, number> {
    const { slots, held, ready } = this.#m;
    const turns = new Map<number, number>();
    ready.turnsFiled(turns);
    held.forEach((_k1, _k2, turn, slot, word) => {
      if (turn > 0 && slots.word(slot) === word) turns.set(slot, turn);
    });
    return turns;
  }

  /** `showProgress`, as a callback made once. */
  readonly #showProgress = (step: number): void => showProgress(this.#m.lock, step);
}

/** What `#recount` answers for a parent that waits on. */
const STILL_WAITING = -1;

/** The turns of a queue whose groups do not take turns (or start to, with this rebuild): none. */
const NO_TURNS: ReadonlyMap<number, number> = new Map();

/** The record fields that point at a counted chain (its length first) when > 0: lastError, result, idempotent key, headers. */
const COUNTED_REFS = [ERROR_REF, RESULT_REF, KEY_REF, HEADERS_REF] as const;

/**
 * Opens the gate at the end of a rebuild, unless HINTS_STALE is set: a holder
 * taken over let go meanwhile, and what it wrote may postdate this rebuild.
 * Then the gate stays shut for the next holder, who clears the mark and
 * rebuilds. One CAS on the word both are in, so no late release falls between
 * the look and the opening. Keeps I12.
 */
function openGate(lockWords: Int32Array): void {
  for (;;) {
    const attention = step.load(lockWords, ATTENTION);
    if ((attention & HINTS_STALE) !== 0) return;
    // Retried if another bit moved meanwhile (DUE_LOWERED, OVERFLOW, RATE_LIMITED).
    if (step.compareExchange(lockWords, ATTENTION, attention, attention & ~GATE) === attention) return;
  }
}
