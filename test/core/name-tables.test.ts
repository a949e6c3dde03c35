import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { JobQueue, ManualClock, RetryPolicy } from '../../dist/index.js';
import { T0 } from '../support/helpers.js';

/**
 * Job types and worker ids are interned in shared memory (tables of 4096
 * entries of up to 124 bytes); a type the table has no room for is kept in the
 * arena ahead of its payload, so a job always reads back with its own type; a
 * worker id it has no room for is shown as null.
 */
const TABLE_ENTRIES = 4096;
const ENTRY_BYTES = 124;

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function newQueue(capacity: number): JobQueue {
  return new JobQueue(new ManualClock(T0), new RetryPolicy(3, 0, 0), { capacity });
}

/** Types that fill the table (`count` of them, distinct), with a payload that names each. */
function typeOf(i: number): string {
  return `type-${i}`;
}

describe('job types: the type table and what it has no room for', () => {
  it('gives back every job its own type and payload when more types are submitted than the table holds', () => {
    const jobs = TABLE_ENTRIES + 500;
    const queue = newQueue(jobs);
    const ids = Array.from({ length: jobs }, (_, i) => queue.submit(typeOf(i), `payload of ${i}`));
    for (let i = 0; i < jobs; i += 97) expect(queue.view(ids[i]!)).toMatchObject({ type: typeOf(i), payload: `payload of ${i}` });
    const seen = new Map<string, string>();
    for (let lease = queue.poll('w', 1000); lease !== undefined; lease = queue.poll('w', 1000)) {
      seen.set(lease.jobId, `${lease.type}|${lease.payload}`);
      queue.complete(lease.jobId, lease.token);
    }
    expect(seen.size).toBe(jobs);
    ids.forEach((id, i) => expect(seen.get(id)).toBe(`${typeOf(i)}|payload of ${i}`));
    queue.close();
  });

  it('keeps a type longer than a table entry in the arena, and frees its bytes on eviction', () => {
    const long = 't'.repeat(ENTRY_BYTES + 1) + '漢';
    // The smallest arena for 1 KiB payloads, about 60 chunks: a leak of the type's 2 chunks per job would refuse a submit within the loop.
    const queue = new JobQueue(new ManualClock(T0), new RetryPolicy(3, 0, 0), { capacity: 4, maxPayloadBytes: 1024, arenaBytes: 2 * (1024 + 1024 + 16) });
    for (let i = 0; i < 500; i++) {
      const payload = 'x'.repeat(i % 1024);
      const id = queue.submit(long, payload);
      const lease = queue.poll('w', 1000)!;
      expect(lease).toMatchObject({ jobId: id, type: long, payload });
      queue.complete(id, lease.token);
    }
    queue.close();
  });

  it('brings interned and arena-kept types back from the journal', () => {
    const dir = mkdtempSync(join(tmpdir(), 'leasehold-types-'));
    dirs.push(dir);
    const path = join(dir, 'journal.db');
    const long = 'L'.repeat(ENTRY_BYTES * 2);
    const first = JobQueue.open(path, new ManualClock(T0), new RetryPolicy(3, 0, 0));
    const short = first.submit('short', 'a');
    const kept = first.submit(long, 'b');
    first.close();
    const reopened = JobQueue.open(path, new ManualClock(T0), new RetryPolicy(3, 0, 0));
    expect(reopened.view(short)).toMatchObject({ type: 'short', payload: 'a' });
    expect(reopened.view(kept)).toMatchObject({ type: long, payload: 'b' });
    expect(reopened.poll('w', 1000)).toMatchObject({ jobId: short, type: 'short' });
    expect(reopened.poll('w', 1000)).toMatchObject({ jobId: kept, type: long, payload: 'b' });
    reopened.close();
  });
});

describe('worker ids: the worker-name table', () => {
  it('shows the worker of each lease while the table has room, and null for ids it has no room for, leasing to every one', () => {
    const workers = TABLE_ENTRIES + 100;
    const queue = newQueue(workers + 1);
    const long = 'w'.repeat(ENTRY_BYTES + 1);
    const ids = Array.from({ length: workers + 1 }, (_, i) => queue.submit('t', String(i)));
    for (let i = 0; i < workers; i++) expect(queue.poll(`worker-${i}`, 1000)).toMatchObject({ jobId: ids[i] });
    expect(queue.poll(long, 1000)).toMatchObject({ jobId: ids[workers] });
    for (let i = 0; i < workers; i += 61) expect(queue.view(ids[i]!).workerId).toBe(i < TABLE_ENTRIES ? `worker-${i}` : null);
    expect(queue.view(ids[TABLE_ENTRIES - 1]!).workerId).toBe(`worker-${TABLE_ENTRIES - 1}`);
    expect(queue.view(ids[TABLE_ENTRIES]!).workerId).toBeNull();
    expect(queue.view(ids[workers]!).workerId).toBeNull();
    queue.close();
  });
});
