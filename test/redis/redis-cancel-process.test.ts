/**
 * cancel(jobId) of a job whose lease another PROCESS holds, on Redis: the
 * cancel's number reaches the holder through the queue's `cancels` channel,
 * the holder's handler signal aborts, and its late complete is refused.
 * Waits are handshakes (the child's lines on stdout, the handlers' log).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterEach, expect, it } from 'vitest';
import { RedisJobQueue, RetryPolicy, systemClock, type RedisJobQueue as Queue } from '../../dist/index.js';
import { waitUntil } from '../support/helpers.js';
import { scratch } from '../support/pool-harness.js';
import { describeRedis, fileRedis } from '../support/redis-harness.js';

const HOLDER = fileURLToPath(new URL('../fixtures/redis-cancel-holder.mjs', import.meta.url));

interface Line {
  ev: string;
  pid: number;
  [field: string]: unknown;
}

const children: ChildProcess[] = [];
const queues: Queue[] = [];
afterEach(async () => {
  for (const child of children.splice(0)) child.stdin?.end();
  await Promise.all(queues.splice(0).map((queue) => queue.close()));
});

function holder(queue: Queue, mode: 'pool' | 'lease'): { lines: Line[]; pid: number } {
  const child = spawn(process.execPath, [HOLDER, JSON.stringify(queue.share()), mode], { stdio: ['pipe', 'pipe', 'inherit'] });
  children.push(child);
  child.stdin!.on('error', () => undefined);
  const lines: Line[] = [];
  createInterface({ input: child.stdout! }).on('line', (line) => lines.push(JSON.parse(line) as Line));
  return { lines, pid: child.pid! };
}

let names = 0;
async function openQueue(): Promise<Queue> {
  const { url } = await fileRedis();
  const queue = await RedisJobQueue.connect({ redis: url, name: `cancel-process-${process.pid}-${++names}`, policy: new RetryPolicy(3, 0, 0), time: systemClock });
  queues.push(queue);
  return queue;
}

describeRedis('cancel of a job another process runs [redis]', () => {
  it("aborts the child's handler signal and refuses its late result; the job ends CANCELLED", async () => {
    const queue = await openQueue();
    const s = scratch();
    const child = holder(queue, 'pool');
    await waitUntil('the child pool started', () => child.lines.some((line) => line.ev === 'started'), 20_000);
    const id = await queue.submit('untilCancelled', s.payload());
    await waitUntil('the handler started in the child', () => s.events('start', id).length === 1, 20_000);
    expect(s.events('start', id)[0]!['pid']).toBe(child.pid);
    await queue.cancel(id);
    await waitUntil('the child heard the outcome', () => child.lines.some((line) => line.ev === 'event'), 20_000);
    const [aborted] = s.events('aborted', id);
    expect(aborted).toMatchObject({ pid: child.pid, reason: { name: 'JobCancelledError', code: 'ERR_JOB_CANCELLED', jobId: id } });
    const events = child.lines.filter((line) => line.ev === 'event');
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ name: 'cancelled', event: { jobId: id, attempt: 1 } });
    expect(String((events[0]!['event'] as { error: string }).error)).toContain('not the current lease');
    expect(await queue.view(id)).toMatchObject({ status: 'CANCELLED', attempts: 1, result: undefined });
  });

  it("refuses the complete of a lease the child holds itself, once the child has heard of the cancel", async () => {
    const queue = await openQueue();
    const child = holder(queue, 'lease');
    await waitUntil('the child started', () => child.lines.some((line) => line.ev === 'started'), 20_000);
    const id = await queue.submit('t', 'p');
    await waitUntil('the child leased the job', () => child.lines.some((line) => line.ev === 'leased'), 20_000);
    expect(child.lines.find((line) => line.ev === 'leased')).toMatchObject({ jobId: id });
    await queue.cancel(id);
    await waitUntil('the child tried its complete', () => child.lines.some((line) => line.ev === 'complete'), 20_000);
    expect(child.lines.find((line) => line.ev === 'heard')).toMatchObject({ jobId: id });
    expect(child.lines.find((line) => line.ev === 'complete')).toMatchObject({ ok: false, code: 'ERR_STALE_LEASE', name: 'StaleLeaseError' });
    expect(await queue.view(id)).toMatchObject({ status: 'CANCELLED', attempts: 1, result: undefined });
  });
});
