/**
 * Suite "memory": what one pending job costs in memory at JOBS pending. A
 * child process of its own (`node --expose-gc`, memory-child.mjs) reads its
 * resident set size after a full GC, creates a queue of capacity JOBS, submits
 * JOBS jobs (type "noop", a 64-byte payload) and reads it again after a full
 * GC. Per job: the RSS growth minus the jobs' own type and payload bytes,
 * divided by JOBS. The queue's creation is counted in the growth: a queue
 * sized for JOBS jobs exists to hold them. The share it takes empty is shown.
 */
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { QUICK } from './conditions.js';
import { type Row, type Suite, atMostBytes } from './report.js';

const JOBS = QUICK ? 100_000 : 1_000_000;
const PAYLOAD_BYTES = 64;
const TARGET_BYTES = 96;
const jobsLabel = JOBS >= 1_000_000 ? `${JOBS / 1_000_000}M` : `${JOBS / 1_000}k`;

interface Reading {
  readonly rss: number;
  readonly heapUsed: number;
  readonly external: number;
  readonly arrayBuffers: number;
}

interface ChildReport {
  readonly beforeQueue: Reading;
  readonly emptyQueue: Reading;
  readonly full: Reading;
  readonly pending: number;
  readonly typeBytes: number;
  readonly payloadBytes: number;
}

export const memory: Suite = {
  id: 'memory',
  title: `memory: bytes per pending job at ${jobsLabel} pending`,
  config: {
    'memory: jobs': `${JOBS.toLocaleString('en-US')} pending, in a queue of capacity ${JOBS.toLocaleString('en-US')}, arenaBytes 512 per job (only touched pages count)`,
    'memory: job': `type "noop", ${PAYLOAD_BYTES}-byte ASCII payload, priority 0, runAt now`,
    'memory: process': 'a fresh child process, node --expose-gc; readings after 3 full GCs',
    'memory: per job': '(RSS after the submits - RSS before the queue - jobs x (type + payload bytes)) / jobs',
  },
  async run() {
    const report = await measureInChild();
    const notes: string[] = [];
    if (report.pending !== JOBS) notes.push(`the child's queue holds ${report.pending} pending jobs, expected ${JOBS}`);
    const growth = report.full.rss - report.beforeQueue.rss;
    const ownBytes = JOBS * (report.typeBytes + report.payloadBytes);
    const perJob = (growth - ownBytes) / JOBS;
    const mib = (bytes: number) => (bytes / 2 ** 20).toFixed(1);
    const reading = (stage: string, r: Reading): Row => ({
      stage,
      'RSS MiB': mib(r.rss),
      'heap used MiB': mib(r.heapUsed),
      'external MiB': mib(r.external),
      'arrayBuffers MiB': mib(r.arrayBuffers),
    });
    return {
      tables: [
        {
          title: 'readings in the child (after full GCs)',
          rows: [
            reading('before the queue', report.beforeQueue),
            reading('empty queue created', report.emptyQueue),
            reading(`${JOBS.toLocaleString('en-US')} jobs pending`, report.full),
          ],
        },
        {
          title: 'per pending job',
          rows: [
            {
              'RSS growth MiB': mib(growth),
              'of which the empty queue MiB': mib(report.emptyQueue.rss - report.beforeQueue.rss),
              'minus own bytes MiB': `${mib(ownBytes)} (${JOBS.toLocaleString('en-US')} x (${report.typeBytes} + ${report.payloadBytes}) B)`,
              'RSS growth per job B': (growth / JOBS).toFixed(1),
              'overhead per job B': perJob.toFixed(1),
            },
          ],
        },
      ],
      unit: 'bytes per pending job beyond its type and payload',
      lowerIsBetter: true,
      bars: [{ label: `overhead per job at ${jobsLabel} pending`, value: perJob }],
      ratios: {},
      targets: [atMostBytes(`memory per pending job at ${jobsLabel} pending, beyond its type + payload`, perJob, TARGET_BYTES)],
      notes,
    };
  },
};

/** Runs memory-child.mjs once and returns its readings; throws if it fails or exits without them. */
async function measureInChild(): Promise<ChildReport> {
  // execArgv replaces the parent's (tsx's loader): the child runs plain ESM on the built code.
  const child = fork(new URL('./memory-child.mjs', import.meta.url), [String(JOBS), String(PAYLOAD_BYTES)], {
    execArgv: ['--expose-gc'],
    stdio: ['ignore', 'inherit', 'pipe', 'ipc'],
  });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  let report: ChildReport | undefined;
  child.on('message', (message) => (report = message as ChildReport));
  const [code, signal] = (await once(child, 'close')) as [number | null, NodeJS.Signals | null];
  if (code !== 0 || report === undefined) {
    throw new Error(`memory child exited with ${signal ?? `code ${code}`} ${report === undefined ? 'without a report' : ''}: ${stderr}`);
  }
  return report;
}
