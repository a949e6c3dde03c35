import * as step from '../memory/steps.js';
import type { WordAccess } from '../memory/access.js';
import { elementsIn, growTo } from '../memory/growth.js';
import type { SharedHeap } from './heap.js';
import {
  ATTENTION, ENTRY_K1, ENTRY_K2, ENTRY_K3, ENTRY_SLOT, ENTRY_WORD, LEVELS, LEVEL_COUNT, LEVEL_HEAD, LEVEL_KEYS, LEVEL_ORDER,
  LEVEL_PRIORITY, LEVEL_SEQ, LEVEL_TAIL, LEVEL_TAIL_JOB_NUM, LEVEL_TAIL_KEY, LEVEL_WORDS, OVERFLOW, RING_ENTRY_BYTES, RING_FIELDS, RING_SLOT, RING_WORD,
} from '../memory/layout.js';
import type { SlotTable } from './slots.js';
import { SHARED_TURN_LEVEL, type GroupTurns } from './group-turns.js';

/**
 * Whoever claims for a poll: makes the claim's move (CLAIMED), finds the slot
 * moved by another thread first (LOST), cannot claim without the lock
 * (ABORT), or (under the lock, with a journal) finds the job frozen by a
 * commit in flight (FROZEN: the poll stops there and waits for that commit).
 */
export interface Claimer {
  tryClaim(slot: number, word: number): number;
}
export const CLAIMED = 1;
export const LOST = 0;
export const ABORT = -1;
export const FROZEN = -3;
/** Ring entries a poller passes before it moves the shared head (a hint) past them. */
const HEAD_STEP = 16;
/** Reads of LEVEL_SEQ a poll makes while the level table is being rewritten, before it looks at the lock (see #refreshOrder). */
const REWRITE_SPINS = 64;
/** What the polls (and a look at one level) answer when no ready job is due (or none could be claimed). */
export const NOTHING_READY = -1;
/** What a look for the level of a priority answers when it has none and no room to make one (the job goes to the overflow heap). */
const NO_LEVEL = -1;
/** What `poll` returns when it needs the lock (a claim needs a token block, the level table stays mid-rewrite, or a ring entry is not due by the poll's clock): the caller polls again under it. */
export const POLL_ABORTED = -2;
/** What `pollLocked` returns when the level table stays mid-rewrite through REWRITE_SPINS reads: the caller looks at the lock and polls again. */
export const POLL_REWRITING = -4;
/** What `pollLocked` returns when the best ready job is frozen by a commit in flight (keeps I21): the caller waits for it. */
export const POLL_FROZEN = -3;

/**
 * The ready jobs, best first: one ring per priority level in use, in
 * (key, submission) order, and one overflow heap, keyed (−priority, key,
 * submission), for what a ring cannot take in order (a key below the level's
 * last entry's, more distinct priorities than LEVELS). The key is the job's
 * runAt; while groups take turns (I27, group-turns.ts) it is the job's turn,
 * so a ring holds the jobs of every group interleaved, one per group per
 * round, and only a job whose turn is below its ring's tail (a group that
 * arrives after another's burst) goes to the overflow heap.
 *
 * Concurrency contract: only the maintenance lock holder appends (`file`),
 * reads and writes the entries' keys, and touches the overflow heap; any
 * thread consumes a ring from its head, lock-free: the entry's slot and word
 * are a hint, the CAS on the slot's lease word is the claim, and the head
 * moves on by CAS (a hint too: a thread killed before it moves the head
 * leaves an entry the next poller finds stale). While the overflow heap holds
 * entries, ATTENTION's OVERFLOW bit sends polls to the lock, where
 * `pollLocked` compares both. The level table is read under a seqlock
 * (LEVEL_SEQ) and cached per thread; new levels are rare.
 */
export class ReadyIndex {
  readonly #levelWords: Int32Array;
  readonly #keys: Float64Array;
  readonly #ringBuffer: SharedArrayBuffer;
  /** This thread's view of the levels' rings: fixed-length, re-made to cover the levels in use (see growth.ts and #reachLevels). */
  #rings: Int32Array;
  /** The same bytes as float64, for the entries' keys (the holder's, see RING_ENTRY_BYTES), re-made with #rings. */
  #ringKeys: Float64Array;
  readonly #lockWords: Int32Array;
  readonly #overflow: SharedHeap;
  readonly #slots: SlotTable;
  readonly #ringSize: number;
  /** A level's ring in Int32 elements (its entries, then their keys), and in float64 elements. */
  readonly #levelInts: number;
  readonly #levelFloats: number;
  /** Where a level's keys begin, in float64 elements from the level's start: past its entries. */
  readonly #keysFrom: number;
  readonly #mask: number;
  readonly #order = new Int32Array(LEVELS);
  #orderCount = 0;
  #orderSeq = -1;
  /** Per level, where this thread knows every entry before is spent (reset with the level table). */
  readonly #cursor = new Int32Array(LEVELS);
  #peekSlot = 0;
  #peekWord = 0;
  /** The key of the entry #peek found (its runAt, or its turn while groups take turns). */
  #peekKey = 0;
  readonly #access: WordAccess;
  readonly #turns: GroupTurns;

  /** `rings`: growable, by a level's ring at a time as levels are made (see #addLevel). */
  constructor(
    levelWords: Int32Array, keys: Float64Array, rings: SharedArrayBuffer, lockWords: Int32Array, overflow: SharedHeap, slots: SlotTable, access: WordAccess,
    turns: GroupTurns,
  ) {
    this.#access = access;
    this.#turns = turns;
    this.#levelWords = levelWords;
    this.#keys = keys;
    this.#ringBuffer = rings;
    this.#lockWords = lockWords;
    this.#overflow = overflow;
    this.#slots = slots;
    this.#ringSize = rings.maxByteLength / LEVELS / RING_ENTRY_BYTES;
    this.#mask = this.#ringSize - 1;
    this.#levelInts = (this.#ringSize * RING_ENTRY_BYTES) / Int32Array.BYTES_PER_ELEMENT;
    this.#levelFloats = (this.#ringSize * RING_ENTRY_BYTES) / Float64Array.BYTES_PER_ELEMENT;
    this.#keysFrom = (this.#ringSize * RING_FIELDS * Int32Array.BYTES_PER_ELEMENT) / Float64Array.BYTES_PER_ELEMENT;
    this.#rings = this.#ringView();
    this.#ringKeys = this.#keyView();
  }

  /** A view of the whole levels' rings the buffer holds now. */
  #ringView(): Int32Array {
    const levelInts = this.#levelInts;
    return new Int32Array(this.#ringBuffer, 0, elementsIn(this.#ringBuffer, levelInts * Int32Array.BYTES_PER_ELEMENT) * levelInts);
  }

  /** A float64 view of the bytes #rings covers, for the entries' keys. */
  #keyView(): Float64Array {
    return new Float64Array(this.#ringBuffer, 0, (this.#rings.length / this.#levelInts) * this.#levelFloats);
  }

  /** Makes this thread's view cover the rings of levels below `count`: they were grown before the count that names them was published. */
  #reachLevels(count: number): void {
    if (count * this.#levelInts > this.#rings.length) {
      this.#rings = this.#ringView();
      this.#ringKeys = this.#keyView();
    }
  }

  /** Where the entry at ring `position` of `level` is in #rings. */
  #entryAt(level: number, position: number): number {
    return level * this.#levelInts + (position & this.#mask) * RING_FIELDS;
  }

  /** Where the key of the entry at ring `position` of `level` is in #ringKeys: past the level's entries, at the same position. */
  #keyAt(level: number, position: number): number {
    return level * this.#levelFloats + this.#keysFrom + (position & this.#mask);
  }

  // ── consumers, lock-free ───────────────────────────────────────────────

  /** Claims the best ready job of the rings (not the overflow heap) through `claimer`; its slot, or NOTHING_READY. */
  poll(now: number, claimer: Claimer): number {
    if (!this.#refreshOrder(REWRITE_SPINS)) return POLL_ABORTED;
    for (let k = 0; k < this.#orderCount; k++) {
      const slot = this.#pollLevel(this.#order[k]!, now, claimer);
      if (slot !== NOTHING_READY) return slot;
    }
    return NOTHING_READY;
  }

  /**
   * Claims the first valid, due entry of one level's ring, scanning from the
   * head: an entry found stale, or claimed by another thread first, is passed
   * without going back to the head, so racing pollers spread over the ring
   * instead of piling on one entry. Every entry passed is one this poll saw
   * invalid, so the head may move past it (`#advanceTo`). The slot,
   * NOTHING_READY if the level has nothing ready, or POLL_ABORTED.
   */
  #pollLevel(level: number, now: number, claimer: Claimer): number {
    const words = this.#levelWords;
    const access = this.#access;
    const base = level * LEVEL_WORDS;
    const slots = this.#slots;
    const cursor = this.#cursor[level]!;
    // The entries below the tail were published by the tail's store. A level whose every entry this thread
    // has seen spent is passed on one read (most levels of a poll that takes a lower priority's job).
    let tail = access.load(words, base + LEVEL_TAIL);
    if (((tail - cursor) | 0) <= 0) return NOTHING_READY;
    // Where this poll starts: the head, or past it where this thread has seen every entry spent.
    const head = access.load(words, base + LEVEL_HEAD);
    for (let at = ((cursor - head) | 0) > 0 ? cursor : head; ; at = (at + 1) | 0) {
      // Past the tail read last: read it again, for entries appended since.
      if (((tail - at) | 0) <= 0 && (((tail = access.load(words, base + LEVEL_TAIL)) - at) | 0) <= 0) return this.#passed(level, head, at);
      const entry = level * this.#levelInts + (at & this.#mask) * RING_FIELDS;
      const slot = this.#rings[entry + RING_SLOT]!;
      const word = this.#rings[entry + RING_WORD]!;
      if (slots.word(slot) === word) {
        // Every entry was due when filed (a READY job's runAt is at most its filer's time): one not due yet means
        // this poll's clock reading is older than that holder's. Entries after it may be due all the same (a ring
        // in turn order is not in runAt order): the poll leaves the choice to the lock, whose time is the latest.
        if (slots.runAts[slot]! > now) {
          this.#passed(level, head, at);
          return POLL_ABORTED;
        }
        // The level table this poll took its order from still stands. A rebuild (after this thread was taken for
        // dead mid-poll) numbers the levels anew, and a level read as the best may then hold worse jobs: the poll
        // takes the lock instead. (One that begins after this look renews the words: the claim's CAS fails.)
        if (access.load(this.#lockWords, LEVEL_SEQ) !== this.#orderSeq) return POLL_ABORTED;
        const claim = claimer.tryClaim(slot, word);
        // An aborted claim moved nothing: its entry stays for the locked poll.
        if (claim === ABORT) return POLL_ABORTED;
        if (claim === CLAIMED) {
          this.#passed(level, head, (at + 1) | 0);
          return slot;
        }
      }
    }
  }

  /**
   * Notes that every entry before `at` is spent (claimed or stale: a word
   * never comes back), in this thread's cursor; the shared head follows in
   * steps of HEAD_STEP, so that pollers do not write it on every claim. NOTHING_READY.
   */
  #passed(level: number, head: number, at: number): number {
    this.#cursor[level] = at;
    if (((at - head) | 0) >= HEAD_STEP) this.#advanceTo(level, at);
    return NOTHING_READY;
  }

  /** Moves the head forward to `position` unless another thread moved it further already (a hint: only forward). */
  #advanceTo(level: number, position: number): void {
    const words = this.#levelWords;
    const at = level * LEVEL_WORDS + LEVEL_HEAD;
    const access = this.#access;
    for (;;) {
      const head = access.load(words, at);
      if (((position - head) | 0) <= 0) return;
      // Forward only: a thread that moved it further knows more entries are spent.
      if (access.compareExchange(words, at, head, position) === head) return;
    }
  }

  /**
   * The first ring entry of `level` whose slot still holds its word and is
   * due by `now` (in #peekSlot, #peekWord); its ring position, or NOTHING_READY. Stale
   * entries on the way are skipped for everyone.
   */
  #peek(level: number, now: number): number {
    const words = this.#levelWords;
    const base = level * LEVEL_WORDS;
    for (;;) {
      // The head and tail as they are now: the entries between them were published by the tail's store.
      const head = step.load(words, base + LEVEL_HEAD);
      if (((step.load(words, base + LEVEL_TAIL) - head) | 0) <= 0) return NOTHING_READY;
      const at = this.#entryAt(level, head);
      // Racy: the entry is the holder's (published by the tail's store, I10), the runAt a mover's (checked by the word, I3).
      step.racyRead();
      const slot = this.#rings[at + RING_SLOT]!;
      const word = this.#rings[at + RING_WORD]!;
      if (this.#slots.word(slot) === word) {
        if (this.#slots.runAts[slot]! > now) return NOTHING_READY;
        this.#peekSlot = slot;
        this.#peekWord = word;
        this.#peekKey = this.#turns.taken ? this.#ringKeys[this.#keyAt(level, head)]! : this.#slots.runAts[slot]!;
        return head;
      }
      this.#advance(level, head);
    }
  }

  #advance(level: number, head: number): void {
    // Moves the head past an entry that is claimed or stale; if another thread moved it already, that is as good.
    step.compareExchange(this.#levelWords, level * LEVEL_WORDS + LEVEL_HEAD, head, (head + 1) | 0);
  }

  /**
   * Brings this thread's copy of the level table up to date; false if the
   * table was being rewritten through `spins` reads of LEVEL_SEQ. A rewrite
   * takes a few stores, but its holder may be stalled or dead in the middle:
   * a lock-free poll then takes the lock, and a locked one looks whether it
   * still holds it, rather than spin on the rewrite: the lock's patience
   * finds a dead holder out (its successor's rebuild ends the rewrite).
   */
  #refreshOrder(spins: number): boolean {
    const lockWords = this.#lockWords;
    // A seqlock read: the cached order stands while LEVEL_SEQ has not moved.
    let seq = this.#access.load(lockWords, LEVEL_SEQ);
    if (seq === this.#orderSeq) return true;
    for (let read = 1; ; read++) {
      if ((seq & 1) === 0) {
        const count = step.load(lockWords, LEVEL_COUNT);
        for (let k = 0; k < count; k++) this.#order[k] = step.load(lockWords, LEVEL_ORDER + k);
        // Unchanged across the reads: the order read is one the holder published.
        if (step.load(lockWords, LEVEL_SEQ) === seq) {
          this.#reachLevels(count);
          this.#orderCount = count;
          this.#orderSeq = seq;
          // A rebuild empties the rings: positions seen before mean nothing now; each level starts at its head.
          // (A level made later changes LEVEL_SEQ, and is set here then.)
          for (let k = 0; k < count; k++) this.#cursor[this.#order[k]!] = this.#access.load(this.#levelWords, this.#order[k]! * LEVEL_WORDS + LEVEL_HEAD);
          return true;
        }
      } else if (read >= spins) {
        return false;
      }
      seq = step.load(lockWords, LEVEL_SEQ);
    }
  }

  // ── the maintenance lock holder ────────────────────────────────────────

  /**
   * Claims the best ready job of rings and overflow heap together (under the
   * lock, when the overflow heap is not empty); its slot, NOTHING_READY, or
   * POLL_REWRITING (the caller looks at the lock and polls again).
   */
  pollLocked(now: number, claimer: Claimer): number {
    const overflow = this.#overflow;
    const slots = this.#slots;
    const turns = this.#turns;
    for (;;) {
      while (overflow.size > 0 && slots.word(overflow.top(ENTRY_SLOT)) !== overflow.top(ENTRY_WORD)) overflow.pop();
      this.#syncOverflowBit();
      // Under the lock a rewrite in progress is a holder's taken for dead, still running: the caller looks at the lock.
      if (!this.#refreshOrder(REWRITE_SPINS)) return POLL_REWRITING;
      let level = NO_LEVEL;
      let head = NOTHING_READY;
      for (let k = 0; k < this.#orderCount && head === NOTHING_READY; k++) {
        level = this.#order[k]!;
        head = this.#peek(level, now);
      }
      const fromOverflow = overflow.size > 0 && (head === NOTHING_READY || this.#overflowFirst(level));
      if (fromOverflow) {
        const slot = overflow.top(ENTRY_SLOT);
        const word = overflow.top(ENTRY_WORD);
        const keys = [overflow.top(ENTRY_K1), overflow.top(ENTRY_K2), overflow.top(ENTRY_K3)] as const;
        overflow.pop();
        // While groups take turns, K2 is the entry's turn: a claim held back keeps it (see HeldJobs#admits).
        if (turns.taken) turns.offered = keys[1];
        let claim: number;
        try {
          claim = claimer.tryClaim(slot, word);
        } finally {
          // Also when the claim throws (a holder taken over): no later claim keeps this turn by mistake.
          turns.offered = 0;
        }
        if (claim === FROZEN) {
          // Back in its place: the poll waits for its commit and looks again.
          overflow.push(...keys, slot, word);
          return POLL_FROZEN;
        }
        const claimed = claim === CLAIMED;
        if (claimed && turns.taken) turns.served(this.#turnLevel(-keys[0]), keys[1]);
        // Only now, the claim made: until then the job is in no ring and no heap, and a lock-free poll that the
        // bit let through would pass it over while it is still ready and unclaimed.
        this.#syncOverflowBit();
        if (claimed) return slot;
        continue;
      }
      if (head === NOTHING_READY) return NOTHING_READY;
      const slot = this.#peekSlot;
      // While groups take turns, the entry's key is its turn: a claim held back keeps it, as from the heap.
      if (turns.taken) turns.offered = this.#peekKey;
      let claim: number;
      try {
        claim = claimer.tryClaim(slot, this.#peekWord);
      } finally {
        turns.offered = 0;
      }
      // Left at the head of its ring: the poll waits for its commit and looks again.
      if (claim === FROZEN) return POLL_FROZEN;
      const claimed = claim === CLAIMED;
      if (claimed && turns.taken) turns.served(level, this.#peekKey);
      this.#advance(level, head);
      if (claimed) return slot;
    }
  }

  /** Whether the overflow heap's top comes before the ring entry of `level` #peek found: by (−priority, key, submission). */
  #overflowFirst(level: number): boolean {
    const overflow = this.#overflow;
    const k1 = -this.#keys[level * LEVEL_KEYS + LEVEL_PRIORITY]!;
    if (overflow.top(ENTRY_K1) !== k1) return overflow.top(ENTRY_K1) < k1;
    const key = this.#peekKey;
    if (overflow.top(ENTRY_K2) !== key) return overflow.top(ENTRY_K2) < key;
    return overflow.top(ENTRY_K3) < this.#slots.jobNums[this.#peekSlot]!;
  }

  /**
   * Files a READY job (lock holder), keyed by its runAt or, while groups take
   * turns (see group-turns.ts), by its turn: `turn` if the job had one (held
   * back, or kept by a rebuild), else its group's next. At its level's tail
   * when that keeps the ring in (key, submission) order and there is room,
   * else in the overflow heap by (−priority, key, submission). So grouped
   * jobs filed in turn order stay in the rings, claimed lock-free; one whose
   * turn is below its ring's tail sends the polls to the lock (OVERFLOW) until
   * it is claimed (keeps I27).
   */
  file(slot: number, word: number, turn = 0): void {
    const slots = this.#slots;
    const priority = slots.priorities[slot]!;
    const level = this.#levelOf(priority);
    const key = this.#turns.taken ? this.#turnOf(slot, level, turn) : slots.runAts[slot]!;
    if (level !== NO_LEVEL && this.#append(level, slot, word, key)) return;
    const overflow = this.#overflow;
    if (overflow.full) this.#compactOverflow();
    overflow.push(-priority, key, slots.jobNums[slot]!, slot, word);
    this.#syncOverflowBit();
  }

  /**
   * The turn of a job filed ready at `level`: `turn` if it kept one, else its
   * group's next. The lock-free polls claim from the rings without telling
   * the turns; so the round is first brought up to where the ring's shared
   * head says it is at least (keeps I27, see #spentTurn).
   */
  #turnOf(slot: number, level: number, turn: number): number {
    if (turn > 0) return turn;
    const turns = this.#turns;
    if (level === NO_LEVEL) return turns.next(this.#slots.groups[slot]!, SHARED_TURN_LEVEL);
    turns.served(level, this.#spentTurn(level));
    return turns.next(this.#slots.groups[slot]!, level);
  }

  /**
   * The turn the round of `level` has come to at least, by its ring: every
   * entry before the shared head is spent (claimed, or stale), and the ring
   * is in turn order, so the round is one short of the turn of the entry at
   * the head, or at the last entry's turn if the ring is empty (0 if nothing
   * was appended since the rings were cleared). The head lags the claims by
   * fewer than HEAD_STEP entries, plus one per lock-free poll in flight
   * (#passed): that many entries' turns is all the round read here can be
   * behind the one the claims made.
   */
  #spentTurn(level: number): number {
    const words = this.#levelWords;
    const base = level * LEVEL_WORDS;
    // The head as the pollers moved it (a hint, only forward); the tail is this holder's.
    const head = this.#access.load(words, base + LEVEL_HEAD);
    if (head === words[base + LEVEL_TAIL]!) return this.#keys[level * LEVEL_KEYS + LEVEL_TAIL_KEY]!;
    return this.#ringKeys[this.#keyAt(level, head)]! - 1;
  }

  /**
   * While groups take turns: the turn of each job the rings and the overflow
   * heap file ready, by slot, into `turns` (an entry whose slot holds another
   * word now is stale, and left out). For a rebuild, which keeps them (I27).
   */
  turnsFiled(turns: Map<number, number>): void {
    const slots = this.#slots;
    const words = this.#levelWords;
    const count = this.#access.load(this.#lockWords, LEVEL_COUNT);
    this.#reachLevels(count);
    for (let level = 0; level < count; level++) {
      const base = level * LEVEL_WORDS;
      const tail = words[base + LEVEL_TAIL]!;
      for (let position = this.#access.load(words, base + LEVEL_HEAD); ((tail - position) | 0) > 0; position = (position + 1) | 0) {
        const at = this.#entryAt(level, position);
        const slot = this.#rings[at + RING_SLOT]!;
        if (slots.word(slot) === this.#rings[at + RING_WORD]!) turns.set(slot, this.#ringKeys[this.#keyAt(level, position)]!);
      }
    }
    this.#overflow.forEach((_k1, turn, _k3, slot, word) => {
      if (slots.word(slot) === word) turns.set(slot, turn);
    });
  }

  /**
   * The priority of each level, by level number: the turn counters of
   * groups are kept per level (GroupTurns), so a rebuild that keeps them
   * makes the levels again in this order (`makeLevels`) before it files.
   */
  levelPriorities(): number[] {
    const keys = this.#keys;
    const count = this.#access.load(this.#lockWords, LEVEL_COUNT);
    return Array.from({ length: count }, (_, level) => keys[level * LEVEL_KEYS + LEVEL_PRIORITY]!);
  }

  /** After `clear`: makes a level for each of `priorities`, numbered in that order (see levelPriorities). */
  makeLevels(priorities: readonly number[]): void {
    for (const priority of priorities) this.#levelOf(priority);
  }

  /** The turn level of `priority`: its ready level, or SHARED_TURN_LEVEL if it has none. */
  #turnLevel(priority: number): number {
    const keys = this.#keys;
    const count = this.#access.load(this.#lockWords, LEVEL_COUNT);
    for (let level = 0; level < count; level++) if (keys[level * LEVEL_KEYS + LEVEL_PRIORITY] === priority) return level;
    return SHARED_TURN_LEVEL;
  }

  /**
   * Drops the overflow heap's stale entries: full means mostly stale (a slot
   * has at most one valid entry). Its own method: a closure in `file` would
   * make every call allocate the context it captures.
   */
  #compactOverflow(): void {
    this.#overflow.compact((s, w) => this.#slots.word(s) === w);
  }

  #append(level: number, slot: number, word: number, key: number): boolean {
    const words = this.#levelWords;
    const keys = this.#keys;
    const base = level * LEVEL_WORDS;
    const tail = words[base + LEVEL_TAIL]!;
    const head = this.#access.load(words, base + LEVEL_HEAD);
    const k = level * LEVEL_KEYS;
    const lastKey = keys[k + LEVEL_TAIL_KEY]!;
    const jobNum = this.#slots.jobNums[slot]!;
    // An empty ring takes any key; otherwise only one after the last entry's.
    const inOrder = head === tail || key > lastKey || (key === lastKey && jobNum > keys[k + LEVEL_TAIL_JOB_NUM]!);
    if (!inOrder || ((tail - head) | 0) >= this.#ringSize) return false;
    const at = this.#entryAt(level, tail);
    this.#rings[at + RING_SLOT] = slot;
    this.#rings[at + RING_WORD] = word;
    // Only while groups take turns (the key is then no field of the job's): a queue without them leaves those pages untouched.
    if (this.#turns.taken) this.#ringKeys[this.#keyAt(level, tail)] = key;
    keys[k + LEVEL_TAIL_KEY] = key;
    keys[k + LEVEL_TAIL_JOB_NUM] = jobNum;
    // Publishes the entry to pollers.
    this.#access.store(words, base + LEVEL_TAIL, (tail + 1) | 0);
    return true;
  }

  /** The level of `priority`, made if it is new and there is room; NO_LEVEL if there is none. */
  #levelOf(priority: number): number {
    const lockWords = this.#lockWords;
    const keys = this.#keys;
    const count = this.#access.load(lockWords, LEVEL_COUNT);
    this.#reachLevels(count);
    for (let level = 0; level < count; level++) if (keys[level * LEVEL_KEYS + LEVEL_PRIORITY] === priority) return level;
    return count >= LEVELS ? NO_LEVEL : this.#addLevel(priority, count);
  }

  /** Makes level `count` for `priority`, in the polling order. Its own method: the sort's closure would make every `#levelOf` allocate its context. */
  #addLevel(priority: number, count: number): number {
    const lockWords = this.#lockWords;
    const keys = this.#keys;
    const level = count;
    // The level's ring exists before the count that names it is published (pollers re-make their views by the count).
    growTo(this.#ringBuffer, (level + 1) * this.#levelInts * Int32Array.BYTES_PER_ELEMENT);
    this.#reachLevels(level + 1);
    keys[level * LEVEL_KEYS + LEVEL_PRIORITY] = priority;
    const order: number[] = [];
    for (let k = 0; k < count; k++) order.push(step.load(lockWords, LEVEL_ORDER + k));
    order.push(level);
    order.sort((a, b) => keys[b * LEVEL_KEYS + LEVEL_PRIORITY]! - keys[a * LEVEL_KEYS + LEVEL_PRIORITY]!);
    const seq = this.#beginLevelWrite();
    order.forEach((l, k) => step.store(lockWords, LEVEL_ORDER + k, l));
    step.store(lockWords, LEVEL_COUNT, count + 1);
    this.#endLevelWrite(seq);
    return level;
  }

  /**
   * Makes LEVEL_SEQ odd for a rewrite of the level table (pollers read it
   * again until it is even), and returns that odd value: the next odd value
   * above whatever it holds, by CAS, so that it only ever grows and a
   * poller's cached even value never comes back. From whatever it holds: a
   * holder killed mid-rewrite leaves it odd, and its successor's rewrite (the
   * rebuild's `clear`) must still end even — an increment from odd left it
   * odd for good, every poll spinning on it (the scheduler's kill at every
   * step found one, and a stalled holder's late increment did the same).
   * Keeps I24.
   */
  #beginLevelWrite(): number {
    const lockWords = this.#lockWords;
    for (;;) {
      const seen = step.load(lockWords, LEVEL_SEQ);
      const odd = (seen + 1) | 1;
      if (step.compareExchange(lockWords, LEVEL_SEQ, seen, odd) === seen) return odd;
    }
  }

  /** Publishes the rewrite begun at `seq` (even again) — unless a successor that took the lock over began its own since: then its end publishes. */
  #endLevelWrite(seq: number): void {
    step.compareExchange(this.#lockWords, LEVEL_SEQ, seq, seq + 1);
  }

  #syncOverflowBit(): void {
    // Polls compare with the overflow heap (under the lock) only while it holds entries.
    if (this.#overflow.size > 0) step.or(this.#lockWords, ATTENTION, OVERFLOW);
    else step.and(this.#lockWords, ATTENTION, ~OVERFLOW);
  }

  /** Forgets every entry and level (a rebuild, with every lock-free call held at the gate). */
  clear(): void {
    const lockWords = this.#lockWords;
    const seq = this.#beginLevelWrite();
    step.store(lockWords, LEVEL_COUNT, 0);
    // Every ring emptied, its positions counting on from where they were: a poller taken for dead, whose
    // positions are of before, then moves no head past entries filed after (see #advanceTo: forward only).
    const words = this.#levelWords;
    for (let base = 0; base < words.length; base += LEVEL_WORDS) step.store(words, base + LEVEL_HEAD, step.load(words, base + LEVEL_TAIL));
    this.#keys.fill(0);
    this.#endLevelWrite(seq);
    this.#overflow.clear();
    this.#syncOverflowBit();
  }
}
