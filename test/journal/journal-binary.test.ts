/**
 * Binary payloads and results in the SQLite journal: stored as BLOBs (in
 * the TEXT columns, whose affinity keeps a BLOB as it is), read back as
 * Uint8Arrays after a reopen and after a kill -9, text jobs still strings.
 */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { ManualClock, RetryPolicy, systemClock, type JobQueue } from '../../dist/index.js';
import { T0, mustPollSync, withTimeout } from '../support/helpers.js';
import { children, closeJournal, openJournal, tempJournal } from '../support/journal-harness.js';
// @ts-expect-error: a plain ES module fixture, shared with the child process
import { binaryPayload } from '../fixtures/journal-binary-lib.mjs';

const bytes = binaryPayload as (seed: number, length: number) => Uint8Array;
const open = (path: string, clock: ManualClock): JobQueue => openJournal(path, clock, new RetryPolicy(3, 0, 0));

describe('binary jobs in the journal', () => {
  it('keeps binary payloads and results as BLOBs and text as TEXT across a reopen', () => {
    const path = tempJournal();
    const clock = new ManualClock(T0);
    const queue = open(path, clock);
    const binary = queue.submit('t', bytes(1, 5_000));
    const text = queue.submit('t', 'text');
    const done = queue.submit('t', bytes(2, 64), 1);
    queue.complete(done, mustPollSync(queue, done).token, bytes(3, 1_000));
    closeJournal(queue);

    const db = new Database(path, { readonly: true });
    const types = db.prepare('SELECT num, typeof(payload) AS payload, typeof(result) AS result FROM jobs ORDER BY num').all();
    db.close();
    expect(types).toEqual([
      { num: 1, payload: 'blob', result: 'null' },
      { num: 2, payload: 'text', result: 'null' },
      { num: 3, payload: 'blob', result: 'blob' },
    ]);
    const again = open(path, clock);
    expect(again.view(binary).payload).toBeInstanceOf(Uint8Array);
    expect(again.view(binary).payload).toEqual(bytes(1, 5_000));
    expect(again.view(text).payload).toBe('text');
    expect(again.view(done).result).toEqual(bytes(3, 1_000));
    expect(mustPollSync(again, binary).payload).toEqual(bytes(1, 5_000));
  });

  it('stores a payload written in place (reserveBytes) as a BLOB; a reopen has the job, and no reservation', () => {
    const path = tempJournal();
    const clock = new ManualClock(T0);
    const queue = open(path, clock);
    const reserved = queue.reserveBytes(70_000);
    expect(reserved.buffer).toBeInstanceOf(SharedArrayBuffer);
    reserved.set(bytes(5, 70_000));
    const id = queue.submit('t', reserved);
    // One reserved and never submitted: the reopen knows nothing of it.
    queue.reserveBytes(70_000).set(bytes(6, 70_000));
    closeJournal(queue);

    const db = new Database(path, { readonly: true });
    const rows = db.prepare('SELECT num, typeof(payload) AS payload FROM jobs ORDER BY num').all();
    db.close();
    expect(rows).toEqual([{ num: 1, payload: 'blob' }]);
    const again = open(path, clock);
    expect(again.stats()).toMatchObject({ pending: 1 });
    expect(Buffer.from(mustPollSync(again, id).payload as Uint8Array).equals(bytes(5, 70_000))).toBe(true);
  });

  it('restores binary jobs after the process is killed with SIGKILL, the one RUNNING retried', async () => {
    const path = tempJournal();
    const child = spawn(process.execPath, [new URL('../fixtures/journal-binary-child.mjs', import.meta.url).pathname, path], { stdio: ['ignore', 'pipe', 'inherit'] });
    children.push(child);
    const lines = createInterface({ input: child.stdout });
    await withTimeout(new Promise<void>((resolve) => lines.on('line', (line) => line === 'ready' && resolve())), 60_000, 'the child to be ready');
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
    expect(child.signalCode).toBe('SIGKILL');

    const queue = openJournal(path, systemClock, new RetryPolicy(3, 0, 0));
    expect(queue.view('J1')).toMatchObject({ status: 'PENDING', attempts: 1, payload: bytes(1, 70_000) });
    expect(queue.view('J2')).toMatchObject({ status: 'PENDING', payload: 'plain text' });
    expect(queue.view('J3')).toMatchObject({ status: 'SUCCEEDED', payload: bytes(3, 300), result: bytes(4, 500) });
    // J1 is ready again at the reopen, after J2 (which was ready first).
    const leases = [queue.poll('w', 60_000), queue.poll('w', 60_000)];
    expect(leases.map((lease) => [lease?.jobId, lease?.payload])).toEqual([['J2', 'plain text'], ['J1', bytes(1, 70_000)]]);
  });
});
