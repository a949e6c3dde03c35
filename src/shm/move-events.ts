/**
 * A move's event, for the queue's event ring (tables/event-ring.ts): one call per move site
 * (complete, fail and expiry, cancel), made after the move took effect, by whoever made it. Costs
 * one Atomics load while no one subscribes; then the job's fields are read from the mover's draft
 * (the record as the move wrote it) and its strings decoded here, so the entry needs nothing of
 * the job's memory once written.
 */
import { DATA_REF, ERROR_REF, ATTEMPTS, JOB_NUM, STARTED_AT, TYPE } from './memory/layout.js';
import type { QueueMemory } from './queue-memory.js';
import { CANNED_ERRORS, waitOf } from './records.js';

/** The MOVE_KINDS index of each move (src/events/queue-events.ts; the ring stores the number). */
export const enum MoveEvent {
  Completed = 0,
  Retrying = 1,
  Dead = 2,
  Cancelled = 3,
}

/**
 * Notes job `draft`'s move in the ring if anyone subscribes. `endedAt`: when its attempt ended
 * (NaN for a job that was not RUNNING: no wait, no duration); `waited`: its lease's wait, given by
 * a move that rewrote RUN_AT before this (a retry), else read from the draft. The draft's strings
 * are the job's until its finish is filed: a lock-free complete notes before it appends to its
 * finish ring, so no lock holder can have evicted the job yet.
 */
export function noteMove(memory: QueueMemory, kind: MoveEvent, draft: Float64Array, endedAt: number, stalled = false, waited = NaN): void {
  const ring = memory.events;
  if (!ring.subscribed()) return;
  const type = draft[TYPE]!;
  const typeText = type > 0 ? memory.typeNames.nameOf(type)! : memory.arena.read(draft[DATA_REF]!, 0, -type);
  const errorRef = draft[ERROR_REF]!;
  const error = kind === MoveEvent.Retrying || kind === MoveEvent.Dead ? (errorRef > 0 ? memory.arena.readCounted(errorRef) : (CANNED_ERRORS.get(errorRef) ?? '')) : undefined;
  const running = !Number.isNaN(endedAt);
  const wait = !running ? 0 : Number.isNaN(waited) ? waitOf(draft) : waited;
  const duration = running && draft[STARTED_AT]! <= endedAt ? endedAt - draft[STARTED_AT]! : 0;
  ring.publish(kind, draft[JOB_NUM]!, typeText, draft[ATTEMPTS]!, wait, duration, error, stalled);
}
