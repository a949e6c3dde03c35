import { describe, expect, it } from 'vitest';
import { JobQueue, ManualClock, RetryPolicy } from '../../dist/index.js';
import { T0, expectInvalidSync, withTimeout } from '../support/helpers.js';
import { closeJournal, openJournal, tempJournal } from '../support/journal-harness.js';

const LEASE = 1_000;

function memoryQueue(): { queue: JobQueue; clock: ManualClock } {
  const clock = new ManualClock(T0);
  return { queue: new JobQueue(clock, new RetryPolicy(5, 0, 0)), clock };
}

describe('concurrency caps', () => {
  it('claims nothing while the queue cap is reached, and again once a job has left RUNNING', () => {
    const { queue } = memoryQueue();
    queue.setConcurrency(2);
    const ids = Array.from({ length: 4 }, (_, i) => queue.submit('a', `p${i}`));
    const first = queue.poll('w', LEASE)!;
    const second = queue.poll('w', LEASE)!;
    expect([first.jobId, second.jobId]).toEqual(ids.slice(0, 2));
    expect(queue.poll('w', LEASE)).toBeUndefined();
    queue.complete(first.jobId, first.token);
    expect(queue.poll('w', LEASE)?.jobId).toBe(ids[2]);
    expect(queue.poll('w', LEASE)).toBeUndefined();
    queue.close();
  });

  // A move out of RUNNING that the counts missed would keep the cap's slot taken for good: each is tried with a cap of 1.
  const moves: [string, (queue: JobQueue, clock: ManualClock, jobId: string, token: number) => void][] = [
    ['complete', (q, _c, id, token) => q.complete(id, token)],
    ['complete with a result', (q, _c, id, token) => q.complete(id, token, { ok: true })],
    ['fail (retried)', (q, _c, id, token) => q.fail(id, token, 'again')],
    ['fail (dead)', (q, _c, id, token) => q.fail(id, token, 'for good', { permanent: true })],
    ['release', (q, _c, id, token) => q.release(id, token)],
    ['snooze', (q, _c, id, token) => q.release(id, token, { delayMillis: 10 })],
    ['cancel of the running job', (q, _c, id) => q.cancel(id)],
    ['lease expiry', (_q, c) => c.advance(LEASE)],
  ];
  for (const [name, end] of moves) {
    for (const scope of ['queue', 'type'] as const) {
      it(`frees the ${scope} cap's slot on ${name}`, () => {
        const { queue, clock } = memoryQueue();
        if (scope === 'queue') queue.setConcurrency(1);
        else queue.setConcurrency('a', 1);
        for (let i = 0; i < 3; i++) queue.submit('a', `p${i}`);
        const lease = queue.poll('w', LEASE)!;
        expect(queue.poll('w', LEASE)).toBeUndefined();
        end(queue, clock, lease.jobId, lease.token);
        const next = queue.poll('w', LEASE);
        expect(next).toBeDefined();
        expect(queue.poll('w', LEASE)).toBeUndefined();
        queue.close();
      });
    }
  }

  it('frees the slot on completeAndPoll, whose poll then claims under the cap', () => {
    const { queue } = memoryQueue();
    queue.setConcurrency(1);
    const [a, b, c] = [queue.submit('a'), queue.submit('a'), queue.submit('a')];
    const first = queue.poll('w', LEASE)!;
    expect(first.jobId).toBe(a);
    const next = queue.completeAndPoll(first.jobId, first.token, 'w', LEASE);
    expect(next?.jobId).toBe(b);
    expect(queue.poll('w', LEASE)).toBeUndefined();
    queue.complete(next!.jobId, next!.token);
    expect(queue.poll('w', LEASE)?.jobId).toBe(c);
    queue.close();
  });

  it('passes over a type at its cap to the next best job of another type, keeping its jobs in their order', () => {
    const { queue } = memoryQueue();
    queue.setConcurrency('email', 1);
    const e1 = queue.submit('email', 'e1', 5);
    const e2 = queue.submit('email', 'e2', 5);
    const e3 = queue.submit('email', 'e3', 5);
    const r1 = queue.submit('resize', 'r1', 0);
    const first = queue.poll('w', LEASE)!;
    expect(first.jobId).toBe(e1);
    expect(queue.poll('w', LEASE)?.jobId).toBe(r1);
    expect(queue.poll('w', LEASE)).toBeUndefined();
    expect(queue.view(e2).status).toBe('PENDING');
    expect(queue.stats()).toMatchObject({ ready: 2, running: 2 });
    queue.complete(first.jobId, first.token);
    expect(queue.poll('w', LEASE)?.jobId).toBe(e2);
    expect(queue.poll('w', LEASE)).toBeUndefined();
    expect(queue.view(e3).status).toBe('PENDING');
    queue.close();
  });

  it('stops no running job when lowered below the jobs RUNNING: new claims wait until fewer run', () => {
    const { queue } = memoryQueue();
    for (let i = 0; i < 5; i++) queue.submit('a');
    const leases = [queue.poll('w', LEASE)!, queue.poll('w', LEASE)!, queue.poll('w', LEASE)!];
    queue.setConcurrency(1);
    expect(queue.stats().running).toBe(3);
    for (const lease of leases) expect(queue.view(lease.jobId).status).toBe('RUNNING');
    expect(queue.poll('w', LEASE)).toBeUndefined();
    queue.complete(leases[0]!.jobId, leases[0]!.token);
    queue.complete(leases[1]!.jobId, leases[1]!.token);
    expect(queue.poll('w', LEASE)).toBeUndefined();
    queue.complete(leases[2]!.jobId, leases[2]!.token);
    expect(queue.poll('w', LEASE)).toBeDefined();
    expect(queue.poll('w', LEASE)).toBeUndefined();
    queue.close();
  });

  it('null removes a cap: held jobs are claimed again at once', () => {
    const { queue } = memoryQueue();
    queue.setConcurrency('a', 1);
    queue.setConcurrency(3);
    for (let i = 0; i < 3; i++) queue.submit('a');
    expect(queue.poll('w', LEASE)).toBeDefined();
    expect(queue.poll('w', LEASE)).toBeUndefined();
    expect(queue.concurrencyCaps()).toEqual({ queue: 3, types: [{ type: 'a', max: 1 }] });
    queue.setConcurrency('a', null);
    expect(queue.concurrencyCaps()).toEqual({ queue: 3, types: [] });
    expect(queue.poll('w', LEASE)).toBeDefined();
    expect(queue.poll('w', LEASE)).toBeDefined();
    queue.setConcurrency(null);
    expect(queue.concurrencyCaps()).toEqual({ queue: null, types: [] });
    queue.close();
  });

  it('wakes a worker waiting for work once a job leaves RUNNING under a reached cap', async () => {
    for (const scope of ['queue', 'type'] as const) {
      const { queue } = memoryQueue();
      if (scope === 'queue') queue.setConcurrency(1);
      else queue.setConcurrency('a', 1);
      queue.submit('a');
      queue.submit('a');
      const lease = queue.poll('w', LEASE)!;
      expect(queue.poll('w', LEASE)).toBeUndefined();
      let woken = false;
      const waiting = queue.waitForWork(600_000).then((found) => {
        woken = true;
        return found;
      });
      // Given a turn of the event loop: nothing frees a place, so the wait goes on.
      await new Promise((resolve) => setImmediate(resolve));
      expect(woken).toBe(false);
      queue.complete(lease.jobId, lease.token);
      expect(await withTimeout(waiting, 10_000, `waitForWork (${scope} cap)`)).toBe(true);
      expect(queue.poll('w', LEASE)).toBeDefined();
      queue.close();
    }
  });

  it('are seen and obeyed by a thread that attaches, and set by it for all', () => {
    const { queue } = memoryQueue();
    queue.setConcurrency('a', 1);
    const other = JobQueue.attach(queue.share());
    expect(other.concurrencyCaps()).toEqual({ queue: null, types: [{ type: 'a', max: 1 }] });
    queue.submit('a');
    queue.submit('a');
    expect(other.poll('w2', LEASE)).toBeDefined();
    expect(queue.poll('w1', LEASE)).toBeUndefined();
    other.setConcurrency('a', 2);
    expect(queue.poll('w1', LEASE)).toBeDefined();
    other.close();
    queue.close();
  });

  it('refuses a bad max or type naming it, and changes nothing', () => {
    const { queue } = memoryQueue();
    queue.setConcurrency('a', 2);
    for (const bad of [0, -1, 1.5, Number.NaN, Infinity, 2 ** 31, '3', undefined]) {
      expect(expectInvalidSync(() => queue.setConcurrency('a', bad as never)).message).toMatch(/`max`/);
      expect(expectInvalidSync(() => queue.setConcurrency(bad as never)).message).toMatch(/`max`/);
    }
    expect(expectInvalidSync(() => queue.setConcurrency('  ', 1)).message).toMatch(/`type`/);
    expect(expectInvalidSync(() => queue.setConcurrency('x'.repeat(125), 1)).message).toMatch(/at most 124 UTF-8 bytes/);
    expect(expectInvalidSync(() => (queue.setConcurrency as (...args: unknown[]) => void)()).message).toMatch(/setConcurrency/);
    expect(queue.concurrencyCaps()).toEqual({ queue: null, types: [{ type: 'a', max: 2 }] });
    queue.close();
  });
});

describe('concurrency caps of a journaled queue', () => {
  it('hold across close and reopen, counting the jobs the reopen retries, and stay removed after a removal', () => {
    const path = tempJournal();
    const clock = new ManualClock(T0);
    let queue = openJournal(path, clock, new RetryPolicy(5, 0, 0));
    queue.setConcurrency(4);
    queue.setConcurrency('a', 1);
    queue.setConcurrency('b', 2);
    queue.setConcurrency('b', null);
    for (let i = 0; i < 3; i++) queue.submit('a');
    closeJournal(queue);
    queue = openJournal(path, clock, new RetryPolicy(5, 0, 0));
    expect(queue.concurrencyCaps()).toEqual({ queue: 4, types: [{ type: 'a', max: 1 }] });
    const lease = queue.poll('w', LEASE)!;
    expect(queue.poll('w', LEASE)).toBeUndefined();
    queue.complete(lease.jobId, lease.token);
    expect(queue.poll('w', LEASE)).toBeDefined();
    queue.setConcurrency(null);
    closeJournal(queue);
    queue = openJournal(path, clock, new RetryPolicy(5, 0, 0));
    expect(queue.concurrencyCaps()).toEqual({ queue: null, types: [{ type: 'a', max: 1 }] });
    closeJournal(queue);
  });
});
