/**
 * What wakes `finished(jobId)` on Redis: every script that moves jobs into
 * SUCCEEDED, DEAD or CANCELLED publishes their numbers on the queue's
 * `finishes` channel; the client's subscribed connection (subscriber.ts)
 * hands each number to the waiters for that job, wherever the finish came
 * from (any client, any process).
 */
import type { FinishWatch } from '../finished.js';
import type { Subscriber } from './subscriber.js';

export class FinishNotices {
  readonly #subscriber: Subscriber;
  readonly #channel: string;
  /** Per job number, the wakes of the waiters for it. */
  readonly #waiters = new Map<string, Set<() => void>>();

  constructor(subscriber: Subscriber, channel: string) {
    this.#subscriber = subscriber;
    this.#channel = channel;
    // A finish published while the connection was down is lost: every waiter looks again.
    subscriber.onReconnect(() => this.#wakeAll());
  }

  /**
   * A watch over job number `n` for untilFinished: armed once subscribed (a
   * finish published from then on is heard), woken by a message naming `n`.
   */
  watch(n: string): FinishWatch {
    let heard = false;
    let wake: (() => void) | undefined;
    const notice = () => {
      heard = true;
      wake?.();
    };
    return {
      arm: async () => {
        heard = false;
        this.#add(n, notice);
        await this.#subscriber.listen(this.#channel, (message) => this.#deliver(message));
      },
      changed: (stop) => new Promise<void>((resolve) => {
        if (heard || stop.aborted) return resolve();
        const done = () => {
          wake = undefined;
          stop.removeEventListener('abort', done);
          resolve();
        };
        wake = done;
        stop.addEventListener('abort', done, { once: true });
      }),
      close: () => this.#remove(n, notice),
    };
  }

  /** Wakes every waiter, as the queue closes: each looks again, and is told the queue is closed. */
  close(): void {
    this.#wakeAll();
  }

  #wakeAll(): void {
    for (const waiters of this.#waiters.values()) for (const wake of waiters) wake();
  }

  /** Wakes the waiters of every job a message names. */
  #deliver(message: string): void {
    for (const n of message.split(',')) for (const wake of this.#waiters.get(n) ?? []) wake();
  }

  #add(n: string, wake: () => void): void {
    let waiters = this.#waiters.get(n);
    if (waiters === undefined) this.#waiters.set(n, (waiters = new Set()));
    waiters.add(wake);
  }

  #remove(n: string, wake: () => void): void {
    const waiters = this.#waiters.get(n);
    waiters?.delete(wake);
    if (waiters?.size === 0) this.#waiters.delete(n);
  }
}
