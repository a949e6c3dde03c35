/**
 * Records stress histories of processes on one Redis queue: for each history
 * a fresh queue, a few submits made here, then one child process per racer
 * (./process.ts), each recording into a history file of its own with stamps
 * from one INCR key; the files and this process's calls are then merged
 * into one history (`mergeHistories`).
 *
 * With `killEvery`, this process SIGKILLs a child (chosen by the seed) each
 * time the children have announced that many more calls: the call it was in
 * stays pending. Processes share no clock, so no clock moves: each uses a
 * ManualClock of its own at the history's start, and leases outlive the
 * history; after it, this process's clock moves past them for the drain.
 * Views are left out of the plans: a lease whose process was killed ends
 * with a lastError saying so, which the model does not know.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ManualClock } from '../../clock.js';
import { RetryPolicy } from '../../policy.js';
import { RedisJobQueue } from '../../redis/queue.js';
import { HistoryFile } from '../../testing/file-log.js';
import { mergeHistories } from '../../testing/merge.js';
import { connectRedisStamps } from '../../testing/stamps.js';
import { prng } from '../random.js';
import { submitArgs } from './plan.js';
import type { StressProcessArgs } from './process.js';
import { account, randomSetup, type RecordedHistory } from './recorder.js';

const PROCESS_PATH = fileURLToPath(new URL('./process.js', import.meta.url));
const MAX_PREFILL = 4;

export interface ProcessRecorderOptions {
  processes: number;
  maxCalls: number;
  redisUrl: string;
  killEvery: number;
  /** The plans also release, remove and edit (see the plan's `edits`). */
  edits: boolean;
}

export class ProcessStressRecorder {
  readonly #options: ProcessRecorderOptions;
  readonly #scratch = mkdtempSync(join(tmpdir(), 'leasehold-stress-processes-'));
  #histories = 0;

  constructor(options: ProcessRecorderOptions) {
    this.#options = options;
  }

  async record(seed: number): Promise<RecordedHistory> {
    const random = prng(seed);
    const setup = randomSetup(random);
    const clock = new ManualClock(setup.start);
    const name = `leasehold-stress-${process.pid}-${Date.now()}-${this.#histories}`;
    const stampKey = `${name}:stamps`;
    const policy = new RetryPolicy(setup.policy.maxAttempts, setup.policy.base, setup.policy.max);
    const queue = await RedisJobQueue.connect({ redis: this.#options.redisUrl, name, policy, time: clock, capacity: setup.capacity, maxPayloadBytes: 64 });
    const stamps = await connectRedisStamps(this.#options.redisUrl, stampKey);
    const files = Array.from({ length: this.#options.processes + 1 }, (_, i) => join(this.#scratch, `history-${this.#histories}-${i}.jsonl`));
    const main = HistoryFile.open(files[this.#options.processes]!, this.#options.processes, stamps);
    try {
      const recorded = main.recorder.wrap(queue);
      const prefill = Math.floor(random() * (MAX_PREFILL + 1));
      for (let i = 0; i < prefill; i++) {
        const a = submitArgs(random, clock.now());
        try {
          await (a.priority === undefined && a.runAt === undefined ? recorded.submit(a.type, a.payload) : recorded.submit(a.type, a.payload, a.priority ?? 0, a.runAt));
        } catch {
          // Recorded: a full queue refuses, which is part of the history.
        }
      }
      const calls = Math.ceil(this.#options.maxCalls * (0.65 + 0.35 * random()));
      const children = files.slice(0, -1).map((file, thread) => {
        const args: StressProcessArgs = {
          redisUrl: this.#options.redisUrl, name, stampKey, file, thread, calls,
          seed: (seed ^ Math.imul(thread + 1, 0x9e3779b1)) >>> 0, start: setup.start, policy: setup.policy, capacity: setup.capacity,
          edits: this.#options.edits,
        };
        return fork(PROCESS_PATH, [JSON.stringify(args)], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
      });
      const killed = await this.#run(children, random);
      main.close();
      const history = mergeHistories(files.map((file, thread) => HistoryFile.read(file, thread)));
      const accounting = await account(queue, history, clock);
      return { seed, setup, calls: history, misbehaved: 0, killed, tookLiveForDead: false, ...accounting };
    } finally {
      await queue.close();
      await stamps.close();
      this.#histories++;
    }
  }

  /** Starts the children together, kills one every `killEvery` announced calls, and resolves once all have exited, with the kills. */
  async #run(children: ChildProcess[], random: () => number): Promise<number> {
    const exited = children.map((child) => new Promise<void>((resolve) => child.once('exit', () => resolve())));
    await Promise.all(children.map((child) => new Promise<void>((resolve, reject) => {
      child.once('message', () => resolve());
      child.once('exit', (code) => reject(new Error(`leasehold stress: a process exited (code ${code}) before it connected`)));
    })));
    let killed = 0;
    let announced = 0;
    const alive = new Set(children);
    children.forEach((child, i) => {
      void exited[i]!.then(() => alive.delete(child));
      child.on('message', () => {
        announced++;
        if (this.#options.killEvery > 0 && announced % this.#options.killEvery === 0 && alive.size > 0) {
          const victims = [...alive];
          const victim = victims[Math.floor(random() * victims.length)]!;
          alive.delete(victim);
          victim.kill('SIGKILL');
          killed++;
        }
      });
    });
    for (const child of children) child.send('go');
    await Promise.all(exited);
    return killed;
  }

  async close(): Promise<void> {
    rmSync(this.#scratch, { recursive: true, force: true });
  }
}
