/**
 * Where one queue lives in Redis: every key of the queue named `name`.
 *
 * ```text
 * leasehold:{name}:jobSeq    string  last job number issued; INCR makes J1, J2, ...
 * leasehold:{name}:tokenSeq  string  last lease token issued; INCR, so tokens never repeat
 * leasehold:{name}:state     hash    what every call reads first, in one HGETALL (includes/call.lua):
 *                                    version: the data model (scripts.ts DATA_MODEL; GROUPED_MODEL once
 *                                      the queue named a group: its ready jobs take turns, see `turns`;
 *                                      BINARY_MODEL and up once it stored bytes, FLOW_MODEL and up once it
 *                                      stored a flow, TURNING_MODEL and up while `unturned` is walked: see
 *                                      scripts.ts);
 *                                    clock: the `now` the ready index is exact for (see `ready`);
 *                                    due: no delayed job's runAt and no lease's leaseUntil is earlier
 *                                      ('none': nothing falls due; absent: not known, catch up in full);
 *                                    sweepMin, sweepMax, sweepOffset, sweepAdd, sweepTo: a bounded
 *                                      catch-up of `ready` in progress (absent: none);
 *                                    paused: '1' while the queue is paused (polls lease nothing);
 *                                    limited: '1' while a rate limit is set or a job may be held;
 *                                    listed: '1' once `listing` exists; signal: the wake counter;
 *                                    policies: '1' while some job type has a retry policy of its own
 *                                    events: the event stream's bound while events are on (absent: off);
 *                                    eventsUntil: when (Redis's clock, ms) they go off unless a subscriber
 *                                      renews them; eventSeq: the events written so far
 *                                    capped: '1' while some job type or group has a concurrency cap or parked jobs;
 *                                    queueCap: the whole queue's concurrency cap (absent: none)
 * leasehold:{name}:pending   zset    PENDING jobs, ready or delayed: member n, score runAt (a flow's parent
 *                                    waiting for its children: +inf, never due; see includes/flows.lua)
 * leasehold:{name}:ready     zset    the PENDING jobs with runAt <= clock, all at score 0,
 *                                    member = sort key + n, so ZPOPMIN is the best job: the sort key
 *                                    is (priority, runAt), or (priority, turn) once groups take turns
 * leasehold:{name}:leases    zset    RUNNING jobs: member n, score leaseUntil
 * leasehold:{name}:tokens    hash    RUNNING jobs leased by a poll of several (their hash's `filed` is '1'):
 *                                    n -> its lease's token, and 'k' after it for a job with an idempotent
 *                                    key; a batch of completes reads them in one HMGET (a RUNNING job
 *                                    without one, leased alone or by data model 1: its hash says)
 * leasehold:{name}:dead      zset    DEAD jobs: member n, score n (submission order)
 * leasehold:{name}:deadAt    zset    DEAD jobs: member n, score when it died (the retain option's DEAD limits
 *                                    evict by it, oldest first; a DEAD job of data model 2 missing from it is
 *                                    filed by the first call with such a limit)
 * leasehold:{name}:finished  list    SUCCEEDED and CANCELLED jobs, oldest finished at the head
 * leasehold:{name}:counts    hash    succeeded, cancelled: how many of each are held
 * leasehold:{name}:pendingNums    zset  PENDING jobs by number: member n, score n (jobs() pages these)
 * leasehold:{name}:runningNums    zset  RUNNING jobs, the same way
 * leasehold:{name}:succeededNums  zset  SUCCEEDED jobs, the same way
 * leasehold:{name}:cancelledNums  zset  CANCELLED jobs, the same way (DEAD jobs: `dead` is already by number)
 * leasehold:{name}:listing   hash    present once jobs() was first called: the four sets above are kept
 *                                    only from then on; upTo, next: the jobs issued before, filed up to next
 * leasehold:{name}:signal    channel (never a key in data model 2) the wake counter, published as new work comes
 * leasehold:{name}:limits    hash    job type -> its rate limit, "max,windowMillis" (see RateLimit)
 * leasehold:{name}:windows   hash    job type -> its current window, "start,used": leases started in it
 * leasehold:{name}:policies  hash    job type -> its own retry policy, "maxAttempts,baseBackoff,maxBackoff,jitter"
 *                                    (see setRetryPolicy): a submit takes its maxAttempts, a failure its backoff
 * leasehold:{name}:caps      hash    job type -> its concurrency cap: at most that many of its jobs RUNNING
 * leasehold:{name}:running   hash    job type -> its jobs RUNNING, for each type in `caps` (see includes/caps.lua)
 * leasehold:{name}:parked:<type> zset  ready jobs of <type> a poll passed over as their type was at its cap:
 *                                    their `ready` member, score 0 (polls take them in their place once it has room)
 * leasehold:{name}:parkedTypes set   the types that have parked jobs
 * leasehold:{name}:groupCaps hash    group -> its concurrency cap (setGroupConcurrency)
 * leasehold:{name}:groupRunning hash group -> its jobs RUNNING, for each group in `groupCaps`
 * leasehold:{name}:parkedGroup:<group> zset  ready jobs of <group> a poll passed over as their group was at
 *                                    its cap, as the type's parked sets
 * leasehold:{name}:parkedGroups set  the groups that have parked jobs
 * leasehold:{name}:turns     hash    once groups take turns (includes/turns.lua), per turn level L (16 hex
 *                                    characters: the priority's sort key): L -> the turn last served,
 *                                    "L group" -> the group's last turn ("L " for the jobs without a group)
 * leasehold:{name}:unturned  zset    while groups start to take turns (TURNING_MODEL, includes/turns.lua): the
 *                                    ready, held and parked jobs filed before, by their member of then (score 0),
 *                                    that have no turn yet; each script gives the first of them theirs
 * leasehold:{name}:held      zset    ready jobs a poll passed over as their type's window was used up:
 *                                    member = their `ready` member, score = when the window opens
 * leasehold:{name}:finishes  channel (never a key) the numbers of jobs that just finished, for finished()
 * leasehold:{name}:cancels   channel (never a key) the number of a RUNNING job just cancelled, for the worker loops
 *                                    that hold its lease (RedisJobQueue#watchCancels) to abort its handler
 * leasehold:{name}:keys      hash    idempotent key -> n of the latest job submitted with it (see SUBMIT)
 * leasehold:{name}:job:<n>   hash    job Jn: type, payload, priority, status, attempts, runAt,
 *                                    lastError, token, leaseUntil, workerId, holder (its lease's process),
 *                                    submittedAt; and only when set: startedAt (its latest lease's start),
 *                                    finishedAt (its last finish), maxAttempts, result (a SUCCEEDED job's JSON text),
 *                                    key, keyTtl, timeout (its own
 *                                    lease length), filed ('1': its lease's token is in `tokens`),
 *                                    progress and progressToken (the latest report, and the lease that made it),
 *                                    logsDropped (log lines dropped past maxLogLines), group (submit's),
 *                                    turn (its turn as filed ready, once groups take turns);
 *                                    a flow's (includes/flows.lua): parent (a child's parent's n), children
 *                                    (a parent's children, comma-separated), waiting (a waiting parent's
 *                                    children not ended), ignoreChildFailure ('1': onChildFailure 'ignore')
 * leasehold:{name}:job:<n>:logs list  job Jn's log lines, oldest first (log.lua); deleted with the job's hash
 * leasehold:{name}:events  stream  the moves of jobs (completed, retrying, dead, cancelled), written only while
 *                                    `state` has `events` (the stream's bound, set by a subscriber; eventSeq counts
 *                                    the entries): see includes/events.lua and events.ts
 * leasehold:{name}:alive:<h> string  set while process h (host:pid) runs; a short TTL (see liveness.ts)
 * leasehold:{name}:schedules hash    schedule name -> its definition (JSON); only the schedule scripts
 * leasehold:{name}:scheduleTicks zset  schedule name, score its next tick not fired yet (none left: absent)
 * ```
 *
 * Every job is in exactly one of pending / leases / dead / finished, by its
 * status; `ready`, `held` and the parked sets are indexes over `pending` (a ready job is in one of them; while
 * groups start to take turns, one not given its turn yet is in `unturned` too, and perhaps in no other); and, once `listing`
 * exists and its jobs up to `upTo` are filed, in exactly one of the listing sets pendingNums / runningNums /
 * succeededNums / dead / cancelledNums. The braces are a hash tag: in
 * Redis Cluster all keys of one queue share a slot, so one script may touch
 * them all, and queues of different names never share a key (and spread
 * over the masters by their names' slots).
 *
 * Every script receives one fixed key as KEYS[1] (`jobSeq`, which names the
 * queue's slot), plus the hash of each job it is told about (complete, fail,
 * extend, view, retryDead, cancel). The other fixed keys are named inside the
 * script from the first one's prefix, and so are the job hashes it
 * discovers (from `jobPrefix`): the job a poll
 * pops, expired leases, jobs whose runAt came, jobs a submit creates or
 * evicts, dead letters, and the liveness keys of lease holders. Open-source Redis Cluster runs such scripts, as
 * those keys hash to the declared keys' slot; a proxy that insists on every
 * key in KEYS (some managed "cluster proxies") refuses them.
 *
 * Data model 1 had no `state`: the clock and the wake counter were strings of
 * their own (`clock`, `signal`), and so were the pause (`paused`) and a
 * catch-up in progress (the hash `sweep`). The first call that finds a queue
 * without `state` converts it in place (includes/call.lua, `migrate`); those
 * names stay in KEY_NAMES for that, and for the channel `signal`. Absent keys
 * mean no key taken, no rate limits, not listed yet (the first `jobs()` files
 * every job then). `finishes` and `signal` are among the names only so that
 * the scripts know them; a channel is no key, and Redis Cluster delivers it
 * to every node.
 */

/** The fixed keys, by the names the scripts give them (K.jobSeq, K.tokenSeq, ...): each is the queue's prefix and its name. */
export const KEY_NAMES = ['jobSeq', 'tokenSeq', 'clock', 'pending', 'ready', 'leases', 'dead', 'finished', 'counts', 'signal', 'sweep', 'paused',
  'finishes', 'keys', 'pendingNums', 'runningNums', 'succeededNums', 'cancelledNums', 'listing', 'limits', 'windows', 'held', 'state', 'tokens',
  'policies', 'cancels', 'deadAt', 'events', 'caps', 'running', 'parkedTypes', 'groupCaps', 'groupRunning', 'parkedGroups', 'turns', 'unturned'] as const;
export type KeyName = (typeof KEY_NAMES)[number];

export interface QueueKeys {
  /**
   * The one fixed key every script receives, as KEYS[1] (`jobSeq`): it names
   * the queue's slot, and the script builds the other fixed keys from it.
   */
  readonly declared: readonly [string];
  /** The same keys by name. */
  readonly named: Readonly<Record<KeyName, string>>;
  /** Job n's hash is `jobPrefix + n`. */
  readonly jobPrefix: string;
  /** Process h's liveness key is `alivePrefix + h`. */
  readonly alivePrefix: string;
}

export function queueKeys(name: string): QueueKeys {
  const base = `leasehold:{${name}}:`;
  const named = Object.fromEntries(KEY_NAMES.map((key) => [key, base + key])) as Record<KeyName, string>;
  return { declared: [named.jobSeq], named, jobPrefix: `${base}job:`, alivePrefix: `${base}alive:` };
}

/** The hash of job number `n` (a job id's digits). */
export function jobKey(keys: QueueKeys, n: string): string {
  return keys.jobPrefix + n;
}

/** The keys of a queue's schedules, declared (KEYS[1], KEYS[2]) to every schedule script. */
export function scheduleKeys(name: string): readonly [schedules: string, ticks: string] {
  const base = `leasehold:{${name}}:`;
  return [`${base}schedules`, `${base}scheduleTicks`];
}
