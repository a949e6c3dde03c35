/**
 * Scheduled histories that failed before the fix of the race they found:
 * each replays exactly (the scheduler's options), so each stays a test of
 * that fix. docs/concurrency.md ("What it found", and the table of races
 * stress found) tells each race. A kill is planned at a step number: a change
 * of the core that adds or removes steps before it moves the kill elsewhere,
 * so each kill seed also checks the call it lands in.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { LOCK_TIMEOUT_MILLIS, ScheduledRecorder, replayCommand, type ScheduledHistoryOptions } from './recorder.js';
import { expectContractKept, expectRecovered } from './recovery.js';

const CHECKED: [string, ScheduledHistoryOptions][] = [
  [
    'a journaled submit refused for room while the only finished job was frozen by its complete in flight',
    { seed: 1200, backend: 'journal', threads: 4, calls: 5, strategy: 'pct', depth: 3 },
  ],
  [
    'a journaled poll that passed over a ready job frozen by its submit in flight, after stats() counted it',
    { seed: 1213, backend: 'journal', threads: 4, calls: 5, strategy: 'pct', depth: 1 },
  ],
  [
    'a journaled poll that passed over a frozen ready job (a second history)',
    { seed: 1234, backend: 'journal', threads: 4, calls: 5, strategy: 'pct', depth: 1 },
  ],
  [
    'a holder taken for dead placed its job after the takeover, its payload in chunks the taker had reused',
    { seed: 1054184676, backend: 'memory', threads: 4, calls: 5, strategy: 'pct', depth: 2, stall: { thread: 1, step: 12, millis: 100 } },
  ],
  [
    'a locked poll taken for dead after its claim started again, and the job it had leased stayed RUNNING, unreported',
    { seed: 1054184704, backend: 'memory', threads: 2, calls: 5, strategy: 'pct', depth: 1, stall: { thread: 0, step: 49, millis: 100 } },
  ],
  [
    'a journaled poll taken for dead read the rings its successor rebuilt, and leased a worse job than the best',
    { seed: 1054184670, backend: 'journal', threads: 3, calls: 5, strategy: 'pct', depth: 2, stall: { thread: 1, step: 65, millis: 100 } },
  ],
  [
    'a submit taken for dead took a slot past the capacity (RangeError in it and in the next rebuild)',
    { seed: 1054184767, backend: 'journal', threads: 3, calls: 5, strategy: 'pct', depth: 2, stall: { thread: 2, step: 49, millis: 100 } },
  ],
  [
    'a commit leader taken for dead counted pending tickets from past the head, 2^32 of them',
    { seed: 1054184616, backend: 'journal', threads: 4, calls: 5, strategy: 'pct', depth: 3, stall: { thread: 2, step: 43, millis: 100 } },
  ],
  [
    'a poller taken for dead moved a ring head past its tail after the rebuild restarted the positions (livelock)',
    { seed: 668744347, backend: 'memory', threads: 2, calls: 5, strategy: 'random', stall: { thread: 1, step: 64, millis: 100 } },
  ],
  [
    'a holder taken for dead noted a journal write over its successor\'s and set the commit head back (a commit waited forever)',
    { seed: 1782672282, backend: 'journal', threads: 3, calls: 5, strategy: 'pct', depth: 3, stall: { thread: 2, step: 135, millis: 100 } },
  ],
  [
    'a poll whose lease ran from its clock reading, before another thread moved the clock and saw the job still pending',
    { seed: 1493342610, backend: 'memory', threads: 4, calls: 5, strategy: 'pct', depth: 3 },
  ],
  [
    'an extend whose lease ran from its clock reading, before another thread moved the clock and saw the old lease',
    {
      seed: 1158835594, backend: 'memory', threads: 4, calls: 5, strategy: 'pct', depth: 1,
      stall: [{ thread: 1, step: 98, millis: 100 }, { thread: 3, step: 23, millis: 100 }],
    },
  ],
  [
    'a lock-free view showed a job its submit had placed and not filed (its thread killed there), and a poll then passed it over',
    { seed: 1677297324, backend: 'memory', threads: 3, calls: 8, strategy: 'pct', depth: 1, kill: { thread: 2, step: 81 }, reservations: true },
  ],
  [
    'a lock-free poll between an updatePayload\'s CAS and its filing saw the ready job nowhere and leased a worse one',
    { seed: 1960482927, backend: 'memory', threads: 4, calls: 5, strategy: 'random', edits: true },
  ],
  [
    'a lock-free completeAndPoll inside a changePriority of the best ready job leased a worse one',
    { seed: 50495, backend: 'memory', threads: 4, calls: 5, strategy: 'random', edits: true },
  ],
];

/** Histories with a thread killed at a chosen step: the call the kill must land in, and the queue must recover. */
const KILLED: [string, ScheduledHistoryOptions, string][] = [
  [
    // Step 22 of thread 0 is the CAS that makes LEVEL_SEQ odd as its submit opens priority 0's level; it is
    // killed before step 23, the first store of the new order. Where a rewrite added 1 at each end, the word
    // stayed odd (the takeover's rebuild added 1 twice), every later poll spun on it, and the scheduler reported
    // a livelock (ScheduleError, after 200,000 steps).
    'a lock holder killed inside its rewrite of the ready level table',
    { seed: 4, backend: 'memory', threads: 2, calls: 5, strategy: 'pct', depth: 2, kill: { thread: 0, step: 23 } },
    'submit',
  ],
];

/**
 * Histories with a lock holder stalled past the patience at a chosen step (the step the stall lands in must be one of
 * the named call's), checked as relaxed-poll: the stalled call is the one stated to be at risk, and must still come out
 * as a legal history.
 */
const STALLED: [string, ScheduledHistoryOptions, string][] = [
  [
    // Thread 0's delayed submit has placed its job (the CAS) and files it in the delayed heap: stalled at that
    // filing's look at the lock (step 38), it is taken over by thread 1. Where LockLost then started the submit again,
    // it placed the job a second time under a new id, which no submit returned.
    'a lock holder taken for dead after its submit placed the job, which then placed it again',
    { seed: 3, backend: 'memory', threads: 2, calls: 5, strategy: 'pct', depth: 2, stall: { thread: 0, step: 38, millis: 5 * LOCK_TIMEOUT_MILLIS } },
    'submit',
  ],
  [
    // Thread 0's submit opens a new priority level: stalled between its CAS that makes LEVEL_SEQ odd and its first
    // store of the new order (step 116), while thread 2 polls lock-free. The poll read the odd word again and again,
    // never reaching a wait, so the virtual clock never moved to the stall's end (ScheduleError, a livelock after
    // 200,000 steps; a holder killed there would leave it spinning for real). It now takes the lock after 64 reads.
    'a lock holder stalled inside its rewrite of the ready level table, a lock-free poll waiting on it',
    { seed: 1411669305, backend: 'memory', threads: 3, calls: 5, strategy: 'pct', depth: 2, stall: { thread: 0, step: 116, millis: 100 } },
    'submit',
  ],
  [
    // Thread 0's locked poll is stalled at its step 10 and taken over by thread 1, whose rebuild is stalled in turn
    // inside its clear of the level table (step 114). Thread 0 woke, took itself for the holder and spun on the odd
    // LEVEL_SEQ in its locked poll; no time passed (a livelock). A locked poll now looks at the lock every 64 reads.
    'a holder taken for dead spinning in its locked poll on its successor\'s rewrite of the level table, the successor stalled',
    {
      seed: 3930415662, backend: 'memory', threads: 2, calls: 5, strategy: 'random',
      stall: [{ thread: 0, step: 10, millis: 100 }, { thread: 1, step: 114, millis: 100 }],
    },
    'poll',
  ],
  [
    // Thread 0's submit evicts at capacity 4: stalled inside the pop of the finish order (step 111), it is taken for
    // dead and the taker rebuilds the order. Awake, it went on popping: the entry it dropped was the taker's, whose
    // cancelled job then could never be evicted, and its own submit, started again, was refused as full.
    'a holder taken for dead dropped an entry of the finish order its successor had rebuilt (a submit refused as full)',
    { seed: 132176050, backend: 'memory', threads: 3, calls: 5, strategy: 'pct', depth: 3, stall: { thread: 0, step: 111, millis: 100 } },
    'submit',
  ],
  [
    // Thread 1's locked extend is stalled at its step 15 and taken for dead. Awake, it met a refusal it could not
    // stand by (a holder of an older time seemed at work, maintenance due: only the lock's holder can settle that)
    // and looped in its locked retry, never looking at the lock (a livelock). A locked retry now looks first.
    'a locked extend taken for dead retried without end, never looking at the lock it had lost',
    { seed: 403584824, backend: 'memory', threads: 3, calls: 5, strategy: 'pct', depth: 3, stall: { thread: 1, step: 15, millis: 100 } },
    'extend',
  ],
  [
    // Thread 2's lock-free poll is stalled twice inside its claim (steps 120 and 123) and taken for dead; the rebuild
    // after it numbers the ready levels anew. Awake, it went on through the levels in the order it had read before,
    // and leased a priority-1 job from the level it took for priority 2's, past a ready priority-2 job. A lock-free
    // claim now looks at LEVEL_SEQ first, and takes the lock if the table changed.
    'a lock-free poll taken for dead claimed from a level the rebuild had renumbered, past a better ready job',
    {
      seed: 1063967928, backend: 'memory', threads: 3, calls: 5, strategy: 'pct', depth: 2,
      stall: [{ thread: 2, step: 120, millis: 100 }, { thread: 2, step: 123, millis: 100 }],
    },
    'poll',
  ],
  [
    // Thread 0's updatePayload looked at the lock, then was stalled at its read of J1's word (step 17) and taken for
    // dead; thread 1 promoted and removed J1. Awake, the edit read the word FREE and refused the job as not PENDING
    // (IllegalStateError), a state no order of the calls shows: the model finds J1 pending or gone.
    'an edit taken for dead read the word its successor had left (the job removed) and refused it as not pending',
    { seed: 1834748881, backend: 'memory', threads: 2, calls: 5, strategy: 'pct', depth: 3, stall: { thread: 0, step: 17, millis: 100 }, edits: true },
    'updatePayload',
  ],
  [
    // Thread 0's stats() holds the lock, stalled past the patience just after its clock reading (step 144); thread 1
    // takes the lock over and rebuilds. Awake, thread 0 caught up and summed the counts beside that rebuild, half done:
    // J1, due since the clock moved, was still counted delayed. A locked read now looks at the lock once it has read.
    'a stats() taken for dead summed the counts its taker was rebuilding (a due job shown delayed)',
    {
      seed: 1758730761, backend: 'memory', threads: 2, calls: 8, strategy: 'pct', depth: 3,
      stall: [{ thread: 0, step: 144, millis: 100 }, { thread: 1, step: 145, millis: 100 }], reservations: true,
    },
    'stats',
  ],
  [
    // Thread 2's submit placed J6 and was stalled before filing it, holding the lock. Thread 0's lock-free
    // completeAndPoll of J6 was refused as stale (so J6 existed), and its next completeAndPoll polled the rings
    // without J6 and leased a worse job. A lock-free refusal now stands only if no other thread holds the lock.
    'a lock-free refusal showed a job its stalled holder had placed and not filed, and a poll then passed it over',
    { seed: 1994065520, backend: 'memory', threads: 3, calls: 5, strategy: 'pct', depth: 3, stall: { thread: 2, step: 122, millis: 100 } },
    'submit',
  ],
];

describe('scheduled histories that found a race', () => {
  const recorder = new ScheduledRecorder(4, 8);
  afterAll(() => recorder.close());

  it.each(CHECKED)('%s: now relaxed-poll, nothing leased twice or lost', async (_name, options) => {
    await expectContractKept(await recorder.record(options));
  });

  it.each(KILLED)('%s: now recovers', async (_name, options, killedIn) => {
    const history = await recorder.record(options);
    expect(history.killedIn, `the kill should land in ${killedIn}: ${replayCommand(options)}`).toBe(killedIn);
    await expectRecovered(history, replayCommand(options));
  });

  it.each(STALLED)('%s: now relaxed-poll', async (_name, options, stalledIn) => {
    const history = await recorder.record(options);
    expect(history.calls.find((c) => c.presumedDead === true)?.call.op, `the stall should land in ${stalledIn}: ${replayCommand(options)}`).toBe(stalledIn);
    await expectContractKept(history);
  });
});

