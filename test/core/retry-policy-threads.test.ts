import { describe, expect, it } from 'vitest';
import { JobQueue, ManualClock, RetryPolicy } from '../../dist/index.js';
import { T0, startWorker, terminateAll, withTimeout } from '../support/helpers.js';

describe('retry policies per job type across threads', () => {
  it("are one table for every attached thread: a thread's failure waits the policy the main thread set, and the main thread sees the thread's", async () => {
    const clock = new ManualClock(T0);
    const queue = new JobQueue(clock, new RetryPolicy(3, 100, 100));
    queue.setRetryPolicy('email', new RetryPolicy(2, 5_000, 5_000));
    const worker = await startWorker('retry-policy-thread.mjs', { handle: queue.share() });
    try {
      const report = (await withTimeout(worker.result, 60_000, 'the thread')) as { id: string; leased: string; view: Record<string, unknown> };
      expect(report.leased).toBe(report.id);
      expect(report.view).toMatchObject({ status: 'PENDING', attempts: 1, maxAttempts: 2, nextRunAt: T0 + 5_000 });
      expect(queue.retryPolicies().map(({ type, policy }) => [type, policy.maxAttempts, policy.jitter])).toEqual([['email', 2, 'none'], ['thumb', 6, 'full']]);
      expect(queue.view(queue.submit('thumb', 'here')).maxAttempts).toBe(6);
    } finally {
      await terminateAll([worker]);
      queue.close();
    }
  });
});
