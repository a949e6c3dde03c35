/**
 * Child process of suite "single", forked with the parent's tsx loader and
 * `--expose-gc`: times a fresh queue's round in a process that has freed
 * earlier queues, so that the round touches new shared pages for the first
 * time, as a long-running service does when it makes a queue after closing
 * others.
 *
 * First the JIT is warmed on WARM_ROUNDS rounds of one queue, then FREED big
 * queues (the default capacity, each run through a round so that its pages
 * were touched) are made and closed, and collected. Then `rounds` timed
 * rounds, each on a queue made before its clock starts, closed and collected
 * after it. Sends `{ millis: number[], notes: string[] }` to the parent.
 */
import { JobQueue, RetryPolicy, systemClock } from '../dist/index.js';
import { leaseholdRound, roundQueue } from './single-round.js';

const WARM_ROUNDS = 10;
const FREED = 4;

const rounds = Number(process.argv[2]);
const collect = (globalThis as { gc?: () => void }).gc;
if (collect === undefined) throw new Error('fresh-queue-child needs --expose-gc');
const notes: string[] = [];

const warm = roundQueue();
for (let i = 0; i < WARM_ROUNDS; i++) leaseholdRound(warm, notes);
warm.close();
for (let i = 0; i < FREED; i++) {
  const big = new JobQueue(systemClock, new RetryPolicy(3, 100, 1_000));
  leaseholdRound(big, notes);
  big.close();
}
collect();

const millis: number[] = [];
for (let i = 0; i < rounds; i++) {
  const queue = roundQueue();
  const start = performance.now();
  leaseholdRound(queue, notes);
  millis.push(performance.now() - start);
  queue.close();
  collect();
}
process.send!({ millis, notes }, () => process.disconnect());
