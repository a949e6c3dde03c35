/**
 * The shared-memory core's one face: everything the queue layer
 * (src/queue.ts, src/queue/), the journal (src/journal/) and the CLI take
 * from the core, and nothing else. The folders behind it (see README.md,
 * "Where the code is") are the core's own business: a name that is not
 * exported here can be moved or renamed without touching a caller.
 *
 * Below the core, src/clock.ts, src/validate/ (job-input, schedule), src/options.ts and the
 * scheduler (src/scheduling/) read memory/ directly: the steps seam and the
 * map's limits, which the core itself imports them for.
 */

/** Every step another thread can observe (Atomics calls, waits, the clock's shared word): the scheduler's seam. */
export * as step from './memory/steps.js';

// The map: buffers, their sizes, and the words the queue layer reads or sets.
export {
  ATTENTION,
  BUFFER_NAMES,
  EVENT_ENTRIES,
  FINISH_RING,
  FREE,
  JOURNAL_RELEASED,
  LEASE_RING,
  MAINTENANCE_ROW,
  MAX_ATTEMPTS,
  MAX_KEY_BYTES,
  MAX_LEASE_LENGTH,
  NAME_BYTES,
  GROUP_CAP_BASE,
  PAUSED,
  RUNNING,
  POLL_ATTENTION,
  COMPLETE_ATTENTION,
  COMPLETE_POLL_ATTENTION,
  TYPE_NAMES,
  WORKER_ATTENTION,
  attemptLimit,
  bufferBytes,
  isBusy,
  statusOf,
  initialBytes,
  mayRetry,
  type BufferName,
  type QueueBuffers,
} from './memory/layout.js';

// One queue's memory and the parts of it the queue layer drives.
export { QueueMemory } from './queue-memory.js';
export { NAME_OF_STATUS, countedChunks, payloadByteLength, type JobRecord } from './records.js';
export { CLASS_OF_NAME, classOf, type ListingIndex, type TreeWalk } from './tables/listing.js';
export { NOT_MAPPED } from './tables/jobmap.js';
export { UNREAD } from './tables/names.js';
export { QUEUE_CAP, groupCap, isGroupCap } from './tables/concurrency.js';
export { NO_ROW } from './tables/rows.js';
export { NOTHING_READY, POLL_FROZEN } from './tables/ready.js';
export { ScheduleTable } from './tables/schedule-table.js';
export { EventRing, ReadOutcome, seqDistance, type RingEvent } from './tables/event-ring.js';
export { SharedFinishWaits } from './protocol/finishes.js';
export { CANCELLED_RUNNING, announceCancel, watchCancels } from './protocol/cancels.js';
export { LockLost, assertHeld } from './protocol/lock-held.js';
export { Mover } from './protocol/mover.js';

// The moves a worker makes, and the locked maintenance.
export { SLOW, WorkerPath } from './moves/worker-path.js';
export { KEY_FREE, Maintenance, NO_FLOW, type FlowLink } from './maintenance/maintenance.js';
export { parentLink } from './moves/flows.js';
export type { PendingEdit } from './moves/edit.js';

// The journal link.
export { AWAITS_COMMIT, type JournalNotes } from './journal/journal-notes.js';
export { NOTHING_TO_UNDO, type Undo } from './journal/undo-log.js';
export type { JournalWrites, LoggedJob, LoggedMove, MoveLog, Sequences } from './journal/movelog.js';
