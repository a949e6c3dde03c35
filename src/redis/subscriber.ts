/**
 * One queue client's second connection, subscribed to the queue's pub/sub
 * channels (new work, finished jobs): opened on first use, shared by every
 * listener of this client, closed with it.
 */
import { backendError, connectClient, duplicateClient, release, userOf, type RedisClient } from './connection.js';

export class Subscriber {
  readonly #client: RedisClient;
  readonly #where: string;
  #connection: Promise<RedisClient> | undefined;
  readonly #handlers = new Map<string, (message: string) => void>();
  readonly #subscribed = new Map<string, Promise<unknown>>();

  /** `client` is the queue's own connection, which the subscribed one copies. */
  constructor(client: RedisClient, where: string) {
    this.#client = client;
    this.#where = where;
  }

  /**
   * Subscribes to `channel` (once; a failed subscription is tried again by
   * the next call) and hands each of its messages to `handler`. Resolves once
   * subscribed: a message published after that reaches the handler.
   */
  listen(channel: string, handler: (message: string) => void): Promise<unknown> {
    this.#handlers.set(channel, handler);
    let subscribed = this.#subscribed.get(channel);
    if (subscribed === undefined) {
      subscribed = this.#connect().then(async (client) => {
        try {
          await client.subscribe(channel);
        } catch (error) {
          throw backendError(error, this.#where);
        }
      });
      subscribed.catch(() => this.#subscribed.delete(channel));
      this.#subscribed.set(channel, subscribed);
    }
    return subscribed;
  }

  #connect(): Promise<RedisClient> {
    this.#connection ??= (async () => {
      const client = duplicateClient(this.#client);
      client.on('message', (channel: string, message: string) => this.#handlers.get(channel)?.(message));
      try {
        await connectClient(client, this.#where, userOf(client));
      } catch (error) {
        client.disconnect();
        throw error;
      }
      return client;
    })();
    this.#connection.catch(() => (this.#connection = undefined));
    return this.#connection;
  }

  /** Closes the subscribed connection, if any. */
  async close(): Promise<void> {
    const client = await this.#connection?.catch(() => undefined);
    if (client !== undefined) await release(client);
  }
}
