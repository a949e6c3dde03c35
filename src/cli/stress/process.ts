/**
 * Process entry of `leasehold stress --backend redis --processes`
 * (./process-recorder.ts): connects to the history's Redis queue with a
 * ManualClock of its own at the history's start (processes share no clock,
 * so it never moves), makes its seeded plan of calls without clock moves or
 * views, each recorded into its history file with stamps from the history's
 * INCR key, and tells the parent (IPC) before each call, which is how the
 * parent counts calls to kill by.
 */
import { ManualClock } from '../../clock.js';
import { RetryPolicy } from '../../policy.js';
import { RedisJobQueue } from '../../redis/queue.js';
import { HistoryFile } from '../../testing/file-log.js';
import { connectRedisStamps } from '../../testing/stamps.js';
import { runPlan } from './plan.js';

export interface StressProcessArgs {
  redisUrl: string;
  name: string;
  stampKey: string;
  file: string;
  thread: number;
  seed: number;
  calls: number;
  start: number;
  policy: { maxAttempts: number; base: number; max: number };
  capacity: number;
  /** The plan also releases, removes and edits. */
  edits: boolean;
}

const args = JSON.parse(process.argv[2]!) as StressProcessArgs;
const clock = new ManualClock(args.start);
const queue = await RedisJobQueue.connect({
  redis: args.redisUrl, name: args.name, time: clock, capacity: args.capacity, maxPayloadBytes: 64,
  policy: new RetryPolicy(args.policy.maxAttempts, args.policy.base, args.policy.max),
});
const stamps = await connectRedisStamps(args.redisUrl, args.stampKey);
const file = HistoryFile.open(args.file, args.thread, stamps);
// Says it is connected, then waits for the parent's go, so that every process starts its calls at once.
process.send!('ready');
await new Promise<void>((resolve) => process.once('message', () => resolve()));
try {
  await runPlan({
    queue: file.recorder.wrap(queue),
    recorder: file.recorder,
    clock,
    workerId: `p${args.thread}`,
    seed: args.seed,
    calls: args.calls,
    omit: ['advance', 'view'],
    edits: args.edits,
    // Counted before the call: the parent kills by this count. Waits for the send, so the count is never behind.
    beforeCall: () => new Promise<void>((resolve) => process.send!('call', undefined, undefined, () => resolve())),
  });
} finally {
  file.close();
  await queue.close();
  await stamps.close();
}
process.disconnect();
