/**
 * Caps racing across PROCESSES on Redis (a RedisJobQueue or a
 * PartitionedRedisQueue): racing processes (fixtures/redis-caps-racer.mjs)
 * poll batches, hold leases, complete most and abandon some, which expire
 * when the clock moves on between rounds. Each logs every claim with the
 * count of RUNNING jobs of the claimed job's type or group, taken atomically
 * in Redis right after the poll: the tests check every claim against its cap.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import type { ManualClock, PartitionedRedisQueue, RedisJobQueue } from '../../dist/index.js';
import { withTimeout } from './helpers.js';

const RACER = fileURLToPath(new URL('../fixtures/redis-caps-racer.mjs', import.meta.url));
const PROCESSES = 3;
/** The leases' length in the racers: the clock moves this far between rounds, so abandoned leases expire. */
const LEASE = 60_000;
/** Rounds enough for every job, with room to spare: each round leases every job it can. */
const MAX_ROUNDS = 60;

/** Where the racers connect: a RedisJobQueue (0 partitions) or a PartitionedRedisQueue. */
export interface RaceTarget {
  url: string;
  name: string;
  partitions: number;
}

/** A claim as a racer logs it: the job, its type or group, that type's or group's RUNNING jobs and all RUNNING jobs right after the poll. */
export type Claim = [jobId: string, value: string, runningOfValue: number, runningTotal: number];

interface Round {
  ev: string;
  claims: Claim[];
  abandoned: number;
}

const children: ChildProcess[] = [];

/** Kills the racers a failed race left (for afterEach). */
export function killRacers(): void {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
}

/** A racing process, answering one JSON line per `go`. */
function racer(target: RaceTarget, index: number, seed: number, field: 'type' | 'group'): { go(time: number): Promise<Round>; close(): void } {
  const child = spawn(process.execPath, [RACER, JSON.stringify(target), `r${index}`, String(seed), field], { stdio: ['pipe', 'pipe', 'inherit'] });
  children.push(child);
  const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
  const next = async (): Promise<Round> => {
    const { value, done } = await withTimeout(lines.next(), 60_000, `racer r${index}`);
    if (done === true) throw new Error(`racer r${index} ended`);
    return JSON.parse(value as string) as Round;
  };
  const ready = next();
  return {
    async go(time) {
      expect((await ready).ev).toBe('ready');
      child.stdin!.write(`go ${time}\n`);
      return next();
    },
    close: () => child.stdin!.end('close\n'),
  };
}

/**
 * Races the jobs already submitted to `queue` (each with its `field`'s value as its payload) in rounds until
 * none is PENDING or RUNNING: every claim logged, the leases abandoned counted.
 */
export async function raceInProcesses(
  queue: RedisJobQueue | PartitionedRedisQueue, clock: ManualClock, target: RaceTarget, field: 'type' | 'group', seed: number,
): Promise<{ claims: Claim[]; abandoned: number; rounds: number }> {
  const racers = Array.from({ length: PROCESSES }, (_, i) => racer(target, i, seed + i, field));
  const claims: Claim[] = [];
  let abandoned = 0;
  let rounds = 0;
  for (; rounds < MAX_ROUNDS; rounds++) {
    const reports = await Promise.all(racers.map((r) => r.go(clock.now())));
    for (const report of reports) {
      claims.push(...report.claims);
      abandoned += report.abandoned;
    }
    const stats = await queue.stats();
    if (stats.pending + stats.running === 0) break;
    // The abandoned leases expire: their jobs are retried (or dead after 5 attempts) in the next round.
    clock.advance(LEASE);
  }
  for (const r of racers) r.close();
  return { claims, abandoned, rounds: rounds + 1 };
}

/** The most RUNNING seen at any claim: in all, and per type or group. */
export function mostRunning(claims: readonly Claim[]): { total: number; byValue: Record<string, number> } {
  const byValue: Record<string, number> = {};
  let total = 0;
  for (const [, value, count, all] of claims) {
    byValue[value] = Math.max(byValue[value] ?? 0, count);
    total = Math.max(total, all);
  }
  return { total, byValue };
}
