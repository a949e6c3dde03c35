import { planTicks, tickJobs } from '../schedule/plan.js';
import { IllegalStateError } from '../errors.js';
import { byDueTick, byName, type StoredSchedule } from '../schedule/spec.js';
import type { NewJob } from '../validate/job-input.js';
import { storedSpec } from '../validate/schedule.js';
import { luaScript, type Script } from './scripts.js';

/**
 * A Redis queue's schedules: the `schedules` hash (name -> definition) and
 * the `scheduleTicks` sorted set (name, score its next tick), both of the
 * queue's hash tag and declared as KEYS to every script here, so Redis
 * Cluster runs them. Each call is one script, atomic for every client;
 * ADVANCE is the compare-and-set on the next tick that lets one scheduler of
 * many move a schedule past its ticks. A schedule with no tick left is in
 * the hash only.
 */
const PUT = luaScript(`
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
if ARGV[3] == '' then redis.call('ZREM', KEYS[2], ARGV[1]) else redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1]) end
return { 0 }
`);

const REMOVE = luaScript(`
local removed = redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[1])
return { removed }
`);

/** Every schedule: name, definition, next tick ('' for none), ... */
const LIST = luaScript(`
local all = redis.call('HGETALL', KEYS[1])
local out = {}
for i = 1, #all, 2 do
  out[#out + 1] = all[i]
  out[#out + 1] = all[i + 1]
  out[#out + 1] = redis.call('ZSCORE', KEYS[2], all[i]) or ''
end
return out
`);

/** The schedules whose next tick is at or before ARGV[1], as LIST gives them. */
const DUE = luaScript(`
local due = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', ARGV[1], 'WITHSCORES')
local out = {}
for i = 1, #due, 2 do
  out[#out + 1] = due[i]
  out[#out + 1] = redis.call('HGET', KEYS[1], due[i])
  out[#out + 1] = due[i + 1]
end
return out
`);

/** Moves schedule ARGV[1]'s next tick from ARGV[2] to ARGV[3] ('' for none left); 1 if it was still ARGV[2], else 0 and nothing changed. */
const ADVANCE = luaScript(`
local score = redis.call('ZSCORE', KEYS[2], ARGV[1])
if not score or tonumber(score) ~= tonumber(ARGV[2]) then return { 0 } end
if ARGV[3] == '' then redis.call('ZREM', KEYS[2], ARGV[1]) else redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1]) end
return { 1 }
`);

/** How RedisSchedules runs a script: on the queue's connection, with its keys and arguments. */
export type Evaluate = (script: Script, keys: readonly string[], args: readonly string[]) => Promise<unknown[]>;

export class RedisSchedules {
  readonly #evaluate: Evaluate;
  readonly #keys: readonly string[];

  constructor(evaluate: Evaluate, keys: readonly string[]) {
    this.#evaluate = evaluate;
    this.#keys = keys;
  }

  async put(schedule: StoredSchedule): Promise<void> {
    await this.#evaluate(PUT, this.#keys, [schedule.name, JSON.stringify(schedule.spec), tickText(schedule.nextTick)]);
  }

  async remove(name: string): Promise<boolean> {
    const [removed] = await this.#evaluate(REMOVE, this.#keys, [name]);
    return removed === 1;
  }

  async all(): Promise<StoredSchedule[]> {
    return triples(await this.#evaluate(LIST, this.#keys, [])).sort(byName);
  }

  /**
   * Fires every due tick at `now` (see JobQueue#runSchedules): per schedule,
   * submits its ticks' jobs under their keys, then moves its next tick on by
   * ADVANCE. Returns the jobs of the schedules this call moved on.
   */
  async run(now: number, submitMany: (jobs: readonly NewJob[]) => Promise<string[]>): Promise<string[]> {
    const fired: string[] = [];
    // Sorted as every backend fires them (the sorted set breaks ties by bytes, not by name as JavaScript compares).
    for (const schedule of triples(await this.#evaluate(DUE, this.#keys, [String(now)])).sort(byDueTick)) {
      const plan = planTicks(schedule, now);
      if (plan === undefined) continue;
      const ids = plan.ticks.length === 0 ? [] : await submitMany(tickJobs(schedule, plan.ticks));
      const [moved] = await this.#evaluate(ADVANCE, this.#keys, [schedule.name, tickText(schedule.nextTick), tickText(plan.next)]);
      if (moved === 1) fired.push(...ids);
    }
    return fired;
  }
}

function tickText(tick: number | null): string {
  return tick === null ? '' : String(tick);
}

/** A LIST or DUE reply as schedules; one that no `schedule` call could have stored (written by another hand) is an IllegalStateError. */
function triples(reply: unknown[]): StoredSchedule[] {
  const out: StoredSchedule[] = [];
  for (let i = 0; i < reply.length; i += 3) {
    const name = reply[i] as string;
    const tick = reply[i + 2] as string;
    const spec = storedSpec(reply[i + 1]);
    const nextTick = tick === '' ? null : Number(tick);
    if (spec === undefined || !(nextTick === null || Number.isFinite(nextTick))) {
      throw new IllegalStateError(`The schedule ${JSON.stringify(name)} in Redis is damaged: not a schedule that schedule() makes`);
    }
    out.push({ name, spec, nextTick });
  }
  return out;
}
