/**
 * The dashboard's waiting-children tab: a flow's parents waiting for their
 * children, counted apart from the delayed jobs (stats' `delayed` holds them),
 * listed on their own tab, and back on waiting once their last child succeeded.
 */
import { describe, expect, it } from 'vitest';
import { JobQueue, ManualClock, RetryPolicy } from '../../dist/index.js';
import { createDashboardAdapter } from '../../dist/dashboard/index.js';
import { T0, mustPollSync } from '../support/helpers.js';
import { closeJournal, openJournal, tempJournal } from '../support/journal-harness.js';

const VARIANTS = [
  { name: 'memory', open: (clock: ManualClock) => new JobQueue(clock, new RetryPolicy(3, 0, 0)), close: (queue: JobQueue) => void queue.close() },
  { name: 'journal', open: (clock: ManualClock) => openJournal(tempJournal(), clock, new RetryPolicy(3, 0, 0)), close: closeJournal },
];

for (const variant of VARIANTS) {
  describe(`dashboard waiting-children tab [${variant.name}]`, () => {
    it('counts and lists the parents that wait for their children, apart from the delayed jobs', async () => {
      const clock = new ManualClock(T0);
      const queue = variant.open(clock);
      const adapter = await createDashboardAdapter(queue, { name: 'flows', time: clock });
      const [root, mid, leaf1] = queue.submitFlow({ type: 'root', children: [{ type: 'mid', children: [{ type: 'leaf' }] }] });
      const delayed = queue.submit('later', 'x', { delayMillis: 60_000 });
      expect(queue.stats()).toMatchObject({ pending: 4, ready: 1, delayed: 3, waitingChildren: 2 });
      expect(await adapter.getJobCounts()).toMatchObject({ 'waiting-children': 2, delayed: 1, waiting: 1 });
      const listed = async (tab: 'waiting-children' | 'delayed' | 'waiting') => (await adapter.getJobs([tab])).map((job) => job.toJSON().id);
      expect(await listed('waiting-children')).toEqual([root, mid]);
      expect(await listed('delayed')).toEqual([delayed]);
      expect(await (await adapter.getJob(root!))!.getState()).toBe('waiting-children');
      const lease = mustPollSync(queue, leaf1);
      queue.complete(leaf1!, lease.token);
      expect(await adapter.getJobCounts()).toMatchObject({ 'waiting-children': 1, delayed: 1, waiting: 1 });
      expect(await listed('waiting')).toEqual([mid]);
      // A cancelled waiting parent leaves the tab too.
      queue.cancel(root!);
      expect(queue.stats()).toMatchObject({ waitingChildren: 0, delayed: 1 });
      expect(await listed('waiting-children')).toEqual([]);
      variant.close(queue);
    });

    it('show no waitingChildren in stats() of a queue that never had a flow', () => {
      const queue = variant.open(new ManualClock(T0));
      queue.submit('t', 'x');
      expect(queue.stats()).not.toHaveProperty('waitingChildren');
      variant.close(queue);
    });
  });
}
