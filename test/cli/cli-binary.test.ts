/**
 * The tools over binary jobs: `leasehold dlq list` (text and --json) and
 * the dashboard adapter show a binary payload or result by its byte length,
 * never decoded as text or spelled out byte by byte.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { JobQueue, ManualClock, RetryPolicy } from '../../dist/index.js';
import { createDashboardAdapter } from '../../dist/dashboard/index.js';

const CLI = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));
const scratch = mkdtempSync(join(tmpdir(), 'leasehold-cli-binary-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** Bytes that are not UTF-8. */
const BYTES = Uint8Array.from({ length: 3_000 }, (_, i) => (i * 7 + 0x80) & 0xff);

describe('binary jobs in the tools', () => {
  it('dlq list shows a dead binary job by its byte length, as text and as JSON', () => {
    const path = join(scratch, 'dead.db');
    const queue = JobQueue.open(path, new ManualClock(1_000), new RetryPolicy(1, 0, 0));
    queue.submit('bytes', BYTES);
    queue.submit('text', 'plain');
    for (let lease = queue.poll('w', 100); lease !== undefined; lease = queue.poll('w', 100)) queue.fail(lease.jobId, lease.token, 'boom');
    void queue.close();
    const run = spawnSync(process.execPath, [CLI, 'dlq', 'list', path, '--json'], { encoding: 'utf8', timeout: 30_000 });
    expect(run.status).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual([
      { id: 'J1', type: 'bytes', priority: 0, attempts: 1, lastError: 'boom', payload: '<binary: 3000 bytes>' },
      { id: 'J2', type: 'text', priority: 0, attempts: 1, lastError: 'boom', payload: 'plain' },
    ]);
    const text = spawnSync(process.execPath, [CLI, 'dlq', 'list', path], { encoding: 'utf8', timeout: 30_000 });
    expect(text.status).toBe(0);
    expect(text.stdout).toContain('J1  bytes');
  });

  it('the dashboard adapter shows a binary payload and result by their byte lengths', async () => {
    const clock = new ManualClock(1_000);
    const queue = new JobQueue(clock, new RetryPolicy(1, 0, 0));
    const id = queue.submit('bytes', BYTES);
    const lease = queue.poll('w', 100)!;
    queue.complete(lease.jobId, lease.token, BYTES.subarray(0, 10));
    const adapter = await createDashboardAdapter(queue, { name: 'binary', time: clock });
    const found = await adapter.getJob(id);
    expect(found?.toJSON()).toMatchObject({ data: '<binary: 3000 bytes>', returnvalue: '<binary: 10 bytes>' });
  });
});
