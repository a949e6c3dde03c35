/**
 * Flows across threads: real worker threads take the children of many flows
 * and complete them at once, by every path a complete takes (with and without
 * a result, completeAndPoll), while parents wait. A parent outranks every
 * child, and each flow has a child of low priority: a parent made ready even
 * one child early would be leased before that child succeeded, which the
 * thread that leases it sees and reports (checked at every parent lease).
 */
import { describe, expect, it } from 'vitest';
import { JobQueue, RetryPolicy, systemClock, type FlowJob } from '../../dist/index.js';
import { startWorker, terminateAll, withTimeout, type RunningWorker } from '../support/helpers.js';

const THREADS = 3;
const FLOWS = 40;

interface Report {
  leased: string[];
  early: unknown[];
}

/** A root (a parent) with five leaves and a nested parent of three leaves; in each parent one leaf of low priority. */
function flow(f: number): FlowJob {
  let n = f * 100;
  const leaf = (priority = 0): FlowJob => ({ type: 'child', payload: String(n++), options: { priority } });
  const parent = (children: FlowJob[]): FlowJob => ({ type: 'parent', payload: JSON.stringify({ children: children.length }), options: { priority: 10 }, children });
  return parent([leaf(), leaf(), leaf(), leaf(), leaf(-1), parent([leaf(), leaf(), leaf(-1)])]);
}

describe('flows across threads', () => {
  it('never lease a parent before its last child succeeded, children completed by several threads at once', { timeout: 60_000 }, async () => {
    const queue = new JobQueue(systemClock, new RetryPolicy(1, 0, 0), { capacity: 1024 });
    const ids = Array.from({ length: FLOWS }, (_, f) => queue.submitFlow(flow(f))).flat();
    const controlBuffer = new SharedArrayBuffer(4);
    const workers: RunningWorker[] = [];
    try {
      for (let index = 0; index < THREADS; index++) {
        workers.push(await startWorker('flow-racer.mjs', { handle: queue.share(), index, total: ids.length, controlBuffer }));
      }
      const reports = (await withTimeout(Promise.all(workers.map((w) => w.result)), 45_000, 'the worker threads')) as Report[];
      expect(reports.flatMap((report) => report.early)).toEqual([]);
      // Each job leased once: no parent ran twice, none was left behind.
      expect(reports.flatMap((report) => report.leased).sort()).toEqual([...ids].sort());
      expect(queue.stats()).toMatchObject({ succeeded: ids.length, pending: 0, running: 0 });
      // The root's children's results as its handler saw them: the nested parent's and the leaves'.
      const root = queue.childResults(ids[0]!);
      expect(root).toEqual({ J2: undefined, J3: '1', J4: '2', J5: undefined, J6: '4', J7: `done J7` });
    } finally {
      await terminateAll(workers);
      queue.close();
    }
  });
});
