/**
 * Whether the process that holds a lease still runs. Every process that
 * leases jobs from a queue keeps a short-lived key of its own alive
 * (`leasehold:{name}:alive:<host>:<pid>`, refreshed by each of its clients
 * that polled or shared the queue), and a lease records its holder. When a
 * lease expires and its holder's key is gone too, the attempt's lastError
 * says the worker process died (or stopped) while the job ran, not just that
 * the lease expired: what a SIGKILL, an OOM kill or a crash of the machine
 * looks like from Redis. The key only names why a lease ended: whether it
 * ended is the lease's own leaseUntil, as ever.
 */
import { hostname } from 'node:os';
import type { RedisClient } from './connection.js';

/** The lastError of an attempt whose lease expired after its holder's liveness key did. */
export const PROCESS_GONE = 'lease lost: the worker process died or stopped while the job ran (its liveness key expired)';

/**
 * How long a holder's key outlives its last refresh. Short, so that the key
 * of a dead process is gone before a lease of a few seconds runs out; a
 * lease that ends sooner after its process died says only "lease expired".
 */
export const LIVENESS_TTL_MILLIS = 1_000;

/** Refreshes per TTL: a process whose event loops all stall for 3/4 of the TTL is taken for gone (only in the lastError's wording). */
const REFRESHES_PER_TTL = 4;

/**
 * What a poll that leases leaves of the key at least (a poll script sets it again only below
 * this): as much as a refresh leaves until the next is due, so it outlives the next refresh.
 */
export const LIVENESS_LEFT_MILLIS = LIVENESS_TTL_MILLIS - LIVENESS_TTL_MILLIS / REFRESHES_PER_TTL;

/** This process, as leases record it: the same in every thread of the process. */
export const HOLDER = `${hostname()}:${process.pid}`;

/** Keeps this process's liveness key of one queue alive, once started, until stopped. */
export class Liveness {
  readonly #redis: RedisClient;
  readonly #key: string;
  #timer: NodeJS.Timeout | undefined;

  constructor(redis: RedisClient, alivePrefix: string) {
    this.#redis = redis;
    this.#key = alivePrefix + HOLDER;
  }

  /** From now on, refresh the key (a poll script also sets it when it leases). */
  start(): void {
    if (this.#timer !== undefined) return;
    this.#timer = setInterval(() => {
      if (this.#redis.status !== 'ready') return;
      // A refresh that fails is only a missed refresh: the next one, or the next poll, sets the key again.
      this.#redis.set(this.#key, '1', 'PX', LIVENESS_TTL_MILLIS).catch(() => undefined);
    }, LIVENESS_TTL_MILLIS / REFRESHES_PER_TTL);
    // The key is for others to read: it never keeps this process running.
    this.#timer.unref();
  }

  stop(): void {
    clearInterval(this.#timer);
  }
}
