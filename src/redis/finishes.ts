/**
 * What wakes `finished(jobId)` on Redis: every script that moves jobs into
 * SUCCEEDED, DEAD or CANCELLED publishes their numbers on the queue's
 * `finishes` channel; the client's subscribed connection (subscriber.ts)
 * hands each number to the waiters for that job, wherever the finish came
 * from (any client, any process).
 */
import { FinishWaits, type FinishWatch } from '../finished.js';
import type { Subscriber } from './subscriber.js';

export class FinishNotices {
  /** Keyed by job number, as the messages name jobs. */
  readonly #waits: FinishWaits;

  constructor(subscriber: Subscriber, channel: string) {
    // A watch is armed once subscribed: a finish published from then on is heard.
    this.#waits = new FinishWaits(() => subscriber.listen(channel, (message) => this.#deliver(message)));
    // A finish published while the connection was down is lost: every waiter looks again.
    subscriber.onReconnect(() => this.#waits.wakeAll());
  }

  /** A watch over job number `n` for untilFinished, woken by a message naming `n`. */
  watch(n: string): FinishWatch {
    return this.#waits.watch(n);
  }

  /** Wakes every waiter, as the queue closes: each looks again, and is told the queue is closed. */
  close(): void {
    this.#waits.wakeAll();
  }

  /** Wakes the waiters of every job a message names. */
  #deliver(message: string): void {
    for (const n of message.split(',')) this.#waits.wake(n);
  }
}
