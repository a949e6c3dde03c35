/**
 * The shared memory of one queue, declared once. Every other module reads
 * offsets from here; nothing computes one by hand.
 *
 * A queue is a handful of SharedArrayBuffers, each sized from `capacity`:
 *
 *   lockWords  Int32  [ LOCK | LOCK_WAITERS | WORK_SIGNAL | IDLE_WAITERS | HINTS_DIRTY |
 *                       COMMIT_LOCK | COMMIT_WAITERS | COMMIT_HEAD | COMMIT_DURABLE | COMMIT_SLEEPERS ]
 *   header     f64    [ sequences | counters | slot pool | arena | heap sizes | undo ]
 *   slotWords  Int32  [ lease word of slot 0 | slot 1 | ... ]       THE TRUTH
 *   records    f64    [ slot 0: JOB_NUM PRIORITY RUN_AT ... | slot 1: ... ]
 *   ready      f64    [ heap entry: K1 K2 K3 SLOT WORD | ... ]      hint
 *   delayed    f64    (same entry shape)                            hint
 *   leases     f64    (same entry shape)                            hint
 *   jobMap     f64    [ JOB_NUM SLOT | ... ]  open addressing        hint
 *   freeSlots  Int32  [ slot | ... ]  a stack                        hint
 *   finished   f64    [ SLOT WORD | ... ]  a ring, finish order     hint
 *   arena      bytes  [ chunk: NEXT | 60 bytes | chunk ... ]     type, payload, lastError
 *   workerNames bytes [ LENGTH | 124 bytes | ... ]  append-only     worker ids
 *   commitRing f64    [ jobNum * 4 + COMMIT_* | ... ]  a ring       journal writes to make
 *
 * Lease word (one Int32 per slot): `version << 3 | status`.
 *
 *   status  FREE(0) ──submit──▶ PENDING(1) ──poll──▶ RUNNING(2) ──complete──▶ SUCCEEDED(3)
 *                               ▲   │  ▲               │  │ ▲ extend (new version)
 *                     retryDead │   │  └─fail/expiry───┘  │
 *                               │ cancel  (attempts left) │ fail/expiry (no attempts left)
 *                               │   ▼                     ▼
 *                               │ CANCELLED(5)           DEAD(4)
 *                               └─────────────────────────┘
 *   SUCCEEDED / CANCELLED ──evict──▶ FREE
 *
 * Every move takes a new version, so a word never repeats within the time a
 * thread could hold a stale copy of it: a heap entry remembers the word it was
 * made for, and it is valid only while the slot still holds that word.
 *
 * Who may move a lease word: only the holder of the queue lock, with
 * `Atomics.compareExchange` from the word it read. The record fields a move
 * changes are saved to the undo area first and the CAS is the commit point, so
 * a thread killed mid-move leaves either the old job or the new one, never a
 * mix. Everything else (heaps, map, pools, counters) is derived from the slot
 * words and records and is rebuilt when a dead lock holder is found.
 *
 * With a journal, a move whose caller waits for its commit (submit, complete,
 * fail, cancel, retryDead) marks the record (AWAITED) with its commit ticket.
 * Until that ticket is durable the job is frozen: poll skips it, eviction
 * skips it, cancel and retryDead wait for the commit first (complete, fail
 * and extend need RUNNING, which a marked job never is). So if the commit
 * fails, nobody has built on the move, and its caller can undo it (see
 * UndoLog). A successful commit unfreezes the job by itself (the mark's
 * ticket is durable); a caller killed while waiting leaves its move to the
 * next commit that succeeds.
 */

// ── the lock ─────────────────────────────────────────────────────────────
/** 0: free; otherwise the holder's stamp, unique per acquisition. */
export const LOCK = 0;
/** Threads asleep in `Atomics.wait` on LOCK; the releaser notifies while > 0. */
export const LOCK_WAITERS = 1;
/** Counts up whenever work may have become ready; idle workers `Atomics.waitAsync` on it. */
export const WORK_SIGNAL = 2;
/** Workers asleep on WORK_SIGNAL; a submitter notifies only while > 0. */
export const IDLE_WAITERS = 3;
/**
 * 1 when a holder found, on release, that its lock had been taken over: it was
 * only slow, not dead, and may have written hints over the taker's repairs.
 * The next holder rebuilds the hints.
 */
export const HINTS_DIRTY = 4;

// ── group commit (used with a journal only) ──────────────────────────────
/** The commit leader's lock: the one thread writing the journal for everyone (a QueueLock word). */
export const COMMIT_LOCK = 5;
/** Threads asleep on COMMIT_LOCK. */
export const COMMIT_WAITERS = 6;
/** Tickets issued: one per journal write noted in `commitRing`, under the queue lock. Wraps; compare by difference. */
export const COMMIT_HEAD = 7;
/** Tickets committed to the journal: every ticket up to here is durable. Only counts up (by difference). */
export const COMMIT_DURABLE = 8;
/** Threads asleep on COMMIT_DURABLE, waiting for a leader's commit; a leader notifies them all while > 0. */
export const COMMIT_SLEEPERS = 9;
export const LOCK_WORD_COUNT = 10;

// ── lease word ───────────────────────────────────────────────────────────
export const STATUS_BITS = 3;
export const STATUS_MASK = (1 << STATUS_BITS) - 1;
/** Versions wrap at 2^28; a thread would have to sleep through 2^28 moves of one slot to be fooled. */
export const VERSION_MASK = 0x0fffffff;

export const FREE = 0;
export const PENDING = 1;
export const RUNNING = 2;
export const SUCCEEDED = 3;
export const DEAD = 4;
export const CANCELLED = 5;
export type SlotStatus = typeof FREE | typeof PENDING | typeof RUNNING | typeof SUCCEEDED | typeof DEAD | typeof CANCELLED;

export function statusOf(word: number): SlotStatus {
  return (word & STATUS_MASK) as SlotStatus;
}
export function nextWord(word: number, status: SlotStatus): number {
  return ((((word >>> STATUS_BITS) + 1) & VERSION_MASK) << STATUS_BITS) | status;
}

// ── record fields (float64, one record per slot) ─────────────────────────
export const JOB_NUM = 0; //        n of id "Jn"
export const PRIORITY = 1;
export const RUN_AT = 2;
export const ATTEMPTS = 3;
export const TOKEN = 4; //          token of the current lease while RUNNING
export const LEASE_UNTIL = 5;
export const DATA_REF = 6; //       arena chain: type bytes, then payload bytes
export const TYPE_BYTES = 7;
export const PAYLOAD_BYTES = 8;
export const ERROR_REF = 9; //      arena chain of lastError, or a canned error below
export const ERROR_BYTES = 10;
export const FINISH_SEQ = 11; //    order of finishing, for eviction oldest first
export const WHERE = 12; //         which pending heap holds the job (WHERE_*), keeps `delayed` exact
export const WORKER = 13; //        worker name of the latest lease: its entry in `workerNames` + 1; 0: none
export const MOVES = 14; //         moves of this job so far: orders its journal writes
export const AWAITED = 15; //       with a journal: the commit mark (see CommitRing.markOf) of a move whose caller waits for its commit; 0: none
export const RECORD_FIELDS = 16;

export const WHERE_NONE = 0;
export const WHERE_READY = 1;
export const WHERE_DELAYED = 2;

/** ERROR_REF values of zero and below name a canned message that needs no arena chunk. */
export const ERROR_NONE = 0;
export const ERROR_LEASE_EXPIRED = -1;
export const ERROR_FAILED = -2;
export const ERROR_DROPPED = -3;
export const ERROR_EMPTY = -4;

// ── header fields (float64) ──────────────────────────────────────────────
export const JOB_SEQ = 0; //         last job number issued; never rebuilt, only counted up
export const TOKEN_SEQ = 1; //       last token issued; never rebuilt, only counted up
export const FINISH_SEQ_LAST = 2;
export const LAST_NOW = 3; //        latest time seen, to notice a clock that went back
export const COUNT_PENDING = 4;
export const COUNT_DELAYED = 5;
export const COUNT_RUNNING = 6;
export const COUNT_SUCCEEDED = 7;
export const COUNT_DEAD = 8;
export const COUNT_CANCELLED = 9;
export const SLOT_HIGH_WATER = 10; // slots ever used; all above it are FREE and untouched
export const FREE_SLOT_COUNT = 11;
export const FINISHED_HEAD = 12; //  ring positions, counted up forever, taken modulo capacity
export const FINISHED_TAIL = 13;
export const ARENA_BUMP = 14; //     first chunk never used (0 stands for FIRST_CHUNK)
export const REBUILDS = 15; //       how often the hints were rebuilt from the slots
export const HEAP_SIZE_READY = 16;
export const HEAP_SIZE_DELAYED = 17;
export const HEAP_SIZE_LEASES = 18;
export const UNDO_SLOT = 19; //      slot + 1 of a move in progress; 0: none
export const UNDO_WORD = 20; //      its lease word before the move
export const UNDO_RECORD = 21; //    its record before the move (RECORD_FIELDS wide)
export const ARENA_FREE_HEAD = UNDO_RECORD + RECORD_FIELDS; // first chunk of the free list; 0: empty
export const ARENA_FREE_COUNT = ARENA_FREE_HEAD + 1;
export const FINISHED_CHUNKS = ARENA_FREE_HEAD + 2; // arena chunks held by finished jobs: room eviction can give
export const WORKER_NAME_COUNT = ARENA_FREE_HEAD + 3; // entries of `workerNames` in use; only counts up
export const TOKEN_RESERVED = ARENA_FREE_HEAD + 4; // with a journal: tokens up to here are reserved there
export const HEADER_FIELDS = ARENA_FREE_HEAD + 5;

// ── heap entries (float64): ordered by (K1, K2, K3) ascending ────────────
export const ENTRY_K1 = 0;
export const ENTRY_K2 = 1;
export const ENTRY_K3 = 2;
export const ENTRY_SLOT = 3;
export const ENTRY_WORD = 4; //      the lease word the entry was made for
export const ENTRY_FIELDS = 5;

// ── job map entries (float64) ────────────────────────────────────────────
export const MAP_KEY = 0; //         job number; 0: empty
export const MAP_SLOT = 1;
export const MAP_FIELDS = 2;

// ── finished ring entries (float64) ──────────────────────────────────────
export const RING_SLOT = 0;
export const RING_WORD = 1;
export const RING_FIELDS = 2;

// ── worker names ─────────────────────────────────────────────────────────
/**
 * Worker ids seen by poll, each stored once: [byte length: Int32 | UTF-8].
 * Append-only; an entry counts once WORKER_NAME_COUNT covers it, so a thread
 * killed mid-append leaves only an unused entry. Ids beyond the table's room
 * (or longer than an entry) are not shown in views.
 */
export const WORKER_NAMES = 4096;
export const WORKER_NAME_BYTES = 124;
export const WORKER_ENTRY_BYTES = 4 + WORKER_NAME_BYTES;

// ── commit ring entries (float64): jobNum * COMMIT_KINDS + kind ─────────
/** The job is new: its row, with type and payload, must be inserted. */
export const COMMIT_SUBMITTED = 1;
/** The job moved: its row's state must be updated. */
export const COMMIT_MOVED = 2;
/** The job was evicted: its row must be deleted. */
export const COMMIT_EVICTED = 3;
export const COMMIT_KINDS = 4;

// ── arena chunks ─────────────────────────────────────────────────────────
/** A chunk: [next chunk: Int32 | CHUNK_DATA_BYTES of UTF-8]. */
export const CHUNK_BYTES = 64;
export const CHUNK_NEXT_BYTES = 4;
export const CHUNK_DATA_BYTES = CHUNK_BYTES - CHUNK_NEXT_BYTES;
/** Chunk 0 is never used, so a ref of 0 means "no bytes". */
export const FIRST_CHUNK = 1;

/** Entries a heap can hold: stale entries stay until popped or compacted. */
export function heapEntries(capacity: number): number {
  return 2 * capacity + 16;
}
/** Job map size: a power of two at least twice the capacity, so probes stay short. */
export function mapEntries(capacity: number): number {
  return 2 ** Math.ceil(Math.log2(2 * capacity + 2));
}

/**
 * Commit ring size: a power of two (tickets wrap at 2^32 and stay in step with
 * ring positions), with room for a whole `submitMany` of `capacity` jobs.
 */
export function commitRingEntries(capacity: number): number {
  return mapEntries(capacity);
}

/** Byte lengths of every buffer of a queue with `capacity` slots. */
export function bufferBytes(capacity: number, arenaBytes: number) {
  const f64 = Float64Array.BYTES_PER_ELEMENT;
  const i32 = Int32Array.BYTES_PER_ELEMENT;
  return {
    lockWords: LOCK_WORD_COUNT * i32,
    header: HEADER_FIELDS * f64,
    slotWords: capacity * i32,
    records: capacity * RECORD_FIELDS * f64,
    ready: heapEntries(capacity) * ENTRY_FIELDS * f64,
    delayed: heapEntries(capacity) * ENTRY_FIELDS * f64,
    leases: heapEntries(capacity) * ENTRY_FIELDS * f64,
    jobMap: mapEntries(capacity) * MAP_FIELDS * f64,
    freeSlots: capacity * i32,
    finished: capacity * RING_FIELDS * f64,
    arena: arenaBytes,
    workerNames: WORKER_NAMES * WORKER_ENTRY_BYTES,
    commitRing: commitRingEntries(capacity) * f64,
  };
}
export type BufferName = keyof ReturnType<typeof bufferBytes>;
export type QueueBuffers = Record<BufferName, SharedArrayBuffer>;

export function allocateBuffers(capacity: number, arenaBytes: number): QueueBuffers {
  const sizes = bufferBytes(capacity, arenaBytes);
  const out = {} as QueueBuffers;
  for (const name of Object.keys(sizes) as BufferName[]) out[name] = new SharedArrayBuffer(sizes[name]);
  return out;
}

export const BUFFER_NAMES = Object.keys(bufferBytes(1, 0)) as readonly BufferName[];
