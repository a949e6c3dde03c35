/**
 * remove racing polls of the same PENDING jobs on Redis, from other processes:
 * two poller processes lease every job they can, best first, while this one
 * removes them all from the last. For every job exactly one side
 * wins: leased once with its remove refused (IllegalStateError), or removed
 * and never leased. Fixture: test/fixtures/redis-remove-poller.mjs.
 */
import { afterEach, expect, it } from 'vitest';
import { IllegalStateError, RedisJobQueue, RetryPolicy } from '../../dist/index.js';
import { JsonLinesChild } from '../support/helpers.js';
import { describeRedis, fileRedis } from '../support/redis-harness.js';

const JOBS = 600;

class Poller extends JsonLinesChild<{ ev: string; leased?: string[] }> {
  constructor(handle: unknown) {
    super('redis-remove-poller.mjs', handle, 'a poller process');
  }
}

describeRedis('remove racing polls across Redis processes', () => {
  const opened: Array<{ close(): Promise<void> }> = [];
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((closing) => closing.close()));
  });

  it('for every job, either a poll leased it once and the remove was refused, or the remove took it and no poll leased it', async () => {
    const server = await fileRedis();
    const queue = await RedisJobQueue.connect({ redis: server.url, name: `remove-race-${process.pid}`, policy: new RetryPolicy(3, 0, 0) });
    opened.push(queue);
    const ids = await queue.submitMany(Array.from({ length: JOBS }, (_, i) => ({ type: 'work', payload: `job ${i}` })));
    const pollers = [new Poller(queue.share()), new Poller(queue.share())];
    opened.push(...pollers);
    for (const poller of pollers) expect((await poller.next()).ev).toBe('ready');
    for (const poller of pollers) poller.write('go');
    const removed = new Set<string>();
    const refused = new Set<string>();
    const other: string[] = [];
    // From the last job back, while the pollers go from the first: they meet, and race there, somewhere in between.
    for (const id of [...ids].reverse()) {
      try {
        await queue.remove(id);
        removed.add(id);
      } catch (error) {
        if (error instanceof IllegalStateError && (error as { code?: string }).code === 'ERR_ILLEGAL_STATE') refused.add(id);
        else other.push(`${id}: ${String(error)}`);
      }
    }
    const leasedLists = await Promise.all(pollers.map(async (poller) => (await poller.next()).leased!));
    expect(other).toEqual([]);
    const timesLeased = new Map<string, number>();
    for (const id of leasedLists.flat()) timesLeased.set(id, (timesLeased.get(id) ?? 0) + 1);
    const wrong: string[] = [];
    for (const id of ids) {
      const leases = timesLeased.get(id) ?? 0;
      const status = await queue.view(id).then((view) => view.status, (error: { code: string }) => error.code);
      const removeWon = removed.has(id) && leases === 0 && status === 'ERR_JOB_NOT_FOUND';
      const pollWon = refused.has(id) && leases === 1 && status === 'RUNNING';
      if (!removeWon && !pollWon) wrong.push(`${id}: removed ${removed.has(id)}, refused ${refused.has(id)}, leased ${leases}, now ${status}`);
    }
    // Every job checked, not a sample.
    expect(wrong).toEqual([]);
    expect(await queue.stats()).toMatchObject({ pending: 0, running: refused.size });
  });
});
