/**
 * The Lua of the Redis queue: one command per operation, each one atomic
 * transition, in its own file under src/redis/lua/ (its KEYS, ARGV, replies
 * and refusals written at its top), with the helpers they share in
 * src/redis/lua/includes/. Every command first brings the queue up to now
 * (includes/catch-up.lua), then does its own work, and replies with a table
 * whose first element is 0 or a negative `Refusal` (which `refusalError`
 * turns into the error; a refused command has changed nothing but the
 * bringing up to now, which any call would have done).
 *
 * Bringing the queue up to now is bounded: a command does at most
 * CATCH_UP_BATCH items of it (jobs entering or leaving the ready index,
 * expired leases). When more are due it stops there and returns CATCHING_UP
 * instead of doing its work; the client calls it again until it runs, so
 * no call holds Redis for long whatever the backlog, and every command still
 * runs on a queue that is up to its `now`.
 *
 * The files make one Redis Functions library (`library().code`), loaded once
 * per server and called by FCALL, so no call defines the helpers again; for
 * a server without Functions (before Redis 7), each command is also a
 * script of its own (`library().scriptOf`) for EVALSHA. The constants the
 * Lua shares with TypeScript are declared here, once, and prepended.
 *
 * Lua in Redis is 5.1 with doubles only. Numbers cross the boundary as text:
 * the client sends JavaScript's exact shortest form, Redis writes a Lua number
 * argument with %.17g (exact), and scripts return numbers as %.17g text
 * (`num`) because a Lua number in a reply is cut to an integer and `tostring`
 * keeps only 14 digits.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Refusal } from '../errors.js';
import { SCAN_BUDGET } from '../validate/query.js';
import { KEY_NAMES } from './keys.js';
import { LEASE_FIELDS } from './replies.js';
import { LIVENESS_LEFT_MILLIS, LIVENESS_TTL_MILLIS, PROCESS_GONE } from './liveness.js';

/** The most items of catching up (see above) one script does: each costs a few µs of Redis time. */
export const CATCH_UP_BATCH = 50;

/** A script's first reply element when it stopped to let Redis serve others before it caught up: call it again. */
export const CATCHING_UP = 1;

/**
 * The layout of a queue's keys the scripts write (keys.ts), stored in its state hash. Data model 1
 * (no state hash) is converted in place by the first call that finds it (includes/call.lua).
 */
export const DATA_MODEL = 2;

/**
 * Data model 2 with groups taking turns (includes/turns.lua): the version a queue's state hash says
 * from the first group it names on. A build without groups refuses such a queue (NewerDataModel).
 */
export const GROUPED_MODEL = 3;

/**
 * Data model 2 (BINARY_MODEL) or 3 (GROUPED_BINARY_MODEL) with binary values: the version a queue's
 * state hash says from the first payload or result stored as raw bytes on (a job's hash marks each with
 * binaryPayload / binaryResult). A build without bytes refuses such a queue (NewerDataModel) rather than
 * lease the bytes decoded as text, or write a text payload and leave the mark (includes/call.lua).
 */
export const BINARY_MODEL = 4;
export const GROUPED_BINARY_MODEL = 5;

/**
 * Data models 2 to 5 with flows (includes/flows.lua): FLOW_MODEL plus 1 with groups, plus 2 with bytes
 * (6, 7, 8, 9), the version a queue's state hash says from the first flow it stores on. A waiting parent
 * is PENDING in `pending` at +inf, never due: a build without flows refuses such a queue (NewerDataModel)
 * rather than lease, edit or count it as a job of its own.
 */
export const FLOW_MODEL = 6;

/**
 * A grouped data model (3, 5, 7 or 9) while its turns start (includes/turns.lua): TURNING_MODEL plus
 * its offset from DATA_MODEL (11, 13, 15, 17), from the first group a queue names until every job filed
 * ready before has its turn. That walk takes a batch of CATCH_UP_BATCH jobs per script, before any
 * other work; the ready index is half in `unturned` meanwhile, so a build that cannot continue the walk
 * refuses the queue (NewerDataModel) until it is done, and accepts it again after.
 */
export const TURNING_MODEL = 10;

/** The arguments every script takes first, in this order (RedisJobQueue fills them in for every call); its own follow. */
export const COMMON_ARGS = ['holder', 'now', 'seed', 'settings'] as const;

/**
 * What the common `settings` argument holds, comma-separated in this order ('' for none): what a
 * client fixes when it connects. One argument rather than ten: a library call parses it only when
 * its text differs from the last call's (includes/call.lua), instead of reading ten on every call.
 */
export const SETTINGS = ['maxAttempts', 'baseBackoffMillis', 'maxBackoffMillis', 'jitter', 'partitions', 'partition', 'maxFinished', 'maxAgeMillis',
  'maxDead', 'maxDeadAgeMillis'] as const;

/** The most dead jobs one deadLetters call returns: a page, so that no call grows with the dead-letter list. */
export const DEAD_LETTERS_PAGE = 50;

/** The most jobs one jobs() call files in the listing sets while the first jobs() builds them (see includes/listing.lua). */
export const LISTING_BATCH = 200;

/** Each command's file in src/redis/lua/. */
const COMMAND_FILES = {
  submit: 'submit',
  poll: 'poll',
  complete: 'complete',
  completeAndPoll: 'complete-and-poll',
  completeManyAndPoll: 'complete-many-and-poll',
  completeAndPollMerged: 'complete-and-poll-merged',
  fail: 'fail',
  release: 'release',
  extend: 'extend',
  progress: 'progress',
  log: 'log',
  logs: 'logs',
  view: 'view',
  deadLetters: 'dead-letters',
  jobs: 'jobs',
  retryDead: 'retry-dead',
  cancel: 'cancel',
  remove: 'remove',
  stats: 'stats',
  pause: 'pause',
  resume: 'resume',
  setRateLimit: 'set-rate-limit',
  rateLimits: 'rate-limits',
  setRetryPolicy: 'set-retry-policy',
  retryPolicies: 'retry-policies',
  changePriority: 'change-priority',
  changeDelay: 'change-delay',
  promote: 'promote',
  updatePayload: 'update-payload',
  setConcurrency: 'set-concurrency',
  concurrencyCaps: 'concurrency-caps',
  setGroupConcurrency: 'set-group-concurrency',
  groupConcurrencyCaps: 'group-concurrency-caps',
  submitFlow: 'submit-flow',
  childResults: 'child-results',
} as const;

export type Command = keyof typeof COMMAND_FILES;

/**
 * The commands that may run behind the clock (includes/call.lua, `behind`): a call whose now is a little
 * before the last call's takes the ready index as that call left it, rather than sweep it back and forth.
 * They only file new jobs or take ready ones, and each checks what it takes against its own now.
 */
const MAY_RUN_BEHIND: ReadonlySet<Command> = new Set(['submit', 'poll', 'complete', 'completeAndPoll', 'completeManyAndPoll',
  'completeAndPollMerged']);

/** The helpers in src/redis/lua/includes/, in order: each may use those before it. */
const INCLUDES = ['call', 'encoding', 'turns', 'events', 'caps', 'jobs', 'flows', 'leases', 'catch-up', 'listing', 'pending'] as const;

/** The refusals by name, as the Lua compares them (`Refusal.NotFound`...). */
const REFUSALS: Record<string, Refusal> = {
  NotFound: Refusal.NotFound, Evicted: Refusal.Evicted, StaleLease: Refusal.StaleLease, NotPending: Refusal.NotPending,
  NotDead: Refusal.NotDead, NoSlot: Refusal.NoSlot, NoBytes: Refusal.NoBytes,
  NewerDataModel: Refusal.NewerDataModel, Running: Refusal.Running, NotEditable: Refusal.NotEditable,
};

/** The constants the Lua shares with TypeScript, as Lua locals: the first lines of the library and of every script. */
function constants(): string {
  const table = (entries: [string, string | number][]) => `{ ${entries.map(([name, value]) => `${name} = ${value}`).join(', ')} }`;
  return [
    `local KEY_NAMES = { ${KEY_NAMES.map((name) => `'${name}'`).join(', ')} }`,
    // KEYS[1] is the one fixed key declared (keys.ts): the call names the others from its prefix.
    `local DECLARED_SUFFIX = '${KEY_NAMES[0]}'`,
    'local FIXED = 1',
    `local DATA_MODEL, GROUPED_MODEL, BINARY_MODEL, GROUPED_BINARY_MODEL = '${DATA_MODEL}', '${GROUPED_MODEL}', '${BINARY_MODEL}', '${GROUPED_BINARY_MODEL}'`,
    `local FLOW_MODEL, TURNING_MODEL = ${FLOW_MODEL}, ${TURNING_MODEL}`,
    // Marks a token in K.tokens as a keyed job's (keys.ts).
    "local KEYED = 'k'",
    `local ARG = ${table(COMMON_ARGS.map((name, i) => [name, i + 1]))}`,
    `local OWN = ${COMMON_ARGS.length}`,
    `local Refusal = ${table(Object.entries(REFUSALS))}`,
    `local CATCH_UP_BATCH, CATCHING_UP, LEASE_FIELDS = ${CATCH_UP_BATCH}, ${CATCHING_UP}, ${LEASE_FIELDS}`,
    `local DEAD_LETTERS_PAGE, LISTING_BATCH, SCAN_BUDGET = ${DEAD_LETTERS_PAGE}, ${LISTING_BATCH}, ${SCAN_BUDGET}`,
    `local LIVENESS_TTL_MILLIS, LIVENESS_LEFT_MILLIS, PROCESS_GONE = ${LIVENESS_TTL_MILLIS}, ${LIVENESS_LEFT_MILLIS}, ${JSON.stringify(PROCESS_GONE)}`,
    '',
  ].join('\n');
}

/**
 * Where the .lua files are: beside this module when it runs from src/, and
 * in the package's src/redis/lua/ when it runs from dist/redis/ (the
 * package ships src/ with dist/, from a clone and when installed alike).
 */
function luaFolder(): string {
  const candidates = [new URL('./lua/', import.meta.url), new URL('../../src/redis/lua/', import.meta.url)].map((url) => fileURLToPath(url));
  const found = candidates.find((folder) => existsSync(`${folder}submit.lua`));
  if (found === undefined) throw new Error(`leasehold's Lua files are missing: looked in ${candidates.join(' and ')}`);
  return found;
}

/** The queue's commands as one Functions library and, for servers without Functions, as scripts. */
export interface Library {
  /** The library's name: `leasehold_` and a hash of its code, so that two versions of leasehold on one server do not replace each other's. */
  readonly name: string;
  /** What FUNCTION LOAD takes. */
  readonly code: string;
  /** The function FCALL names for `command`. */
  functionOf(command: Command): string;
  /** `command` as a script of its own, for EVALSHA (helpers included). */
  scriptOf(command: Command): Script;
}

let loaded: Library | undefined;

/** The library, read from the .lua files on first use. */
export function library(): Library {
  return (loaded ??= readLibrary(luaFolder()));
}

function readLibrary(folder: string): Library {
  const read = (file: string) => readFileSync(`${folder}${file}.lua`, 'utf8');
  const helpers = constants() + INCLUDES.map((name) => read(`includes/${name}`)).join('\n');
  const bodies = Object.fromEntries(Object.entries(COMMAND_FILES).map(([command, file]) => [command, read(file)])) as Record<Command, string>;
  const name = `leasehold_${createHash('sha1').update(helpers).update(JSON.stringify(bodies)).digest('hex').slice(0, 16)}`;
  const functionOf = (command: Command) => `${name}_${command}`;
  // Each function: the call's state set (includes/call.lua; a queue of a newer data model refused), the queue brought up to now, then the command's own file.
  const prelude = (command: Command) =>
    `local refused = begin(KEYS, ARGV)\nif refused then return refused end\nif not caughtUp(${MAY_RUN_BEHIND.has(command)}) then return { CATCHING_UP } end\n`;
  const registered = (Object.keys(bodies) as Command[]).map((command) =>
    `redis.register_function('${functionOf(command)}', function(KEYS, ARGV)\n${prelude(command)}${bodies[command]}\nend)\n`);
  const code = `#!lua name=${name}\n${helpers}\n${registered.join('\n')}`;
  const scripts = new Map<Command, Script>();
  return {
    name,
    code,
    functionOf,
    scriptOf: (command) => {
      let script = scripts.get(command);
      if (script === undefined) {
        script = luaScript(`${helpers}\n${prelude(command)}${bodies[command]}`);
        scripts.set(command, script);
      }
      return script;
    },
  };
}

export interface Script {
  readonly lua: string;
  /** What EVALSHA names it by. */
  readonly sha: string;
}

/** A script of its own text alone (one that does not bring the queue up to now: schedules.ts). */
export function luaScript(lua: string): Script {
  return { lua, sha: createHash('sha1').update(lua).digest('hex') };
}
