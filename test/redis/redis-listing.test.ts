/**
 * The Redis listing sets are kept only once jobs() was first called on a
 * queue: until then no script touches them; the first jobs() files every job
 * issued before it, LISTING_BATCH per script, while other clients keep moving
 * jobs; from then on every move keeps them.
 */
import { Redis } from 'ioredis';
import { expect, it, onTestFinished } from 'vitest';
import { RedisJobQueue, RetryPolicy, type JobStatus, type Lease } from '../../dist/index.js';
import { describeRedis, onePerFile, startRedis } from '../support/redis-harness.js';

/** The most jobs one jobs() script files while the sets are built (src/redis/scripts.ts). */
const LISTING_BATCH = 200;
const STATUSES: readonly JobStatus[] = ['PENDING', 'RUNNING', 'SUCCEEDED', 'DEAD', 'CANCELLED'];
const LISTING_KEYS = ['pendingNums', 'runningNums', 'succeededNums', 'cancelledNums', 'listing'];

// AOF fsynced once a second: these tests make thousands of calls, and check listings, not the disk.
const server = onePerFile(() => startRedis({ appendfsync: 'everysec' }));

describeRedis('RedisJobQueue: listing sets built on the first jobs()', () => {
  let names = 0;
  const open = async (name = `listing-${process.pid}-${++names}`, capacity = 100_000) => {
    const queue = await RedisJobQueue.connect({ redis: (await server()).url, name, policy: new RetryPolicy(2, 0, 0), capacity });
    onTestFinished(() => queue.close());
    return { queue, name };
  };
  /** A plain client of the same server, to look at the queue's keys. */
  const adminClient = async () => {
    const admin = new Redis((await server()).url, { maxRetriesPerRequest: 0 });
    onTestFinished(() => admin.disconnect());
    return admin;
  };
  const keysOf = (name: string) => LISTING_KEYS.map((key) => `leasehold:{${name}}:${key}`);

  /** Every job's id by status, as the listing pages it (100 a page). */
  async function listed(queue: RedisJobQueue): Promise<Map<JobStatus, string[]>> {
    const byStatus = new Map<JobStatus, string[]>();
    for (const status of STATUSES) {
      const ids: string[] = [];
      for (let after: string | undefined; ; ) {
        const page = await queue.jobs({ status, limit: 100, ...(after === undefined ? {} : { after }) });
        for (const job of page.jobs) {
          expect(job.status).toBe(status);
          ids.push(job.id);
        }
        if (page.next === null) break;
        after = page.next;
      }
      byStatus.set(status, ids);
    }
    return byStatus;
  }

  /** Every job's id by the status its view gives, ids J1 .. J(issued); evicted jobs left out. */
  async function truth(queue: RedisJobQueue, issued: number): Promise<Map<JobStatus, string[]>> {
    const byStatus = new Map<JobStatus, string[]>(STATUSES.map((status) => [status, []]));
    for (let n = 1; n <= issued; n++) {
      const view = await queue.view(`J${n}`).catch((error: unknown) => {
        if ((error as { code?: string }).code === 'ERR_JOB_EVICTED') return undefined;
        throw error;
      });
      if (view !== undefined) byStatus.get(view.status)!.push(view.id);
    }
    return byStatus;
  }

  /** Jobs in every status: of `count`, some left PENDING, some RUNNING, SUCCEEDED, DEAD and CANCELLED. */
  async function mixed(queue: RedisJobQueue, count: number): Promise<void> {
    for (let i = 0; i < count; i += 500) await queue.submitMany(Array.from({ length: Math.min(500, count - i) }, (_, j) => ({ type: 't', payload: String(i + j) })));
    const leases: Lease[] = [];
    for (let left = Math.floor((count * 4) / 5); left > 0; left -= 1000) leases.push(...(await queue.pollMany('w', 60_000, Math.min(1000, left))));
    for (const [i, lease] of leases.entries()) {
      if (i % 4 === 0) await queue.complete(lease.jobId, lease.token);
      else if (i % 4 === 1) await queue.fail(lease.jobId, lease.token, 'permanent', { permanent: true });
      else if (i % 4 === 2) await queue.fail(lease.jobId, lease.token, 'retried');
    }
    const pending = await queue.jobs({ status: 'PENDING', limit: 10 });
    for (const job of pending.jobs.slice(0, 5)) await queue.cancel(job.id);
  }

  it('keeps no listing set while nothing has listed the queue', async () => {
    const { queue, name } = await open();
    const admin = await adminClient();
    await queue.submitMany(Array.from({ length: 40 }, (_, i) => ({ type: 't', payload: String(i) })));
    const leases = await queue.pollMany('w', 60_000, 30);
    for (const [i, lease] of leases.entries()) {
      if (i % 3 === 0) await queue.complete(lease.jobId, lease.token);
      else if (i % 3 === 1) await queue.fail(lease.jobId, lease.token, 'no');
      else await queue.release(lease.jobId, lease.token);
    }
    await queue.cancel('J40');
    expect(await admin.exists(...keysOf(name))).toBe(0);
    await queue.jobs({ status: 'DEAD' });
    expect(await admin.exists(`leasehold:{${name}}:listing`)).toBe(1);
  });

  it('the first jobs() files every job issued before it, in bounded scripts, each under its status', async () => {
    const { queue, name } = await open();
    const admin = await adminClient();
    await mixed(queue, 1_000);
    // Members left from when the sets were kept by other code: a PENDING job filed as SUCCEEDED, a number never issued.
    const pendingId = (await queue.jobs({ status: 'PENDING', limit: 1 })).jobs[0]!.id;
    await admin.del(`leasehold:{${name}}:listing`);
    await admin.zadd(`leasehold:{${name}}:succeededNums`, pendingId.slice(1), pendingId.slice(1), 999_999, 999_999);

    const scriptsBefore = await scriptCalls(admin);
    const first = await queue.jobs({ status: 'SUCCEEDED', limit: 1 });
    const scripts = (await scriptCalls(admin)) - scriptsBefore;
    // INFO commandstats counts the INFO of scriptCalls as no script; the first page ran the build's steps.
    expect(scripts).toBeGreaterThanOrEqual(Math.ceil(1_000 / LISTING_BATCH));
    expect(first.jobs[0]!.status).toBe('SUCCEEDED');

    const expected = await truth(queue, 1_000);
    expect(expected.get('RUNNING')!.length).toBeGreaterThan(0);
    expect(expected.get('CANCELLED')!.length).toBe(5);
    expect(await listed(queue)).toEqual(expected);
  });

  it('lists every job under its status when other clients move jobs while the first jobs() builds the sets', async () => {
    const { queue, name } = await open();
    const { queue: mover } = await open(name);
    const { queue: submitter } = await open(name);
    const admin = await adminClient();
    await mixed(queue, 3_000);
    await admin.del(`leasehold:{${name}}:listing`);
    let building = true;
    const moves = (async () => {
      let moved = 0;
      // At least one round of moves, and on until the build is over.
      do {
        const leases: Lease[] = await mover.pollMany('m', 60_000, 20);
        for (const [i, lease] of leases.entries()) {
          if (i % 2 === 0) await mover.complete(lease.jobId, lease.token);
          else await mover.fail(lease.jobId, lease.token, 'again');
        }
        await submitter.submitMany([{ type: 't', payload: 'late' }, { type: 't', payload: 'late' }]);
        moved += leases.length + 2;
      } while (building);
      return moved;
    })();
    await queue.jobs({ status: 'RUNNING', limit: 1 });
    building = false;
    expect(await moves).toBeGreaterThan(0);
    const issued = Number(await admin.get(`leasehold:{${name}}:jobSeq`));
    expect(await listed(queue)).toEqual(await truth(queue, issued));
  });

  it('keeps the sets through later moves and evictions once built', async () => {
    const { queue } = await open(undefined, 300);
    await mixed(queue, 250);
    await queue.jobs();
    // Past capacity: SUCCEEDED and CANCELLED jobs are evicted, oldest finished first.
    await queue.submitMany(Array.from({ length: 40 }, (_, i) => ({ type: 't', payload: `more ${i}` })));
    for (const lease of await queue.pollMany('w', 60_000, 60)) await queue.complete(lease.jobId, lease.token);
    expect(await listed(queue)).toEqual(await truth(queue, 290));
  });
});

async function scriptCalls(admin: Redis): Promise<number> {
  const info = await admin.info('commandstats');
  return [...info.matchAll(/cmdstat_(?:eval|evalsha|fcall):calls=(\d+)/g)].reduce((sum, match) => sum + Number(match[1]), 0);
}
