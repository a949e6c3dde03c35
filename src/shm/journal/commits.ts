import * as step from '../memory/steps.js';
import {
  COMMIT_DURABLE, COMMIT_HEAD, COMMIT_KINDS, COMMIT_LOCK, COMMIT_SLEEPERS, type COMMIT_EVICTED, type COMMIT_MOVED, type COMMIT_SUBMITTED,
} from '../memory/layout.js';
import { COMMIT_LEADER_LOCK, QueueLock } from '../protocol/lock.js';
import { LockLost, assertHeld } from '../protocol/lock-held.js';
import type { Patience } from '../protocol/patience.js';

/** The `awaited` mark (I21; Frozen jobs in layout.ts) of a move noted under `ticket`: 0 means no mark. */
export function markOf(ticket: number): number {
  return (ticket >>> 0) + 1;
}

/** The ticket an `awaited` mark names. */
export function ticketOfMark(mark: number): number {
  return (mark - 1) | 0;
}

export type CommitKind = typeof COMMIT_SUBMITTED | typeof COMMIT_MOVED | typeof COMMIT_EVICTED;

/**
 * Group commit: the journal writes of every thread, made by one leader at a time.
 *
 * Under the queue lock, each change the journal must learn of is noted in the
 * ring (job number and kind) and gets the next ticket. Outside the lock, a
 * call that must be durable before it returns waits until COMMIT_DURABLE
 covers its ticket: if the leader lock is free it takes it and leads —
 * snapshots every noted job under the queue lock, writes them in one
 * transaction, publishes the new COMMIT_DURABLE and wakes every sleeper —
 * else it sleeps until the leader publishes. Meanwhile other threads keep
 * noting; the next leader commits all of them at once. A burst from many
 * threads costs one commit — one fsync with synchronous FULL — not one per call,
 * and no commit ever runs under the queue lock unless the ring is full.
 *
 * Concurrency contract: `note` runs under the queue lock only (COMMIT_HEAD is
 * the queue lock's). COMMIT_DURABLE only grows (by CAS), so two leaders — one
 * stalled past the timeout and presumed dead, one that took over — publish in
 * either order without taking a ticket back; their writes are idempotent and
 * ordered per job by its move count. Tickets wrap at 2^32: compared by
 * difference, never by size, and the ring (a power of two) stays in step.
 */
export class CommitRing {
  readonly #words: Int32Array;
  readonly #ring: Float64Array;
  readonly #mask: number;
  /** The queue lock, whose holder alone notes writes. */
  readonly #queueLock: QueueLock;
  /** The leader's lock: held while a thread writes the journal for everyone. */
  readonly leader: QueueLock;

  constructor(words: Int32Array, ring: Float64Array, patience: Patience, queueLock: QueueLock) {
    this.#words = words;
    this.#queueLock = queueLock;
    this.#ring = ring;
    this.#mask = ring.length - 1;
    this.leader = new QueueLock(words, patience, COMMIT_LEADER_LOCK);
  }

  /** Entries the ring can take before a commit must make room. */
  room(): number {
    return this.#ring.length - ((step.load(this.#words, COMMIT_HEAD) - step.load(this.#words, COMMIT_DURABLE)) | 0);
  }

  /** Notes a journal write (under the queue lock); returns its ticket. The caller has made room. */
  note(jobNum: number, kind: CommitKind): number {
    const head = step.load(this.#words, COMMIT_HEAD);
    // After the head is read (keeps I13): a holder taken for dead before this look would write over an entry of
    // its successor's, and set the head back, leaving tickets already handed out past it, never committed.
    assertHeld(this.#queueLock);
    const ticket = (head + 1) | 0;
    this.#ring[ticket & this.#mask] = jobNum * COMMIT_KINDS + kind;
    // Publishes the entry before the head covers it (a thread killed in between leaves an entry nobody reads); by
    // CAS, so that a holder taken over in the instant since its look never moves the head back.
    if (step.compareExchange(this.#words, COMMIT_HEAD, head, ticket) !== head) throw new LockLost();
    return ticket;
  }

  /** The newest ticket issued. */
  head(): number {
    return step.load(this.#words, COMMIT_HEAD);
  }

  isDurable(ticket: number): boolean {
    return ((step.load(this.#words, COMMIT_DURABLE) - ticket) | 0) >= 0;
  }

  /**
   * Whether `ticket` was issued and is not durable yet. A ticket outside the
   * window of pending tickets is durable: so a mark from 2^32 tickets ago
   * (tickets wrap) does not freeze its job again.
   */
  isPending(ticket: number): boolean {
    const durable = step.load(this.#words, COMMIT_DURABLE);
    return ((ticket - durable) | 0) > 0 && ((step.load(this.#words, COMMIT_HEAD) - ticket) | 0) >= 0;
  }

  /** Whether a slot's `awaited` mark (see `markOf`) names a commit still to come: its job is frozen until then. */
  awaits(mark: number): boolean {
    return mark !== 0 && this.isPending(ticketOfMark(mark));
  }

  /** Calls `visit` for every entry not yet durable, oldest first (under the queue lock); returns the last ticket seen. */
  forEachPending(visit: (jobNum: number, kind: CommitKind) => void): number {
    const head = step.load(this.#words, COMMIT_HEAD);
    // By difference, as tickets wrap: a holder taken for dead since it read the head may find tickets durable past it.
    for (let ticket = step.load(this.#words, COMMIT_DURABLE); ((head - ticket) | 0) > 0; ) {
      ticket = (ticket + 1) | 0;
      const entry = this.#ring[ticket & this.#mask]!;
      visit(Math.floor(entry / COMMIT_KINDS), (entry % COMMIT_KINDS) as CommitKind);
    }
    return head;
  }

  /** Every ticket up to `upTo` is committed: wakes the threads waiting for it. Keeps I22. */
  publish(upTo: number): void {
    const words = this.#words;
    for (;;) {
      const durable = step.load(words, COMMIT_DURABLE);
      if (((upTo - durable) | 0) <= 0) return;
      if (step.compareExchange(words, COMMIT_DURABLE, durable, upTo) === durable) break;
    }
    if (step.load(words, COMMIT_SLEEPERS) > 0) step.notify(words, COMMIT_DURABLE);
  }

  /** Sleeps until a leader publishes a commit, or for at most `napMillis`; at once if no one leads. */
  awaitCommit(napMillis: number): void {
    const words = this.#words;
    const durable = step.load(words, COMMIT_DURABLE);
    step.add(words, COMMIT_SLEEPERS, 1);
    // Looked at after counting ourselves in: a leader that publishes from here on notifies us, and a
    // publish in between changed COMMIT_DURABLE, so the wait returns at once.
    if (step.load(words, COMMIT_LOCK) !== 0) step.wait(words, COMMIT_DURABLE, durable, napMillis);
    step.sub(words, COMMIT_SLEEPERS, 1);
  }
}
