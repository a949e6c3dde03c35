/**
 * Where a history's stamps come from.
 *
 * Stamps order calls in real time, so they must come from one clock all
 * recorders share and that never runs backwards:
 *
 * - in one process, the log's own counter: an `Atomics.add` on a word of
 *   shared memory (the default);
 * - across processes, `redisStamps`: an INCR of one Redis key. INCR is atomic
 *   in a single Redis server and returns increasing numbers, so a stamp taken
 *   after another's reply arrived is greater; a call's interval (INCR sent
 *   before the call, INCR sent after its reply) holds the whole call. Wall
 *   clocks (`Date.now()` in each process) are not used: they may step back or
 *   differ between machines, which would put a call before one it followed.
 */
import { redisClients } from '../optional.js';

/** Where stamps come from: increasing numbers, one clock for every recorder of a history. */
export type StampSource = { readonly sync: true; next(): number } | { readonly sync: false; next(): Promise<number> };

/** A Redis client's INCR (ioredis's `Redis` has it). */
export interface IncrClient {
  incr(key: string): Promise<number>;
}

/** Stamps from INCR of `key` on one Redis server (not a cluster's replica): for recorders in several processes. */
export function redisStamps(client: IncrClient, key: string): StampSource {
  return { sync: false, next: () => client.incr(key) };
}

/** Stamps from INCR of `key` on the Redis server at `url`, on a connection of their own: close it when the history is recorded. */
export async function connectRedisStamps(url: string, key: string): Promise<StampSource & { close(): Promise<void> }> {
  const { Redis } = await redisClients();
  const client = new Redis(url);
  return { ...redisStamps(client, key), close: async () => void (await client.quit()) };
}
