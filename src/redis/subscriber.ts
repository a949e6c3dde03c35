/**
 * One queue client's second connection, subscribed to the queue's pub/sub
 * channels (new work, finished jobs): opened on first use, shared by every
 * listener of this client, closed with it. Pub/sub keeps nothing for a
 * connection that is down: when it comes back (ioredis reconnects it), the
 * messages published meanwhile are lost, so once every channel is
 * subscribed again each reconnect hook runs and its waiters look again.
 */
import { backendError, connectClient, duplicateClient, release, userOf, type RedisClient } from './connection.js';

export class Subscriber {
  readonly #client: RedisClient;
  readonly #where: string;
  #connection: Promise<RedisClient> | undefined;
  readonly #handlers = new Map<string, (message: string) => void>();
  readonly #subscribed = new Map<string, Promise<unknown>>();
  readonly #reconnectHooks: Array<() => void> = [];

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

  /** Runs `hook` each time the connection is back after a drop, subscribed again to every channel. */
  onReconnect(hook: () => void): void {
    this.#reconnectHooks.push(hook);
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
      // Registered after the first connect: every later 'ready' is a reconnect.
      client.on('ready', () => void this.#resubscribed(client));
      return client;
    })();
    this.#connection.catch(() => (this.#connection = undefined));
    return this.#connection;
  }

  /**
   * After a reconnect: subscribes again to every channel (ioredis does too;
   * this one's reply says Redis has them all), then runs the hooks. If the
   * connection drops again first, the next 'ready' does it.
   */
  async #resubscribed(client: RedisClient): Promise<void> {
    const channels = [...this.#subscribed.keys()];
    if (channels.length === 0) return;
    try {
      await client.subscribe(...channels);
    } catch {
      return;
    }
    for (const hook of this.#reconnectHooks) hook();
  }

  /** Closes the subscribed connection, if any. */
  async close(): Promise<void> {
    const client = await this.#connection?.catch(() => undefined);
    if (client !== undefined) await release(client);
  }
}
