/**
 * Binary jobs through a WorkerPool, with real pool threads: a handler is
 * handed a binary job's payload as a Uint8Array (a text job's as a string),
 * and a Uint8Array it returns is the job's result, which `pool.run` resolves
 * with. On Redis: test/pool/pool-redis-binary.test.ts.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { JobQueue, PermanentError, RetryPolicy, WorkerPool, jsonHandlers, systemClock } from '../../dist/index.js';
import { track } from '../support/pool-harness.js';
import { bytesOf } from '../support/helpers.js';
import { describePoolBackends } from '../support/pool-backends.js';

const HANDLERS = new URL('../fixtures/binary-handlers.mjs', import.meta.url);
const MIB = 1 << 20;

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const BACKENDS: ReadonlyArray<readonly [string, () => JobQueue]> = [
  ['memory', () => new JobQueue(systemClock, new RetryPolicy(1, 0, 0))],
  ['journal', () => {
    const dir = mkdtempSync(join(tmpdir(), 'leasehold-pool-binary-'));
    dirs.push(dir);
    return JobQueue.open(join(dir, 'queue.db'), systemClock, new RetryPolicy(1, 0, 0));
  }],
];


for (const [name, open] of BACKENDS) {
  describe(`binary jobs in a WorkerPool [${name}]`, () => {
    it('hands a handler a Uint8Array payload and resolves run with the Uint8Array it returns, 1 MiB each way', async () => {
      const queue = open();
      const pool = track(new WorkerPool(queue, { handlers: HANDLERS, threads: 2, leaseMillis: 30_000 }));
      await pool.start();
      try {
        const sent = bytesOf(MIB);
        const results = await Promise.all([pool.run('reverseBytes', sent), pool.run('reverseBytes', bytesOf(100))]);
        expect(results[0]).toBeInstanceOf(Uint8Array);
        // Compared whole (toEqual walks a megabyte element by element, for seconds).
        expect(Buffer.from(results[0] as Uint8Array).equals(Uint8Array.from(sent).reverse())).toBe(true);
        expect(results[1]).toEqual(bytesOf(100).reverse());
        expect(await pool.run('makeBytes', '70')).toEqual(Uint8Array.from({ length: 70 }, (_, i) => i));
      } finally {
        await pool.close();
      }
    });

    it('hands a handler a long payload as a view onto shared memory (no copy out), a short one as bytes of its own', async () => {
      const queue = open();
      const pool = track(new WorkerPool(queue, { handlers: HANDLERS, threads: 1, leaseMillis: 30_000 }));
      await pool.start();
      try {
        // 4 KiB and more is stored contiguously (see I29 in src/shm/README.md); less as a chain, copied out.
        expect(await pool.run('payloadMemory', bytesOf(MIB, 9))).toEqual({ shared: true, first: 0xff });
        expect(await pool.run('payloadMemory', bytesOf(64 * 1024, 9))).toEqual({ shared: true, first: 0xff });
        expect(await pool.run('payloadMemory', bytesOf(100, 9))).toEqual({ shared: false, first: 0xff });
      } finally {
        await pool.close();
      }
      await queue.close();
    });

    it('hands a text job a string beside binary jobs', async () => {
      const queue = open();
      const pool = track(new WorkerPool(queue, { handlers: HANDLERS, threads: 1, leaseMillis: 30_000 }));
      await pool.start();
      try {
        expect(await pool.run('describePayload', 'abc')).toEqual({ binary: false, length: 3 });
        expect(await pool.run('describePayload', bytesOf(5))).toEqual({ binary: true, length: 5 });
      } finally {
        await pool.close();
      }
      await queue.close();
    });
  });
}

describe('jsonHandlers and a binary job', () => {
  it('dead-letters it at once: a PermanentError, as for a payload that is not JSON', () => {
    const handlers = jsonHandlers({ parse: (value: unknown) => value }) as unknown as Record<string, (payload: unknown, ctx: unknown) => unknown>;
    const ctx = { jobId: 'J1', type: 'parse' };
    expect(handlers['parse']!('{"a":1}', ctx)).toEqual({ a: 1 });
    expect(() => handlers['parse']!(new Uint8Array([0x7b, 0x7d]), ctx)).toThrow(PermanentError);
  });
});

describePoolBackends('a handler that returns a Uint8Array', (backend) => {
  it('completes its job with the bytes, and run resolves with them', async () => {
    const queue = await backend.open(new RetryPolicy(1, 0, 0));
    const pool = track(new WorkerPool(queue, { handlers: HANDLERS, threads: 1, leaseMillis: 30_000 }));
    await pool.start();
    try {
      expect(await pool.run('makeBytes', '5')).toEqual(Uint8Array.of(0, 1, 2, 3, 4));
    } finally {
      await pool.close();
    }
  });
});
