/**
 * ctx.log(): a handler's lines reach the job's log (queue.logs) through the pool's main thread, in order, across
 * attempts, bounded by the queue's limits; a line that is not a string is refused in the handler. Real piscina
 * threads, every backend the pool takes.
 */
import { expect, it } from 'vitest';
import { RetryPolicy } from '../../dist/index.js';
import { describePoolBackends, startPool } from '../support/pool-backends.js';
import { waitUntil } from '../support/helpers.js';

describePoolBackends('WorkerPool ctx.log', (backend) => {
  it('writes a handler\'s lines to the job\'s log, in order, across its attempts', async () => {
    const { s, queue } = await startPool(backend, new RetryPolicy(3, 0, 0), { threads: 1 });
    const id = await queue.submit('logLines', s.payload({ lines: ['resizing', 'encoding ✓'], failFirst: true, bad: 42 }));
    const expected = ['resizing', 'encoding ✓', 'attempt 1', 'resizing', 'encoding ✓', 'attempt 2'];
    await waitUntil(`${id}'s log`, async () => (await queue.logs(id)).lines.length === expected.length);
    expect(await queue.view(id)).toMatchObject({ status: 'SUCCEEDED', attempts: 2 });
    expect(await queue.logs(id)).toEqual({ lines: expected, dropped: 0 });
    expect(s.events('refused', id).map((line) => line.code)).toEqual(['ERR_INVALID_ARGUMENT', 'ERR_INVALID_ARGUMENT']);
  });

  it('keeps many jobs\' lines apart, each job\'s in its order', async () => {
    const { s, queue } = await startPool(backend, new RetryPolicy(1, 0, 0), { threads: 2 });
    const ids: string[] = [];
    for (let n = 0; n < 20; n++) ids.push(await queue.submit('logLines', s.payload({ lines: [`job ${n} a`, `job ${n} b`] })));
    await waitUntil('every log', async () => {
      for (const id of ids) if ((await queue.logs(id)).lines.length < 3) return false;
      return true;
    });
    for (const [n, id] of ids.entries()) expect((await queue.logs(id)).lines).toEqual([`job ${n} a`, `job ${n} b`, 'attempt 1']);
  });
});
