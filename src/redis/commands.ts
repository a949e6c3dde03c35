/**
 * How a queue's client runs the commands of scripts.ts: by FCALL of the
 * Functions library, loaded into each server the first time a call finds it
 * missing; or, on a server without Functions (before Redis 7), by EVALSHA of
 * each command's own script.
 *
 * A server loses the library only with its data (a server started empty, a
 * replica promoted before the load reached it), and a Cluster has one per
 * master: FCALL then says "Function not found", which means the call did not
 * run, so the library is loaded (into every master of a Cluster) and the
 * call sent again. Loading is idempotent (FUNCTION LOAD REPLACE of the same
 * code), so clients that race to load do no harm.
 */
import type { Cluster, Redis } from 'ioredis';
import { BackendUnavailableError } from '../errors.js';
import type { RedisClient } from './connection.js';
import { library, type Command } from './scripts.js';

/** What the server says to an FCALL of a function it does not have. */
const FUNCTION_NOT_FOUND = /^ERR Function not found/;
/** What a server without Functions says to FCALL or FUNCTION. */
const UNKNOWN_COMMAND = /^ERR unknown command/i;

/** What a Cluster node says to a command for a slot it does not serve (it did not run it): the slot moved, after a failover or a resharding. */
const MOVED = /^MOVED /;
/** How many times a write is sent again after MOVED, each after the client read the slots again (ioredis's own default for its redirections). */
const MAX_REDIRECTIONS = 16;

/** How many replicas must have each write (0: none waited for), and how long a write waits for them. */
export interface Durability {
  readonly replicas: number;
  readonly timeoutMillis: number;
}

/** The commands that change nothing a later call could miss: their catch-up, if lost in a failover, is done again. */
const READS: ReadonlySet<Command> = new Set<Command>(['view', 'stats', 'deadLetters', 'jobs', 'rateLimits', 'retryPolicies']);

export class CommandRunner {
  /** Whether the server has Functions; false once it said it does not (then every call is EVALSHA). */
  #functions = true;
  /** A load in flight, shared by the calls that found the library missing at once. */
  #loading: Promise<void> | undefined;
  /** The socket held corked until the next tick (see #coalesce), if one is. */
  #corked: Redis['stream'] | undefined;

  constructor(private readonly redis: RedisClient, private readonly durability: Durability = { replicas: 0, timeoutMillis: 1 }) {}

  /**
   * Runs `command` with `keys` and `args` (a Buffer argument is sent as its bytes); its reply, with
   * bulk strings as strings, or with `raw` as the Buffers Redis sent (for a reply that may hold
   * binary values: replies.ts decodes it).
   */
  async run(command: Command, keys: readonly string[], args: ReadonlyArray<string | Buffer>, raw = false): Promise<unknown[]> {
    if (this.#functions) {
      const name = library().functionOf(command);
      try {
        return await this.#send(command, ['FCALL', name], keys, args, raw);
      } catch (error) {
        if (!isReply(error, FUNCTION_NOT_FOUND) && !isReply(error, UNKNOWN_COMMAND)) throw error;
        // The call did not run: the server lacks the library, or Functions altogether.
      }
      if (await this.#load()) return this.#send(command, ['FCALL', name], keys, args, raw);
    }
    return this.#evaluate(command, keys, args, raw);
  }

  /**
   * ioredis writes each command to the socket as it is sent: one write (a system call) per command.
   * A worker's claim loops send theirs in the same pass of the event loop, each as the reply to its
   * last one arrives: the socket is corked at the first and uncorked on the next tick, so that they
   * go in one write, and none waits longer than that tick. A Cluster client's node sockets are left as they are.
   */
  #coalesce(): void {
    if (this.#corked !== undefined || this.redis.isCluster) return;
    const stream = (this.redis as Redis).stream;
    if (stream === undefined || !stream.writable) return;
    stream.cork();
    this.#corked = stream;
    process.nextTick(() => {
      this.#corked = undefined;
      stream.uncork();
    });
  }

  /** Loads the library; false (and from then on EVALSHA) if the server has no Functions. */
  async #load(): Promise<boolean> {
    this.#loading ??= this.#loadEverywhere().finally(() => (this.#loading = undefined));
    try {
      await this.#loading;
      return true;
    } catch (error) {
      if (!isReply(error, UNKNOWN_COMMAND)) throw error;
      this.#functions = false;
      return false;
    }
  }

  /** FUNCTION LOAD REPLACE into the server, or into every master of a Cluster (a Function lives on the node that loaded it). */
  async #loadEverywhere(): Promise<void> {
    const { code } = library();
    const targets: Redis[] = this.redis.isCluster ? (this.redis as Cluster).nodes('master') : [this.redis as Redis];
    await Promise.all(targets.map((node) => node.call('FUNCTION', 'LOAD', 'REPLACE', code)));
  }

  /** One run of `command`'s own script, by its hash, or by its text if the server does not have it. */
  async #evaluate(command: Command, keys: readonly string[], args: ReadonlyArray<string | Buffer>, raw: boolean): Promise<unknown[]> {
    const script = library().scriptOf(command);
    try {
      return await this.#send(command, ['EVALSHA', script.sha], keys, args, raw);
    } catch (error) {
      // The server lost its script cache (a restart): NOSCRIPT means the script did not run.
      if (!isReply(error, /^NOSCRIPT/)) throw error;
      return this.#send(command, ['EVAL', script.lua], keys, args, raw);
    }
  }

  /**
   * Sends `verb what keys args`, and for a write, when replicas are asked
   * for, WAIT in the same round trip: the reply once enough replicas have
   * the write, or BackendUnavailableError if they do not by the timeout.
   */
  async #send(command: Command, [verb, what]: [string, string], keys: readonly string[], args: ReadonlyArray<string | Buffer>, raw: boolean): Promise<unknown[]> {
    const { replicas, timeoutMillis } = this.durability;
    if (replicas === 0 || READS.has(command)) {
      this.#coalesce();
      // ioredis parses every reply as Buffers: `call` turns each into a string (UTF-8, lossy for raw bytes), `callBuffer` leaves them.
      return (await (raw ? this.redis.callBuffer(verb, what, keys.length, ...keys, ...args) : this.redis.call(verb, what, keys.length, ...keys, ...args))) as unknown[];
    }
    let results: [[Error | null, unknown], [Error | null, unknown]];
    for (let redirections = 0; ; redirections++) {
      this.#coalesce();
      const pipeline = this.redis.pipeline();
      if (raw) pipeline.callBuffer(verb, what, keys.length, ...keys, ...args);
      else pipeline.call(verb, what, keys.length, ...keys, ...args);
      results = (await pipeline.call('WAIT', replicas, timeoutMillis).exec()) as typeof results;
      // A Cluster client follows MOVED in a pipeline only when every reply is one; WAIT's is not. MOVED: the call did not run, the slot has a new master.
      if (!this.redis.isCluster || !isReply(results[0][0], MOVED) || redirections === MAX_REDIRECTIONS) break;
      await refreshedSlots(this.redis as Cluster);
    }
    const [[error, reply], [waitError, acknowledged]] = results;
    if (error !== null) throw error;
    if (waitError !== null) throw waitError;
    if ((acknowledged as number) < replicas) {
      throw new BackendUnavailableError(
        `The call ran on the Redis master, but only ${acknowledged} of ${replicas} replicas had it within ${timeoutMillis} ms: a failover now may lose it`,
      );
    }
    return reply as unknown[];
  }
}

/** Once the Cluster client read the slots again (it may still be told an old map by a node that has not heard of the failover). */
function refreshedSlots(cluster: Cluster): Promise<void> {
  return new Promise((resolve) => cluster.refreshSlotsCache(() => resolve()));
}

/** Whether `error` is the server's reply (ioredis's ReplyError, matched by name) and says `what`. */
function isReply(error: unknown, what: RegExp): boolean {
  return error instanceof Error && error.name === 'ReplyError' && what.test(error.message);
}
