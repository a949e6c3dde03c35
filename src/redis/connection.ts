/**
 * The Redis client a queue talks through, set up so that a broken connection
 * can never repeat a call, and what its failures mean for a caller.
 */
// Types only: ioredis is loaded by the first connect, so that importing leasehold costs nothing for it.
import type { Redis, RedisOptions } from 'ioredis';
import { BackendUnavailableError } from '../errors.js';
import { redisClient } from '../optional.js';

/** Where the queue's Redis is: a URL (`redis://[:password@]host:port[/db]`) or ioredis options. */
export type RedisTarget = string | RedisOptions;

/**
 * Options no caller may change: they are what makes a call run at most once.
 * ioredis by default resends, after reconnecting, a command whose reply was
 * lost — a second submit, or a second poll whose lease nobody holds — and
 * queues calls made while disconnected for a server that may not come back.
 */
const AT_MOST_ONCE: RedisOptions = {
  autoResendUnfulfilledCommands: false,
  // Fails the commands in flight as soon as the connection drops (0 reconnect attempts to wait for).
  maxRetriesPerRequest: 0,
  enableOfflineQueue: false,
  lazyConnect: true,
};

/** Unless the caller's options say otherwise, reconnects in the background, quickly at first, then every second. */
const retryStrategy = (times: number): number => Math.min(50 * times, 1000);

/** A client that is not yet connected; `connect()` it. */
export async function createClient(target: RedisTarget, commandTimeoutMillis: number): Promise<Redis> {
  const Redis = await redisClient();
  const options: RedisOptions = { retryStrategy, ...(typeof target === 'string' ? {} : target), ...AT_MOST_ONCE, commandTimeout: commandTimeoutMillis };
  return quiet(typeof target === 'string' ? new Redis(target, options) : new Redis(options));
}

/** Another client to the same server with the same options, not yet connected. */
export function duplicateClient(client: Redis): Redis {
  return quiet(client.duplicate());
}

/** Connection errors reach callers as rejections; without a listener ioredis would also print each one. */
function quiet(client: Redis): Redis {
  client.on('error', () => undefined);
  return client;
}

/** Server replies that refuse a command before it runs: the server is there but cannot serve now. */
const UNAVAILABLE_REPLIES = /^(LOADING|BUSY|MISCONF|OOM|READONLY|MASTERDOWN|NOREPLICAS|TRYAGAIN|CLUSTERDOWN)\b/;

/**
 * The error a caller gets for a failure of `client` while running a command
 * that was sent. A reply error other than "cannot serve now" is a bug
 * (a script that failed) and is passed on as it is.
 */
export function backendError(error: unknown, where: string): unknown {
  // ioredis's ReplyError: the server answered with an error (matched by name, like every error that crosses a boundary).
  if (error instanceof Error && error.name === 'ReplyError') {
    const { message } = error;
    if (!UNAVAILABLE_REPLIES.test(message)) return error;
    return new BackendUnavailableError(`Redis at ${where} refused the call, which changed nothing: ${message}`, { cause: error });
  }
  const reason = error instanceof Error ? error.message : String(error);
  return new BackendUnavailableError(
    `The connection to Redis at ${where} failed while the call was in flight (${reason}): it may or may not have taken effect`,
    { cause: error },
  );
}

/** The error for a connection that could not be opened (refused, timed out, or the server said no). */
export function connectError(error: unknown, where: string): BackendUnavailableError {
  const reason = error instanceof Error ? error.message : String(error);
  return new BackendUnavailableError(`Could not connect to Redis at ${where}: ${reason}`, { cause: error });
}

/** The error for a call not sent because the client is not connected. */
export function notConnectedError(client: Redis, where: string): BackendUnavailableError {
  return new BackendUnavailableError(`Redis at ${where} is unreachable (the client is ${client.status}): the call was not sent and changed nothing`);
}

/** A readable address of the client's server, for messages. */
export function addressOf(client: Redis): string {
  const { host, port, path } = client.options;
  return path ? path : `${host ?? '127.0.0.1'}:${port ?? 6379}`;
}

/** Closes `client`: politely if it is connected, at once otherwise. */
export async function release(client: Redis): Promise<void> {
  if (client.status === 'ready') {
    try {
      await client.quit();
      return;
    } catch {
      // The connection broke during QUIT: there is nothing left to close politely.
    }
  }
  client.disconnect();
}
