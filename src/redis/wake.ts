/**
 * What wakes a waiting worker loop: the queue's subscribed connection (see
 * subscriber.ts) listens on the queue's channel, on which every script that
 * adds work publishes the new value of the queue's new-work counter.
 */
import type { Subscriber } from './subscriber.js';
import { startTimer } from '../long-timer.js';

interface Waiter {
  /** The new-work counter its poll saw. */
  readonly seen: number;
  wake(woken: boolean): void;
}

export class WakeUps {
  readonly #subscriber: Subscriber;
  readonly #channel: string;
  readonly #waiters = new Set<Waiter>();

  constructor(subscriber: Subscriber, channel: string) {
    this.#subscriber = subscriber;
    this.#channel = channel;
    // New work announced while the connection was down is lost: every waiter is woken to poll again.
    subscriber.onReconnect(() => {
      for (const waiter of this.#waiters) waiter.wake(true);
    });
  }

  /** Subscribes, on first use; a failed subscription is tried again by the next call. */
  listen(): Promise<unknown> {
    return this.#subscriber.listen(this.#channel, (message) => {
      const signal = Number(message);
      for (const waiter of this.#waiters) if (signal > waiter.seen) waiter.wake(true);
    });
  }

  /** Resolves true when a counter above `seen` is published (or may have been, unheard: a reconnect), false after `timeoutMillis` or on close. */
  wait(seen: number, timeoutMillis: number): Promise<boolean> {
    return new Promise((resolve) => {
      const waiter: Waiter = {
        seen,
        wake: (woken) => {
          timer.clear();
          this.#waiters.delete(waiter);
          resolve(woken);
        },
      };
      const timer = startTimer(() => waiter.wake(false), timeoutMillis);
      this.#waiters.add(waiter);
    });
  }

  /** Wakes every waiter (false), as the queue closes. */
  close(): void {
    for (const waiter of this.#waiters) waiter.wake(false);
  }
}
