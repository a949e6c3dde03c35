/**
 * What wakes a waiting worker loop: a second connection subscribed to the
 * queue's channel, on which every script that adds work publishes the new
 * value of the queue's new-work counter.
 */
import { backendError, connectClient, duplicateClient, release, userOf, type RedisClient } from './connection.js';

interface Waiter {
  /** The new-work counter its poll saw. */
  readonly seen: number;
  wake(woken: boolean): void;
}

export class WakeUps {
  readonly #client: RedisClient;
  readonly #channel: string;
  readonly #where: string;
  #listener: Promise<RedisClient> | undefined;
  readonly #waiters = new Set<Waiter>();

  /** `client` is the queue's own connection, which the subscribed one copies. */
  constructor(client: RedisClient, channel: string, where: string) {
    this.#client = client;
    this.#channel = channel;
    this.#where = where;
  }

  /** Subscribes, on first use; a failed subscription is tried again by the next call. */
  listen(): Promise<unknown> {
    this.#listener ??= (async () => {
      const client = duplicateClient(this.#client);
      client.on('message', (_channel: string, message: string) => {
        const signal = Number(message);
        for (const waiter of this.#waiters) if (signal > waiter.seen) waiter.wake(true);
      });
      await connectClient(client, this.#where, userOf(client));
      try {
        await client.subscribe(this.#channel);
        return client;
      } catch (error) {
        client.disconnect();
        throw backendError(error, this.#where);
      }
    })();
    this.#listener.catch(() => (this.#listener = undefined));
    return this.#listener;
  }

  /** Resolves true when a counter above `seen` is published, false after `timeoutMillis` or on close. */
  wait(seen: number, timeoutMillis: number): Promise<boolean> {
    return new Promise((resolve) => {
      const waiter: Waiter = {
        seen,
        wake: (woken) => {
          clearTimeout(timer);
          this.#waiters.delete(waiter);
          resolve(woken);
        },
      };
      const timer = setTimeout(() => waiter.wake(false), timeoutMillis);
      this.#waiters.add(waiter);
    });
  }

  /** Wakes every waiter (false) and closes the subscribed connection, if any. */
  async close(): Promise<void> {
    for (const waiter of this.#waiters) waiter.wake(false);
    const client = await this.#listener?.catch(() => undefined);
    if (client !== undefined) await release(client);
  }
}
