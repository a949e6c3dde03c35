/**
 * The shared memory of one queue, declared once. Every other module reads
 * offsets from here; nothing computes one by hand.
 *
 * A queue is a handful of SharedArrayBuffers, each sized from `capacity`:
 *
 *   lockWords   Int32 [ LOCK … COMMIT_* | ATTENTION | DUE_VERSION | FINISH_TICKET FINISH_WAITERS | LEVEL_SEQ … ]  hot words, one line each
 *   header      f64   [ sequences | slot pool | arena | heap sizes | NEXT_DUE | LAST_NOW | … ]  maintenance holder's
 *   slotWords   Int32 [ lease word of slot 0 | slot 1 | ... ]                       THE TRUTH
 *   jobNums … workers  one buffer per record column [ JOB_NUM of slot 0 1 2 ... ]   written only while the word is BUSY
 *   levelWords  Int32 [ level 0: HEAD … | TAIL … | level 1 … ]  ring positions       hint
 *   levelKeys   f64   [ level 0: PRIORITY TAIL_KEY TAIL_JOB_NUM | ... ]             maintenance holder's
 *   levelRings  Int32 [ level 0: SLOT WORD | ... | KEY (f64) | ... | level 1 ... ]   ready jobs, best first   hint (KEY: the holder's)
 *   overflow    f64   [ heap entry: K1 K2 K3 SLOT WORD | ... ]  ready jobs a ring cannot take in order (K2 the turn while groups take turns)  hint
 *   delayed     f64   (same entry shape)                                            hint
 *   leases      f64   (same entry shape)                                            hint
 *   finished    f64   (same entry shape), a sorted ring keyed by FINISH_SEQ (eviction order), K2 when it finished; kept from the first eviction on  hint
 *   held        f64   (same entry shape), keyed by when its type's window opens; K3 the job's turn (groups)  hint
 *   rateLimits  f64   [ type entry 0: MAX WINDOW WINDOW_START USED | entry 1 ... ]   maintenance holder's
 *   retryPolicies f64 [ type entry 0: MAX_ATTEMPTS BASE MAX JITTER | entry 1 ... ]  maintenance holder's
 *   concurrency Int32 [ CAPS CAP_HIGH GROUP_CAP_HIGH | queue: CAP RUNNING HELD | type 1: ... | group 1: ... ]  the holder's, but RUNNING: counted by every mover while CAPS > 0
 *   turns       f64   [ per level: TURN | per group (ungrouped first): per level: LAST TURN | ... ]  fair turns of groups  maintenance holder's
 *   jobMap      Int32 [ slot + 1 | ... ]  open addressing, keyed by the slot's JOB_NUM; only jobs away from their home slot  hint
 *   keyMap      Int32 [ slot + 1 HASH | ... ]  open addressing, keyed by the idempotent key  maintenance holder's
 *   freeSlots   Int32 [ slot | ... ]  a stack                                       hint
 *   rowWords    Int32 [ row 0: STATE CALL INTENT_SEQ RING_TAIL… | row 1 ... ]     one line per row
 *   rowData     f64   [ row 0: INTENT (slot, from, to, record) | COUNTS | ... ]
 *   rowRings    f64   [ row 0: lease ring | finished ring | row 1 ... ]  entries KEY SLOT WORD
 *   arena       bytes [ chunk: NEXT | 64 bytes | chunk ... ]     payload, lastError, result, idempotent key, headers
 *               (a run: [RUN_MARK | the run's chunks' bytes, contiguous], see RUN_MARK)
 *   reservations Int32 [ SEQ LIVE | entry: STAMP HEAD BYTES ROW THREAD | ... ]  arena runs a producer fills in place  maintenance holder's
 *   workerNames bytes [ LENGTH | 124 bytes | ... ]  append-only     worker ids
 *   typeNames   bytes (same entry shape)           append-only     job types
 *   groupNames  bytes (same entry shape)           append-only     job groups (submit's `group`)
 *   commitRing  f64   [ jobNum * 4 + COMMIT_* | ... ]  a ring       journal writes to make
 *   listing     f64   [ BUILT ROOT… | node of slot 0: LEFT RIGHT CLASS KEY | ... ]  per-status trees for jobs()  hint
 *   schedules   bytes [ CURRENT LENGTH LENGTH | JSON | JSON ]  two copies   schedules (in-memory queues)
 *   eventRing   Int32 [ SUBSCRIBERS CLAIM PUBLISHED - | entry: OPEN DONE KIND … TEXT | ... ]  a ring   events of moves, while subscribed
 *
 * ── Growth ──
 *
 * The buffers marked "grows" below start small and grow, as what they hold
 * grows, up to the length `bufferBytes` gives them (their maxByteLength: the
 * address space a growable SharedArrayBuffer reserves, committed only as it
 * grows). A thread grows a buffer *before* it publishes an index into the new
 * bytes; a thread that meets an index past its own (fixed-length) view
 * re-makes the view (see growth.ts).
 *
 *   slotWords and the record columns (one buffer each)   grow with SLOT_HIGH_WATER (SlotTable#grow), from INITIAL_SLOTS
 *   listing     grows with the slots it files, once built (ListingIndex#reach)
 *   keyMap      grows, rehashed, as keys come to slots past two thirds of its entries (KeyMap#roomFor)
 *   overflow, delayed, leases, held   grow as entries are pushed (SharedHeap#push), from INITIAL_HEAP_ENTRIES
 *   finished    grows as entries are filed, its wrapped entries moved past the old end (FinishOrder#grow), from INITIAL_HEAP_ENTRIES
 *   arena       grows as chunks past ARENA_BUMP are taken (Arena#take, #freshRun), from INITIAL_ARENA_BYTES
 *   levelRings  grows a level's ring at a time, as levels are made (ReadyIndex#addLevel), from none
 *   rowRings    grows a row's rings at a time, as rows are first owned (RowTable#acquire), from row 0's
 *   commitRing, awaited   none for an in-memory queue, whole for a journaled one
 *
 * A slot past a thread's view is re-made into it as the thread meets it
 * (SlotTable#word, #jobNum, and at each lock hold #keepUp); a slot past the
 * buffer itself was never used: FREE, its record all zero.
 *
 * Sized for `capacity` from the start: jobMap (open addressing keyed by a
 * hash modulo its size: growing it means rehashing it while lock-free
 * lookups read it), freeSlots (a quarter of slotWords), and the small
 * fixed ones (lockWords, header, levelWords, levelKeys, rowWords, rowData,
 * workerNames, typeNames, groupNames, rateLimits, retryPolicies, concurrency, turns, schedules,
 * reservations).
 *
 * ── Roles ──
 *
 * Worker calls (`poll`, `complete`, `extend`, `completeAndPoll`) of an
 * in-memory queue take no queue-wide lock in the common case: a thread
 * claims a job by a CAS of its lease word, racing the others. Everything else
 * — submits, fail and release (they re-enqueue), cancel, retryDead, expiry of
 * leases, promotion of delayed jobs, eviction, rebuilds — runs under the
 * *maintenance lock* (QueueLock), as does every call of a journaled queue.
 * A worker call takes the lock only when maintenance is due (NEXT_DUE <= now,
 * a clock that went back, ATTENTION set, a full row ring).
 *
 * ── Rows ──
 *
 * Every JobQueue instance (one per thread and attach) owns a *row*: its
 * intent area, its counters and its two rings, all written only by it. Row 0
 * belongs to whoever holds the maintenance lock. A row's CALL word is odd
 * while the owner is inside a lock-free call: a thread killed there leaves it
 * odd, and a row odd with the same value for the queue's patience
 * (`lockTimeoutMillis`, raised by misjudgements, see patience.ts) of watching
 * is presumed dead (see helping.ts). A row names its owner's threadId
 * (ROW_THREAD): once told that thread exited (`threadExited`), the lock
 * holder frees its row for the next attach (RowTable#reclaim).
 *
 * ── Lease word (one Int32 per slot) ──
 *
 *   not busy:  version (27 bits) << 4 | 0 << 3 | status (3 bits)
 *   busy:      intent seq (19 bits) << 12 | row (8 bits) << 4 | 1 << 3 | 0
 *
 *   FREE(0) ─submit─▶ READY(1) ◀─promote─ DELAYED(2)     READY, DELAYED: public PENDING
 *                       │ ▲ ▲                 ▲
 *                  poll │ │ └─fail/expiry/release (backoff 0, or due)
 *                       ▼ │                   │ fail/expiry (backoff to come)
 *                    RUNNING(3) ──────────────┘   ⟲ extend, progress
 *                       │ └──fail/expiry (no attempts left)──▶ DEAD(5) ─retryDead─▶ READY
 *              complete ▼
 *                  SUCCEEDED(4)        READY/DELAYED/RUNNING ─cancel─▶ CANCELLED(6)
 *   SUCCEEDED / CANCELLED ─evict─▶ FREE     DEAD ─evict (retain's DEAD limits)─▶ FREE
 *   any status but RUNNING ─remove─▶ FREE
 *
 * A move is: read the word `w` (not BUSY); write the *intent* into the own
 * row (slot, from = w, to = next word, the new record's fields and a mask of
 * those it sets: all of them, or for a claim, complete or extend only the
 * few it changes); CAS `w → BUSY` naming the row and intent (the decision: a
 * loser wrote nothing shared and moves on); copy the intent's masked fields
 * into the slot; CAS `BUSY → to`. A claim or extend reads the clock again
 * just before its CAS for the lease's end (see WorkerPath#leaseEnd). Every
 * non-busy word takes a new version, so a word never repeats within the time
 * a thread could hold a stale copy: a ring or heap entry remembers the word
 * it was made for and is valid only while the slot still holds it.
 *
 * | move                  | who                         | from → to                 |
 * | --------------------- | --------------------------- | ------------------------- |
 * | submit (place)        | lock holder                 | FREE → READY / DELAYED    |
 * | poll (claim)          | any thread, lock-free       | READY → RUNNING           |
 * | complete              | lease holder, lock-free     | RUNNING → SUCCEEDED       |
 * | extend                | lease holder, lock-free     | RUNNING → RUNNING         |
 * | progress              | lease holder, lock-free     | RUNNING → RUNNING, PROGRESS set |
 * | fail, release, expiry | lock holder                 | RUNNING → READY / DELAYED / DEAD |
 * | promote               | lock holder (one CAS, no fields) | DELAYED → READY      |
 * | cancel                | lock holder                 | READY / DELAYED / RUNNING → CANCELLED |
 * | retryDead             | lock holder                 | DEAD → READY (a waiting parent: DELAYED) |
 * | edit (moves/edit.ts)  | lock holder                 | READY / DELAYED → READY / DELAYED |
 * | evict                 | lock holder (one CAS, no fields) | SUCCEEDED / CANCELLED → FREE; DEAD → FREE |
 * | remove                | lock holder (one CAS, no fields) | READY / DELAYED / SUCCEEDED / DEAD / CANCELLED → FREE |
 * | count down (flows.ts) | lock holder                 | DELAYED (waiting parent) → DELAYED / READY |
 * | fail parent (flows.ts)| lock holder                 | DELAYED (waiting parent) → DEAD |
 *
 * A thread that finds a word BUSY: a poller skips the slot (it is being
 * moved); any other reader spins a few times (the owner is nanoseconds from
 * done), then takes the maintenance lock and waits for the owner's row to
 * leave its call; if the row stays in the same call for the queue's patience
 * the owner is presumed dead and a rebuild, with every worker call held at
 * the gate, *finishes* the move from the intent (roll forward: the intent
 * holds every field the move sets) — see helping.ts, the one place that does it.
 * A stalled owner that wakes after that finds its final CAS refused and its
 * move already made, with the very values it was writing; a move it started
 * *after* being presumed dead is the residual risk, as for a lock holder
 * stalled past the timeout.
 *
 * ── Exclusive queues ──
 *
 * An in-memory queue made by `new JobQueue` is *exclusive* until its
 * `share()`: no other thread can reach its buffers (only a handle carries
 * them), so nothing races its moves and nothing needs ordering against
 * another thread's. Its moves write the record and then the word, with no
 * intent and no BUSY word (Mover#apply); its lock-free calls open no CALL
 * window; and a call reads the clock once, where a shared queue's claims and
 * placements read it again to order themselves against other threads'
 * (WorkerPath#leaseEnd, JobMoves#freshRunAt, ProducerSide#place). `share()`
 * ends it between two calls, for good: the words, rows and rings are then
 * exactly as the shared protocol leaves them (no word BUSY, every CALL even).
 * A journaled queue, and every attached instance, is never exclusive.
 *
 * ── Frozen jobs (journaled queues) ──
 *
 * With a journal, a move whose caller waits for its commit (submit,
 * complete, fail, release, cancel, retryDead) marks the slot's `awaited`
 * word with its commit ticket (see CommitRing.markOf). Until that ticket is
 * durable the job is frozen: poll passes it over (and files it back in its
 * place), eviction passes it over, cancel and retryDead wait for the commit
 * first (complete, fail, release and extend need RUNNING, which a marked job
 * never is: only a lease makes it RUNNING; one refused on a job a cancel
 * took from RUNNING waits for that commit too, and looks again). So if the commit fails, nobody
 * has built on the move, and its caller can undo it (see UndoLog). A
 * successful commit unfreezes the job by itself (the mark's ticket is
 * durable); a caller killed while waiting leaves its move to the next commit
 * that succeeds. Journaled queues make every move under the lock, so the
 * marks are read and written by the lock holder only; an in-memory queue
 * never reads them.
 *
 * ── Finishes (`finished(jobId)`) ──
 *
 * FINISH_TICKET counts every move into SUCCEEDED, DEAD or CANCELLED (one
 * Atomics.add, which a complete makes anyway for the eviction order), just
 * before the move. While FINISH_WAITERS > 0, the mover also counts
 * FINISH_NOTICES after its move and notifies it; the `finished` waits of any
 * thread sleep on that word (Atomics.waitAsync) after looking at their jobs.
 * See finishes.ts for the handshake. A result is an arena chain like lastError's
 * (RESULT_REF), stored by a complete under the lock and freed at eviction.
 */

// ── lock words (Int32) ───────────────────────────────────────────────────
/** Words that other threads write often sit a cache line (16 Int32) apart, so that they do not share a line. */
const LINE = 16;
/** 0: free; otherwise the holder's stamp, unique per acquisition. */
export const LOCK = 0;
/** Threads asleep in `Atomics.wait` on LOCK; the releaser notifies while > 0. */
export const LOCK_WAITERS = 1;
/**
 * Doublings of `lockTimeoutMillis` so far: how long a watcher waits before it
 * presumes a silent thread dead (see patience.ts). Raised by a thread that was
 * presumed dead while alive; never lowered.
 */
export const PATIENCE = 3;
/** Counts up whenever work may have become ready; idle workers `Atomics.waitAsync` on it. */
export const WORK_SIGNAL = LINE;
/** Workers asleep on WORK_SIGNAL; a submitter notifies only while > 0. */
export const IDLE_WAITERS = LINE + 1;

// ── group commit (used with a journal only) ──────────────────────────────
/** The commit leader's lock: the one thread writing the journal for everyone (a QueueLock word). */
export const COMMIT_LOCK = 2 * LINE;
/** Threads asleep on COMMIT_LOCK. */
export const COMMIT_WAITERS = 2 * LINE + 1;
/** Tickets issued: one per journal write noted in `commitRing`, under the queue lock. Wraps; compare by difference. */
export const COMMIT_HEAD = 2 * LINE + 2;
/** Tickets committed to the journal: every ticket up to here is durable. Only counts up (by difference). */
export const COMMIT_DURABLE = 2 * LINE + 3;
/** Threads asleep on COMMIT_DURABLE, waiting for a leader's commit; a leader notifies them all while > 0. */
export const COMMIT_SLEEPERS = 2 * LINE + 4;
/**
 * 1 once the journal's opener closed its view and let the journal go: a view
 * of another thread (attached before) may no longer start a call, which would
 * write to a journal this process no longer owns, beside (or over) the writes
 * of a later opener. Set by the opener under the queue lock; read under it.
 */
export const JOURNAL_RELEASED = 2 * LINE + 5;

// ── worker path (read by every lock-free call) ───────────────────────────
/**
 * Bits that send worker calls to the maintenance lock: GATE (a rebuild holds
 * every worker call back; shut by a holder that still holds the lock, or with
 * HINTS_STALE, and opened only by a holder that still holds the lock, at the
 * end of a rebuild, and not while HINTS_STALE is set: see Rebuilder#rebuild),
 * DUE_LOWERED (a lease was registered earlier than NEXT_DUE), OVERFLOW (the
 * overflow heap holds ready jobs a poll must compare), RATE_LIMITED (some job
 * type has a rate limit: every claim is counted under the lock, see
 * rate-limits.ts), CAPPED, REFILING.
 */
export const ATTENTION = 3 * LINE;
export const GATE = 1;
export const DUE_LOWERED = 2;
export const OVERFLOW = 4;
export const RATE_LIMITED = 8;
/** Some concurrency cap is set: every claim is admitted under the lock against the RUNNING counts (see concurrency.ts). */
export const CAPPED = 32;
/**
 * A READY job is between an edit's CAS and its new ready entry, visible to no
 * lock-free poll: every poll takes the lock until it is filed (keeps I26, see
 * CatchUp#refileReady).
 */
export const REFILING = 64;
/**
 * Set, with GATE in one step, by a holder that found on release that its lock
 * had been taken over: it was only slow, not dead, and may have written hints
 * over the taker's repairs. The next holder to take the lock clears it and
 * rebuilds the hints; a rebuild that ends with it set leaves the gate shut for
 * that holder. One word with GATE, so that no rebuild can open the gate between
 * a late release's two marks.
 */
export const HINTS_STALE = 16;
/**
 * Some job was submitted in a flow (submitFlow), for the queue's life: every complete is made
 * under the lock, where a child's success counts down its parent's WAITING (keeps I28).
 */
export const FLOWS = 256;
/** The ATTENTION bits that send complete and extend to the lock; a poll also minds OVERFLOW, RATE_LIMITED, CAPPED and REFILING. */
export const WORKER_ATTENTION = GATE | DUE_LOWERED;
export const POLL_ATTENTION = WORKER_ATTENTION | OVERFLOW | RATE_LIMITED | CAPPED | REFILING;
/** A complete minds FLOWS too (a poll-and-complete, POLL_ATTENTION and FLOWS); an extend or a progress report does not. */
export const COMPLETE_ATTENTION = WORKER_ATTENTION | FLOWS;
export const COMPLETE_POLL_ATTENTION = POLL_ATTENTION | FLOWS;
/** Counts up after each write of NEXT_DUE or LAST_NOW by the lock holder: readers keep copies of both while it holds still (I15, QueueMemory#nextDue). */
export const DUE_VERSION = 3 * LINE + 1;
/** Counts up while the level table is rewritten (odd: mid-write), a seqlock; new levels are rare. */
export const LEVEL_SEQ = 3 * LINE + 2;
/** Levels in use. */
export const LEVEL_COUNT = 3 * LINE + 3;
/** LEVEL_ORDER + k: the level of the k-th highest priority in use. */
export const LEVEL_ORDER = 3 * LINE + 4;
/**
 * 1 while the queue is paused (`pause()` until `resume()`), else 0: every poll
 * reads it first, one plain load beside the level words it reads anyway, and
 * returns nothing while it is set. Written rarely, by the lock holder. Just
 * past LEVEL_ORDER's LEVELS words, on a line pollers read and hardly anyone writes.
 */
export const PAUSED = 4 * LINE + 4;
/**
 * Moves into a finished status (SUCCEEDED, DEAD, CANCELLED) so far: one
 * Atomics.add per move, just before it, which is the eviction order
 * (FINISH_SEQ = FINISH_BASE + ticket; a DEAD job takes a ticket it never
 * uses). Rebased (set to 0) under the gate, with a notice: waits look again.
 */
export const FINISH_TICKET = 5 * LINE;
/** Sleepers on FINISH_NOTICES (any thread): a finishing move counts and notifies it only while > 0. */
export const FINISH_WAITERS = 5 * LINE + 1;
/**
 * Finishing moves made while someone waited: counted *after* each move (the
 * ticket comes before it), so that a wait that read this word before looking
 * at its job and missed the move sleeps on a value that has changed since.
 * `finished(jobId)` waits on it with Atomics.waitAsync.
 */
export const FINISH_NOTICES = 5 * LINE + 2;
/**
 * RUNNING jobs cancelled so far: counted, and notified, once each such
 * cancel has returned (durable, with a journal). The worker loops of every
 * thread sleep on it (Atomics.waitAsync, JobQueue#watchCancels) to abort the
 * signal of a handler whose job was cancelled; nothing else reads it, and a
 * cancel of a PENDING job leaves it alone. See protocol/cancels.ts.
 */
export const CANCEL_NOTICES = 5 * LINE + 3;
export const LOCK_WORD_COUNT = 6 * LINE;

// ── lease word ───────────────────────────────────────────────────────────
export const STATUS_MASK = 0b111;
export const BUSY = 0b1000;
const VERSION_SHIFT = 4;
/** Versions wrap at 2^27; a thread would have to sleep through 2^27 moves of one slot to be fooled. */
const VERSION_MASK = (1 << 27) - 1;
const ROW_BITS = 8;
const SEQ_SHIFT = VERSION_SHIFT + ROW_BITS;
export const SEQ_MASK = (1 << 19) - 1;

export const FREE = 0;
export const READY = 1;
export const DELAYED = 2;
export const RUNNING = 3;
export const SUCCEEDED = 4;
export const DEAD = 5;
export const CANCELLED = 6;
export type SlotStatus = typeof FREE | typeof READY | typeof DELAYED | typeof RUNNING | typeof SUCCEEDED | typeof DEAD | typeof CANCELLED;
export const STATUS_COUNT = 7;

export function statusOf(word: number): SlotStatus {
  return (word & STATUS_MASK) as SlotStatus;
}
export function isBusy(word: number): boolean {
  return (word & BUSY) !== 0;
}
export function nextWord(word: number, status: SlotStatus): number {
  return ((((word >>> VERSION_SHIFT) + 1) & VERSION_MASK) << VERSION_SHIFT) | status;
}
export function busyWord(row: number, seq: number): number {
  return ((seq & SEQ_MASK) << SEQ_SHIFT) | (row << VERSION_SHIFT) | BUSY;
}
export function busyRow(word: number): number {
  return (word >>> VERSION_SHIFT) & ((1 << ROW_BITS) - 1);
}
export function busySeq(word: number): number {
  return (word >>> SEQ_SHIFT) & SEQ_MASK;
}

// ── record fields: one record per slot ───────────────────────────────────
/**
 * A record's fields by number. A move builds the new record as float64
 * fields in its row's intent (the draft, see moves.ts); the slot table keeps
 * each field in a column of its own, in the narrowest typed array that holds
 * every value the field can take (RECORD_COLUMNS below).
 */
export const JOB_NUM = 0; //        n of id "Jn"
export const PRIORITY = 1;
export const RUN_AT = 2;
export const ATTEMPTS = 3;
export const TOKEN = 4; //          token of the latest lease (while RUNNING: the current one)
export const LEASE_UNTIL = 5; //    while RUNNING: the end of the lease
/** While DEAD: when the job died (shares LEASE_UNTIL's field, as FINISH_SEQ does); the retain option's DEAD limits evict by it. */
export const DIED_AT = 5;
export const FINISH_SEQ = 5; //     while SUCCEEDED or CANCELLED: order of finishing, for eviction oldest first (shares LEASE_UNTIL's field)
export const DATA_REF = 6; //       arena chain of the payload (after the type's bytes, for a type the type table has no entry for)
export const TYPE = 7; //           the job's type: its entry in `typeNames` + 1; or, a type the table had no room for, -(its UTF-8 bytes), leading the data chain
/** The payload's byte length, with PAYLOAD_BINARY set for a binary payload (see payloadLength, isBinaryPayload). */
export const PAYLOAD_BYTES = 8;
export const ERROR_REF = 9; //      arena chain of lastError (its byte length first, see ERROR_LENGTH_BYTES), or a canned error below
export const ERROR_BYTES = 10; //   lastError's UTF-8 bytes: in a draft only, read from the chain's length (no column)
export const WORKER = 11; //        worker name of the latest lease: its entry in `workerNames` + 1; 0: none
export const MOVES = 12; //         with a journal: moves of this job so far, to order its journal writes; 0 without one
export const ATTEMPT_LIMIT = 13; //  the job's own maxAttempts (submit's option); 0: the policy's
export const RESULT_REF = 14; //    while SUCCEEDED: arena chain of the result's JSON text (its byte length first, as lastError's); 0: none
export const RESULT_BYTES = 15; //  the result's UTF-8 bytes: in a draft only, read from the chain's length (no column)
export const KEY_REF = 16; //        arena chain of the job's idempotent key (its byte length first, as lastError's); 0: no key
export const KEY_BYTES = 17; //      the key's UTF-8 bytes: in a draft only, read from the chain's length (no column)
export const KEY_TTL = 18; //        how long the key stays taken after the job finished (submit's keyTtlMillis); 0: not at all
export const FINISHED_AT = 19; //    while SUCCEEDED, DEAD or CANCELLED: when it finished (a keyed job's key is free from FINISHED_AT + KEY_TTL); NaN: unknown
export const LEASE_LENGTH = 20; //   the job's own lease length (submit's timeoutMillis), in place of the poll's leaseMillis; 0: the poll's
export const HEADERS_REF = 21; //    arena chain of the job's headers as JSON text (its byte length first, as a result's); 0: none
export const HEADERS_BYTES = 22; //  the headers' UTF-8 bytes: in a draft only, read from the chain's length (no column)
export const SUBMITTED_AT = 23; //   when the job was accepted (the queue's clock); NaN: unknown (restored from a journal that did not keep it)
export const STARTED_AT = 24; //     once leased (TOKEN > 0): when its latest lease began (the reading its LEASE_UNTIL counts from); NaN: unknown
export const PROGRESS = 25; //       the latest progress reported (a finite number); it counts only while PROGRESS_TOKEN is TOKEN
/**
 * The token of the lease that reported PROGRESS; 0: none. A claim takes a new
 * token (never repeated, I8), so a new attempt starts with no progress
 * without the claim touching either progress column.
 */
export const PROGRESS_TOKEN = 26;
export const GROUP = 27; //         the job's group (submit's `group`): its entry in `groupNames` + 1; 0: none
/**
 * A flow's child (submitFlow): its parent's job number, negative when the parent's
 * `onChildFailure` is 'ignore'; 0: no parent. Set at submit, never changed (see moves/flows.ts).
 */
export const PARENT = 28;
/** A flow's parent: its children not yet ended (counted as moves/flows.ts says); while > 0 the parent waits (I28). 0: none. */
export const WAITING = 29;
/**
 * While DEAD, a flow's child under 'fail': 1 once a parent retried from the dead letters counted it in as not
 * ended (it waits for the child to be retried and succeed); 0 while its death is its parent's to count, so a
 * rebuild that finds its parent waiting makes it DEAD (a lost dead-lettering, I28). Shares WAITING's field: a
 * DEAD job waits for no child, and a retryDead writes the field anew.
 */
export const AWAITED = WAITING;
export const RECORD_FIELDS = 30;

/**
 * Each field's column, and why its width holds every value it takes
 * (ERROR_BYTES, RESULT_BYTES and HEADERS_BYTES have none: see their lines).
 * Columns lie one after the other in `records`, widest first, so that each
 * starts aligned to its element size.
 *
 *   JOB_NUM      f64  job numbers count up forever (ids up to 2^53)
 *   PRIORITY     f64  any integer a user gives
 *   RUN_AT       f64  a time: any finite number of milliseconds, fractions kept
 *   TOKEN        f64  tokens count up forever over the queue's life (and the journal's)
 *   LEASE_UNTIL  f64  a time; or FINISH_SEQ, which counts up forever
 *   MOVES        f64  counts up forever; written only with a journal, so an
 *                     in-memory queue never touches its pages (they cost no memory)
 *   DATA_REF     i32  a chunk number: the arena is < 2^31 bytes
 *   PAYLOAD_BYTES i32 at most maxPayloadBytes (<= 2^28), or that | PAYLOAD_BINARY (bit 30) for a binary payload
 *   ERROR_REF    i32  a chunk number, or a canned error (<= 0)
 *   ERROR_BYTES  none: kept at the head of the error's chain, as most jobs have no error
 *   RESULT_REF   i32  a chunk number, or 0; written only when it changes, so a queue whose
 *                     completes never carry a result never touches its pages
 *   RESULT_BYTES none: kept at the head of the result's chain, as ERROR_BYTES is
 *   HEADERS_REF  i32  a chunk number, or 0; written only when it changes, so a queue whose
 *                     jobs never carry headers never touches its pages
 *   HEADERS_BYTES none: kept at the head of the headers' chain, as RESULT_BYTES is
 *   ATTEMPTS     u32  at most maxAttempts, and never more than MAX_ATTEMPTS
 *   ATTEMPT_LIMIT u32 a job's own maxAttempts, 1 to MAX_ATTEMPTS (0: none); written only when
 *                     it changes, so a queue whose jobs never set one never touches its pages
 *   KEY_REF      i32  a chunk number, or 0. The key's columns (KEY_REF, KEY_TTL) are read past
 *                     KEY_REF and written only for a keyed job (and the next job of its slot,
 *                     which writes the zeros): a queue without keys never touches KEY_TTL's
 *                     pages, nor writes KEY_REF's
 *   KEY_BYTES    none: kept at the head of the key's chain, as most jobs have no key
 *   KEY_TTL      f64  a duration of any finite length
 *   FINISHED_AT  f64  a time (or NaN); written by the finishing moves only, so a pending job never
 *                     touches its pages
 *   SUBMITTED_AT f64  a time (or NaN): any finite number of milliseconds, fractions kept; the one
 *                     column a pending job adds to the record (8 bytes)
 *   STARTED_AT   f64  a time (or NaN); written by a claim only, so a pending job never touches its pages
 *   PROGRESS     f64  any finite number a lease holder reports; written by the progress move only (and a
 *                     restore), so a queue whose jobs never report progress never touches its pages
 *   PROGRESS_TOKEN f64 a token (as TOKEN), or 0; written with PROGRESS only
 *   LEASE_LENGTH u32  a job's own timeoutMillis, 1 to MAX_LEASE_LENGTH (0: none); written only when it changes
 *   TYPE         i16  an entry of `typeNames` + 1 (<= TYPE_NAMES), or -(type bytes) (>= -MAX_TYPE_BYTES, 1024)
 *   GROUP        u16  an entry of `groupNames` + 1 (<= GROUP_NAMES), or 0; written only when it changes, so a queue
 *                     without groups never touches its pages
 *   WORKER       u16  an entry of `workerNames` + 1 (<= WORKER_NAMES)
 *   PARENT       f64  ± a job number (ids up to 2^53), or 0; written only when it changes, so a queue
 *                     without flows never touches its pages
 *   WAITING      u32  a parent's children not yet ended: at most the slots (< 2^32); or, while DEAD, AWAITED
 *                     (0 or 1); written only when it changes
 */
export const RECORD_COLUMNS = [
  [JOB_NUM, Float64Array, 'jobNums'], [PRIORITY, Float64Array, 'priorities'], [RUN_AT, Float64Array, 'runAts'], [TOKEN, Float64Array, 'tokens'],
  [LEASE_UNTIL, Float64Array, 'leaseUntils'], [MOVES, Float64Array, 'moves'], [KEY_TTL, Float64Array, 'keyTtls'], [FINISHED_AT, Float64Array, 'finishedAts'],
  [SUBMITTED_AT, Float64Array, 'submittedAts'], [STARTED_AT, Float64Array, 'startedAts'], [PROGRESS, Float64Array, 'progresses'],
  [PROGRESS_TOKEN, Float64Array, 'progressTokens'],
  [DATA_REF, Int32Array, 'dataRefs'], [PAYLOAD_BYTES, Int32Array, 'payloadBytes'], [ERROR_REF, Int32Array, 'errorRefs'], [RESULT_REF, Int32Array, 'resultRefs'],
  [KEY_REF, Int32Array, 'keyRefs'], [HEADERS_REF, Int32Array, 'headersRefs'],
  [ATTEMPTS, Uint32Array, 'attempts'], [ATTEMPT_LIMIT, Uint32Array, 'attemptLimits'], [LEASE_LENGTH, Uint32Array, 'leaseLengths'], [TYPE, Int16Array, 'types'],
  [PARENT, Float64Array, 'parents'], [WAITING, Uint32Array, 'waitings'],
  [WORKER, Uint16Array, 'workers'], [GROUP, Uint16Array, 'groups'],
] as const satisfies readonly (readonly [field: number, array: ColumnArray, name: string])[];
/** A column's buffer: one per column, so that each grows at its end with the slots (see Growth). */
export type RecordColumnName = (typeof RECORD_COLUMNS)[number][2];

/** One field's column: a typed array with an element per slot. */
export type RecordColumn = Float64Array | Int32Array | Uint32Array | Int16Array | Uint16Array;
/** A column's typed-array class. */
export interface ColumnArray {
  new (buffer: SharedArrayBuffer, byteOffset: number, length: number): RecordColumn;
  readonly BYTES_PER_ELEMENT: number;
}

/**
 * The bit of PAYLOAD_BYTES that marks a binary payload (a Uint8Array: its
 * chain holds the bytes as given, read back as a Uint8Array); clear for text
 * (UTF-8, read back as a string). Above any length (maxPayloadBytes <= 2^28)
 * and below the sign, so a text payload's field is its length as before and
 * strings pay nothing. Whoever reads a length from the field takes
 * payloadLength of it.
 */
export const PAYLOAD_BINARY = 1 << 30;
/** A PAYLOAD_BYTES field's byte length, without the binary mark. */
export function payloadLength(field: number): number {
  return field & (PAYLOAD_BINARY - 1);
}
/** Whether a PAYLOAD_BYTES field marks a binary payload. */
export function isBinaryPayload(field: number): boolean {
  return (field & PAYLOAD_BINARY) !== 0;
}

/** A field's bit in a move's mask (INTENT_MASK): the fields a move sets, which the slot takes from its intent. */
export function fieldBit(field: number): number {
  return 1 << field;
}
/** Every field: a move that writes the whole record. */
export const ALL_FIELDS = (1 << RECORD_FIELDS) - 1;

/** The most attempts a job's record holds: a job is dead-lettered after this many even if the policy allows more. */
export const MAX_ATTEMPTS = 2 ** 32 - 1;

/** The longest lease of a job's own (submit's timeoutMillis, in LEASE_LENGTH's u32): about 49 days. */
export const MAX_LEASE_LENGTH = 2 ** 32 - 1;

/** The most UTF-8 bytes of an idempotent key. */
export const MAX_KEY_BYTES = 256;

/** Whether a job that failed its `attempts`-th attempt is retried when it may have `maxAttempts` (and the ATTEMPTS column's bound). */
export function mayRetry(attempts: number, maxAttempts: number): boolean {
  return attempts < Math.min(maxAttempts, MAX_ATTEMPTS);
}

/** The attempts a job gets: its own limit (ATTEMPT_LIMIT; 0 for none), else the policy's. */
export function attemptLimit(ownLimit: number, policyMaxAttempts: number): number {
  return ownLimit > 0 ? ownLimit : policyMaxAttempts;
}

/** Bytes of one slot's record, over all columns. */
export const RECORD_BYTES = RECORD_COLUMNS.reduce((sum, [, array]) => sum + array.BYTES_PER_ELEMENT, 0);

/** ERROR_REF values of zero and below name a canned message that needs no arena chunk. */
export const ERROR_NONE = 0;
export const ERROR_LEASE_EXPIRED = -1;
export const ERROR_FAILED = -2;
export const ERROR_DROPPED = -3;
export const ERROR_EMPTY = -4;

// ── header fields (float64), the maintenance holder's ────────────────────
export const JOB_SEQ = 0; //         last job number issued; never rebuilt, only counted up
export const TOKEN_SEQ = 1; //       last token handed to a row's block; never rebuilt, only counted up
export const LAST_NOW = 2; //        latest time a maintenance pass ran at, to notice a clock that went back; float64 bits read and written whole (I15)
export const NEXT_DUE = 3; //        earliest time maintenance is due: a lease to expire or a delayed job to promote; as LAST_NOW (I15)
/** NEXT_DUE while the holder recomputes it (see Filing#publishDue): no time is before it, so every call takes the lock. */
export const DUE_PUBLISHING = -Infinity;
export const FINISH_BASE = 4; //     see FINISH_TICKET
export const SLOT_HIGH_WATER = 5; // slots ever used; all above it are FREE and untouched
export const FREE_SLOT_COUNT = 6;
export const ARENA_BUMP = 7; //      first chunk never used (0 stands for FIRST_CHUNK)
export const REBUILDS = 8; //        how often the hints were rebuilt from the slots
export const HEAP_SIZE_OVERFLOW = 9;
export const HEAP_SIZE_DELAYED = 10;
export const HEAP_SIZE_LEASES = 11;
export const HEAP_SIZE_FINISHED = 12; // entries of the finished order (see finish-order.ts)
export const ARENA_FREE_HEAD = 13; // first chunk of the free list; 0: empty
export const ARENA_FREE_COUNT = 14;
export const WORKER_NAME_COUNT = 15; // entries of `workerNames` in use; only counts up
export const TOKEN_RESERVED = 16; // with a journal: tokens up to here are reserved there
export const ROW_HIGH_WATER = 17; // rows ever owned; rings and counters of all of them count
export const TYPE_NAME_COUNT = 18; // entries of `typeNames` in use; only counts up
export const RATE_LIMIT_COUNT = 19; // job types with a rate limit (see rateLimits)
export const HEAP_SIZE_HELD = 20;
export const FINISHED_ORDERED = 21; // 1 once the finished order holds every finished job (the eviction order); 0: none yet (see Filing#orderFinished)
export const FINISHED_HEAD = 22; //  where the finished order's first entry is in its ring (see finish-order.ts)
export const GROUP_NAME_COUNT = 23; // entries of `groupNames` in use; only counts up
export const TURNS_TAKEN = 24; //   1 once groups take turns (see group-turns.ts); then for the queue's life
export const WAITING_PARENTS = 25; // flows' parents waiting for their children (DELAYED with WAITING > 0); the holder's, rebuilt
export const ARENA_RUN_HEAD = 26; // first chunk of the first free run (see RUN_MARK); 0: none
export const ARENA_RUN_CHUNKS = 27; // chunks in free runs (counted in ARENA_FREE_COUNT too)
export const ARENA_FREED = 28; //    chunks freed since the free lists were last coalesced (Arena#coalesce): 0, coalescing again finds nothing new
export const HEADER_FIELDS = 29;

// ── ready levels ─────────────────────────────────────────────────────────
/** Distinct priorities with a ring of their own; jobs of any other priority go to the overflow heap. */
export const LEVELS = 16;
/** levelWords: per level, the ring's HEAD (consumers CAS it forward, a hint) and TAIL (the holder's), a line apart. */
export const LEVEL_HEAD = 0;
export const LEVEL_TAIL = LINE;
export const LEVEL_WORDS = 2 * LINE;
/**
 * levelKeys: per level, its priority and the key of the last entry appended (rings stay in (key, jobNum)
 * order; the key is the job's runAt, or while groups take turns its turn, see ReadyIndex#file).
 */
export const LEVEL_PRIORITY = 0;
export const LEVEL_TAIL_KEY = 1;
export const LEVEL_TAIL_JOB_NUM = 2;
export const LEVEL_KEYS = 3;
/**
 * levelRings, per level: its ring's entries, SLOT and WORD (Int32), read by every poller; then, at the same
 * positions, each entry's KEY (float64, the lock holder's): its turn, written and read only while groups
 * take turns (I27), so that a queue without groups never touches those pages.
 */
export const RING_SLOT = 0;
export const RING_WORD = 1;
export const RING_FIELDS = 2;
/** Bytes of one ring entry: its fields, and its key in its level's keys. */
export const RING_ENTRY_BYTES = RING_FIELDS * Int32Array.BYTES_PER_ELEMENT + Float64Array.BYTES_PER_ELEMENT;

// ── rows ─────────────────────────────────────────────────────────────────
/** Rows a queue has; row 0 is the maintenance lock holder's. An instance that finds none free calls under the lock. */
export const ROWS = 128;
export const MAINTENANCE_ROW = 0;
/** rowWords, per row (a line each). */
export const ROW_STATE = 0; //      0: free; ROW_OWNED; ROW_REVOKED (presumed dead: not used again until its thread is known to have exited)
export const ROW_CALL = 1; //       odd while the owner is inside a lock-free call
export const ROW_INTENT_SEQ = 2; // the owner's latest intent
export const ROW_LEASE_TAIL = 3; // lease ring entries appended (owner's)
export const ROW_LEASE_DRAINED = 4; // … taken into the lease heap (holder's)
export const ROW_FINISH_TAIL = 5;
export const ROW_FINISH_DRAINED = 6;
export const ROW_THREAD = 7; //     the owner's Node.js threadId, written as it takes the row: a row of a thread that exited is free again (RowTable#reclaim)
export const ROW_WORDS = LINE;
export const ROW_OWNED = 1;
export const ROW_REVOKED = 2;
/** rowData, per row (float64). */
export const INTENT_SLOT = 0;
export const INTENT_FROM = 1;
export const INTENT_TO = 2;
export const INTENT_MASK = 3; //    the fields the move sets (fieldBit of each): those the slot takes from INTENT_RECORD
export const INTENT_RECORD = 4; //  RECORD_FIELDS wide: the new record's fields (those outside the mask mean nothing)
export const ROW_COUNTS = INTENT_RECORD + RECORD_FIELDS; // STATUS_COUNT wide: jobs moved into (+) and out of (−) each status by this row
export const ROW_FINISHED_CHUNKS = ROW_COUNTS + STATUS_COUNT; // arena chunks of jobs this row finished, minus those evicted
/** float64s per cache line (64 bytes). */
const F64_LINE = 8;
/** A row's data, padded to whole lines: derived from its last field, so that a record with more fields never runs into the next row. */
export const ROW_DATA = Math.ceil((ROW_FINISHED_CHUNKS + 1) / F64_LINE) * F64_LINE;
/** rowRings: per row a lease ring then a finished ring, entries (KEY, SLOT, WORD). */
export const ROW_RING_ENTRIES = 1024;
export const RING_KEY = 0;
export const RING_ENTRY_SLOT = 1;
export const RING_ENTRY_WORD = 2;
export const RING_ENTRY_FIELDS = 3;
export const LEASE_RING = 0;
export const FINISH_RING = ROW_RING_ENTRIES * RING_ENTRY_FIELDS;
export const ROW_RINGS = 2 * ROW_RING_ENTRIES * RING_ENTRY_FIELDS;

// ── heap entries (float64): ordered by (K1, K2, K3) ascending ────────────
export const ENTRY_K1 = 0;
export const ENTRY_K2 = 1;
export const ENTRY_K3 = 2;
export const ENTRY_SLOT = 3;
export const ENTRY_WORD = 4; //      the lease word the entry was made for
export const ENTRY_FIELDS = 5;

// ── schedule table ───────────────────────────────────────────────────────
/**
 * The queue's schedules (see ScheduleTable): [CURRENT | LENGTH of copy 0 |
 * LENGTH of copy 1 | pad | copy 0: JSON | copy 1: JSON]. Untouched pages cost no memory.
 */
export const SCHEDULE_TABLE_BYTES = 256 * 1024;
export const SCHEDULE_HEADER_BYTES = 16;
export const SCHEDULE_CURRENT = 0;
export const SCHEDULE_LENGTH = 1;
export const SCHEDULE_COPY_BYTES = (SCHEDULE_TABLE_BYTES - SCHEDULE_HEADER_BYTES) / 2;

// ── name tables: worker names, job types ─────────────────────────────────
/**
 * Strings stored once each, so that a record names one with a small number:
 * [byte length: Int32 | UTF-8]. `workerNames` holds the worker ids seen by
 * poll, `typeNames` the job types seen by submit (interned: a lease reads its
 * type's string from the thread's own copy, decoded once). Append-only; an
 * entry counts once the table's count (WORKER_NAME_COUNT, TYPE_NAME_COUNT)
 * covers it, so a thread killed mid-append leaves only an unused entry.
 * Worker ids beyond the table's room (or longer than an entry) are not shown
 * in views; such types are kept in the arena, ahead of their job's payload.
 */
export const WORKER_NAMES = 4096;
export const TYPE_NAMES = 4096;
/** Distinct groups a queue can name over its life (a GROUP column is a u16). */
export const GROUP_NAMES = 4096;
export const NAME_BYTES = 124;
export const NAME_ENTRY_BYTES = 4 + NAME_BYTES;

// ── rate limits (float64), one entry per `typeNames` entry ───────────────
/**
 * A job type's rate limit, written only by the lock holder: at most
 * LIMIT_MAX leases start in each window of LIMIT_WINDOW ms, the windows
 * aligned to the queue's clock (the one of `now` starts at
 * floor(now / window) * window). WINDOW_START and USED count the current
 * window. LIMIT_MAX 0: no limit. Only types with an entry in `typeNames`
 * can have one.
 */
export const LIMIT_MAX = 0;
export const LIMIT_WINDOW = 1;
export const LIMIT_WINDOW_START = 2;
export const LIMIT_USED = 3;
export const RATE_LIMIT_FIELDS = 4;

// ── retry policies (float64), one entry per `typeNames` entry ────────────
/**
 * A job type's own RetryPolicy, written and read only by the lock holder
 * (submits, fails and expiries all run under the lock): POLICY_MAX_ATTEMPTS
 * 0 means the type has none, and its jobs follow the queue's policy.
 * POLICY_JITTER is the index of the policy's jitter in JITTERS (policy.ts).
 * Only types with an entry in `typeNames` can have one.
 */
export const POLICY_MAX_ATTEMPTS = 0;
export const POLICY_BASE_BACKOFF = 1;
export const POLICY_MAX_BACKOFF = 2;
export const POLICY_JITTER = 3;
export const RETRY_POLICY_FIELDS = 4;
/**
 * concurrency (Int32, see tables/concurrency.ts): word CAPS counts the caps
 * set (0: none, and no mover counts), CAP_HIGH is one past the highest type
 * entry that ever had a cap, GROUP_CAP_HIGH the same for group entries; then
 * one entry per cap holder — entry 0 the whole queue, entry n the type
 * numbered n in `typeNames`, entry GROUP_CAP_BASE + g the group numbered g in
 * `groupNames` — of CAP (0: no cap), RUNNING (its jobs RUNNING or leaving
 * RUNNING, counted while CAPS > 0) and HELD (ready jobs a poll passed over
 * for this cap, in the held heap).
 */
export const CAPS = 0;
export const CAP_HIGH = 1;
export const GROUP_CAP_HIGH = 2;
export const CAP_ENTRY_BASE = 3;
/** The cap entry of group number g is GROUP_CAP_BASE + g (g >= 1): past every type's. */
export const GROUP_CAP_BASE = TYPE_NAMES + 1;
export const CAP_ENTRIES = GROUP_CAP_BASE + GROUP_NAMES + 1;
export const CAP_MAX = 0;
export const CAP_RUNNING = 1;
export const CAP_HELD = 2;
export const CAP_FIELDS = 3;

// ── turns (float64), see tables/group-turns.ts ───────────────────────────
/**
 * The fair turns of groups, written and read only by the lock holder: per
 * turn level (the ready level of a priority, or LEVELS for a priority with
 * none), TURN is the turn last served; per group (the ungrouped jobs as
 * group 0) and turn level, LAST is the turn its last ready job was given.
 * A job filed ready takes turn max(TURN, LAST) + 1 of its group and level.
 */
export const TURN_LEVELS = LEVELS + 1;
/** Where group g's LAST turns begin (g = 0: the ungrouped jobs). */
export function turnsOfGroup(group: number): number {
  return (group + 1) * TURN_LEVELS;
}

// ── key map entries (Int32) ──────────────────────────────────────────────
/** The slot of the job holding the key, + 1 (0: an empty entry). */
export const KEY_ENTRY_SLOT = 0;
/** The key's hash: where its probe starts, kept so that a removal's shift needs no key read. */
export const KEY_ENTRY_HASH = 1;
export const KEY_ENTRY_FIELDS = 2;

// ── commit ring entries (float64): jobNum * COMMIT_KINDS + kind ─────────
/** The job is new: its row, with type and payload, must be inserted. */
export const COMMIT_SUBMITTED = 1;
/** The job moved: its row's state must be updated. */
export const COMMIT_MOVED = 2;
/** The job was evicted: its row must be deleted. */
export const COMMIT_EVICTED = 3;
export const COMMIT_KINDS = 4;

// ── listing index (float64), see listing.ts ──────────────────────────────
/**
 * One binary search tree per public status (a *class*: READY and DELAYED are
 * one, PENDING), keyed by job number, over nodes that are the slots
 * themselves: the treap `jobs()` pages through. Built by the first `jobs()`,
 * so a queue that never lists never touches these pages.
 */
export const LISTING_BUILT = 0; //  1 once built (the lock holder's)
export const LISTING_ROOTS = 1; //  + class: the root node of the class's tree (slot + 1; 0: empty)
export const LISTING_CLASSES = 5;
export const LISTING_HEADER = 8;
export const NODE_LEFT = 0; //      slot + 1 of the left child; 0: none
export const NODE_RIGHT = 1;
export const NODE_CLASS = 2; //     the class of the tree the node is in, + 1; 0: in none
export const NODE_KEY = 3; //       the job number the node was filed under
export const NODE_FIELDS = 4;

// ── arena chunks ─────────────────────────────────────────────────────────
/**
 * A chunk: [next chunk: Int32 | CHUNK_DATA_BYTES of UTF-8]. Types live in
 * `typeNames`, so a chunk holds payload bytes only: a 64-byte payload takes
 * one, with no byte to spare.
 */
export const CHUNK_BYTES = 68;
export const CHUNK_NEXT_BYTES = 4;
export const CHUNK_DATA_BYTES = CHUNK_BYTES - CHUNK_NEXT_BYTES;
/** An error's chain (and a result's) starts with its text's byte length (Int32), then the text. */
export const ERROR_LENGTH_BYTES = 4;
/**
 * The bit of a counted chain's length that marks its content binary (a
 * result a handler returned as a Uint8Array: the bytes as given, read back as
 * a Uint8Array); clear for text. Above any length (a result is at most 2^28
 * bytes), below the sign; `Arena#countedBytes` gives the length without it.
 */
export const COUNTED_BINARY = 1 << 30;
/** Chunk 0 is never used, so a ref of 0 means "no bytes". */
export const FIRST_CHUNK = 1;
/**
 * The NEXT word of a run's first chunk. A run is a string of at least
 * RUN_MIN_CHUNKS chunks stored contiguously: n consecutive chunks whose
 * bytes, from the first chunk's data on, are one span of n × CHUNK_BYTES −
 * CHUNK_NEXT_BYTES bytes (no links inside: the chunks after the first hold
 * data in their NEXT words too). It takes exactly `Arena.chunksFor` of its
 * byte count, as a chain would, so room is counted alike. A chain's NEXT is
 * never negative, so the mark tells a run from a chain; its length comes from
 * its byte count, as a chain's walk does.
 *
 * A free run (on the list at ARENA_RUN_HEAD) is [NEXT: the next free run's
 * first chunk | its length in chunks (Int32) | ...].
 */
export const RUN_MARK = -1;
/** Strings of at least this many chunks (4 KiB) are stored as runs when a free run fits; shorter ones as chains. */
export const RUN_MIN_CHUNKS = 64;

// ── reservations (Int32): arena runs handed to a producer to fill in place ──
/**
 * A run `reserveBytes` took for a producer to write its payload into before
 * its submit adopts it (see tables/reservations.ts, I30): its chunks belong
 * to no slot meanwhile, so the rebuild, which frees every chunk no slot
 * references, keeps those an entry names. [SEQ: the last stamp given |
 * LIVE: entries in use | entry: STAMP (0: free; unique per reservation,
 * never reused) HEAD (the run's first chunk) BYTES (the payload's length)
 * ROW (the reserving instance's row; MAINTENANCE_ROW: it had none) THREAD
 * (its threadId)]. Written by the lock holder; STAMP cleared by CAS (a holder
 * taken for dead clears only the entry it adopted, never one reused since).
 */
export const RESERVATIONS = 256;
export const RESERVATION_SEQ = 0;
export const RESERVATION_LIVE = 1;
export const RESERVATION_HEADER = 2;
export const RESERVATION_STAMP = 0;
export const RESERVATION_HEAD = 1;
export const RESERVATION_BYTES = 2;
export const RESERVATION_ROW = 3;
export const RESERVATION_THREAD = 4;
export const RESERVATION_FIELDS = 5;

/** Entries a heap can hold: stale entries stay until popped or compacted. */
export function heapEntries(capacity: number): number {
  return 2 * capacity + 16;
}
/** Job map entries (and key map's): a power of two of at least 1.5 × capacity (at most about two thirds full, so probes stay short). */
export function mapEntries(capacity: number): number {
  return 2 ** Math.ceil(Math.log2(1.5 * capacity + 2));
}
/** Entries of one level's ring: a power of two of at least `capacity` (a slot has at most one valid entry). */
export function ringEntries(capacity: number): number {
  return 2 ** Math.ceil(Math.log2(capacity + 1));
}

/**
 * Commit ring size: a power of two (tickets wrap at 2^32 and stay in step with
 * ring positions), with room for a whole `submitMany` of `capacity` jobs.
 */
export function commitRingEntries(capacity: number): number {
  return 2 ** Math.ceil(Math.log2(2 * capacity + 2));
}

/**
 * ── Event ring ──
 *
 * The moves of jobs as events (`queue.events()`, src/events/), for subscribers on any thread: a ring
 * of EVENT_ENTRIES entries after a header, every word of it read and written through Atomics (a racing
 * plain read could tear a float, and on a weakly ordered CPU be reordered past the stamps that check it).
 * The buffer holds only the header until a first subscriber grows it to its full length; no move writes
 * an entry while SUBSCRIBERS is 0, so a queue no one watches pays one Atomics load per move.
 *
 *   header  SUBSCRIBERS  subscriptions open now, on any thread (a thread that dies subscribed leaves its count)
 *           CLAIM        the sequence number the next event takes (uint32, wrapping): a writer's Atomics.add claims it
 *           PUBLISHED    counts published entries: readers wait on it (Atomics.waitAsync), writers notify after publishing
 *   entry   OPEN, DONE   seq + 1 (int32) of the event the entry holds: the writer stores OPEN, then the fields,
 *                        then DONE; a reader keeps what it read only if DONE before and OPEN after its reads both
 *                        name the event it expects (a seqlock: a later event that laps the ring while it reads
 *                        changes OPEN first)
 *           KIND         MOVE_KINDS index (src/events/queue-events.ts); FLAGS: EVENT_STALLED
 *           TYPE_BYTES, ERROR_BYTES: the UTF-8 bytes of the type, then of the error (-1: none), in TEXT
 *           JOB_NUM, WAIT, DURATION: float64s as two int32 halves each (low, high); ATTEMPT: an int32
 *           TEXT         EVENT_TEXT_BYTES of UTF-8: the type, then the error, cut at a character to fit
 */
export const EVENT_SUBSCRIBERS = 0;
export const EVENT_CLAIM = 1;
export const EVENT_PUBLISHED = 2;
export const EVENT_HEADER_WORDS = 4;
export const EVENT_OPEN = 0;
export const EVENT_DONE = 1;
export const EVENT_KIND = 2;
export const EVENT_FLAGS = 3;
export const EVENT_TYPE_BYTES = 4;
export const EVENT_ERROR_BYTES = 5;
export const EVENT_ATTEMPT = 6;
export const EVENT_JOB_NUM = 7; //  2 words
export const EVENT_WAIT = 9; //     2 words
export const EVENT_DURATION = 11; // 2 words
export const EVENT_TEXT = 13;
export const EVENT_TEXT_BYTES = 256;
export const EVENT_ENTRY_WORDS = EVENT_TEXT + EVENT_TEXT_BYTES / Int32Array.BYTES_PER_ELEMENT;
/** Entries of the ring: a power of two, so that a sequence number's entry is its low bits. */
export const EVENT_ENTRIES = 1024;
/** FLAGS: the attempt failed because its lease ran out. */
export const EVENT_STALLED = 1;

/** Byte lengths of the record columns' buffers, for `slots` slots. */
export function columnBytes(slots: number): Record<RecordColumnName, number> {
  return Object.fromEntries(RECORD_COLUMNS.map(([, array, name]) => [name, slots * array.BYTES_PER_ELEMENT])) as Record<RecordColumnName, number>;
}

/** Byte lengths of every buffer of a queue with `capacity` slots. */
export function bufferBytes(capacity: number, arenaBytes: number) {
  const f64 = Float64Array.BYTES_PER_ELEMENT;
  const i32 = Int32Array.BYTES_PER_ELEMENT;
  const heap = heapEntries(capacity) * ENTRY_FIELDS * f64;
  return {
    lockWords: LOCK_WORD_COUNT * i32,
    header: HEADER_FIELDS * f64,
    slotWords: capacity * i32,
    ...columnBytes(capacity),
    levelWords: LEVELS * LEVEL_WORDS * i32,
    levelKeys: LEVELS * LEVEL_KEYS * f64,
    levelRings: LEVELS * ringEntries(capacity) * RING_ENTRY_BYTES,
    overflow: heap,
    delayed: heap,
    leases: heap,
    finished: heap,
    /** Ready jobs a poll passed over because their type's window was used up, until it opens (see rate-limits.ts). */
    held: heap,
    jobMap: mapEntries(capacity) * i32,
    keyMap: mapEntries(capacity) * KEY_ENTRY_FIELDS * i32,
    freeSlots: capacity * i32,
    rowWords: ROWS * ROW_WORDS * i32,
    rowData: ROWS * ROW_DATA * f64,
    rowRings: ROWS * ROW_RINGS * f64,
    arena: arenaBytes,
    workerNames: WORKER_NAMES * NAME_ENTRY_BYTES,
    typeNames: TYPE_NAMES * NAME_ENTRY_BYTES,
    groupNames: GROUP_NAMES * NAME_ENTRY_BYTES,
    rateLimits: TYPE_NAMES * RATE_LIMIT_FIELDS * f64,
    retryPolicies: TYPE_NAMES * RETRY_POLICY_FIELDS * f64,
    /** Concurrency caps and RUNNING counts, the queue's and each type's (see concurrency.ts). */
    concurrency: (CAP_ENTRY_BASE + CAP_ENTRIES * CAP_FIELDS) * i32,
    /** The groups' turns (see group-turns.ts): untouched by a queue without groups. */
    turns: turnsOfGroup(GROUP_NAMES + 1) * f64,
    commitRing: commitRingEntries(capacity) * f64,
    listing: (LISTING_HEADER + capacity * NODE_FIELDS) * f64,
    /** Per slot, with a journal: the commit mark of a move its caller waits for (see Frozen jobs); 0: none. */
    awaited: capacity * i32,
    /** The queue's schedules (see ScheduleTable). */
    schedules: SCHEDULE_TABLE_BYTES,
    /** Events of moves, while someone subscribes (see Event ring). */
    eventRing: (EVENT_HEADER_WORDS + EVENT_ENTRIES * EVENT_ENTRY_WORDS) * i32,
    /** Runs reserved for producers to fill in place (see RESERVATIONS). */
    reservations: (RESERVATION_HEADER + RESERVATIONS * RESERVATION_FIELDS) * i32,
  };
}
export type BufferName = keyof ReturnType<typeof bufferBytes>;
export type QueueBuffers = Record<BufferName, SharedArrayBuffer>;

/** Slots the slot table starts with room for (it doubles from there as slots are first used). */
export const INITIAL_SLOTS = 1024;
/** Listing nodes a built listing has room for at least (it doubles from there with the slots it files). */
export const INITIAL_LISTING_NODES = 1024;
/** Heap entries a heap buffer starts with room for (it doubles from there as entries are pushed). */
export const INITIAL_HEAP_ENTRIES = 1024;
/** Arena bytes committed at first (it doubles from there as chunks are taken). */
export const INITIAL_ARENA_BYTES = 256 * 1024;

/**
 * Byte lengths the buffers start with (see Growth above): a growing buffer
 * starts small and grows up to its `bufferBytes` length; every other starts
 * at that length. `journaled`: the commit ring and the commit marks are used
 * only with a journal, and are all or nothing.
 */
export function initialBytes(capacity: number, arenaBytes: number, journaled: boolean): Record<BufferName, number> {
  const sizes = bufferBytes(capacity, arenaBytes);
  const heap = Math.min(sizes.overflow, INITIAL_HEAP_ENTRIES * ENTRY_FIELDS * Float64Array.BYTES_PER_ELEMENT);
  const slots = Math.min(capacity, INITIAL_SLOTS);
  return {
    ...sizes,
    // Grown with the slots ever used (see SlotTable#grow).
    slotWords: slots * Int32Array.BYTES_PER_ELEMENT,
    ...columnBytes(slots),
    listing: LISTING_HEADER * Float64Array.BYTES_PER_ELEMENT,
    // Rehashed into a larger table as the slots grow (see KeyMap#roomFor).
    keyMap: Math.min(sizes.keyMap, mapEntries(slots) * KEY_ENTRY_FIELDS * Int32Array.BYTES_PER_ELEMENT),
    overflow: heap,
    delayed: heap,
    leases: heap,
    finished: heap,
    held: heap,
    // Grown a level at a time, as levels are made (see ReadyIndex#addLevel).
    levelRings: 0,
    // Row 0's rings, the lock holder's; the others' as rows are first owned (see RowTable#acquire).
    rowRings: ROW_RINGS * Float64Array.BYTES_PER_ELEMENT,
    arena: Math.min(arenaBytes, INITIAL_ARENA_BYTES),
    commitRing: journaled ? sizes.commitRing : 0,
    awaited: journaled ? sizes.awaited : 0,
    // Its entries once a first subscriber grows it (see Event ring).
    eventRing: EVENT_HEADER_WORDS * Int32Array.BYTES_PER_ELEMENT,
  };
}

/** New, all-zero buffers, each at its initial length (`initialBytes`), growable up to its full one where they differ. */
export function allocateBuffers(capacity: number, arenaBytes: number, journaled: boolean): QueueBuffers {
  const sizes = bufferBytes(capacity, arenaBytes);
  const initial = initialBytes(capacity, arenaBytes, journaled);
  const out = {} as QueueBuffers;
  for (const name of Object.keys(sizes) as BufferName[]) {
    out[name] = initial[name] < sizes[name] ? new SharedArrayBuffer(initial[name], { maxByteLength: sizes[name] }) : new SharedArrayBuffer(sizes[name]);
  }
  return out;
}

export const BUFFER_NAMES = Object.keys(bufferBytes(1, 0)) as readonly BufferName[];
