/**
 * remove on a journaled queue: durable when the call returns (a child process
 * removes jobs of every status remove takes and is killed with SIGKILL right
 * after, its event loop blocked: the reopen finds none of them), and a
 * refused remove changes nothing, in the journal either.
 * Fixture: test/fixtures/journal-remover.mjs.
 */
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { IllegalStateError, JobNotFoundError, ManualClock, RetryPolicy } from '../../dist/index.js';
import { T0, withTimeout } from '../support/helpers.js';
import { children, closeJournal, openJournal, tempJournal } from '../support/journal-harness.js';

/** Runs the fixture on `path` until it prints its line; kills it with SIGKILL; the ids it printed. */
async function removeThenKill(path: string): Promise<Record<string, string>> {
  const child = spawn(process.execPath, [new URL('../fixtures/journal-remover.mjs', import.meta.url).pathname, path, String(T0)], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let out = '';
  let err = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
  const exited = new Promise<void>((resolve) => child.once('close', () => resolve()));
  const line = await withTimeout(new Promise<string>((resolve, reject) => {
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk;
      const found = /^removed (.*)$/m.exec(out);
      if (found) resolve(found[1]!);
    });
    child.once('close', (code) => reject(new Error(`journal-remover exited (${code}) before removing: ${err}`)));
  }), 60_000, 'journal-remover');
  child.kill('SIGKILL');
  await exited;
  return JSON.parse(line) as Record<string, string>;
}

describe('remove on a journaled queue', () => {
  it('is durable when it returns: after a SIGKILL the reopen brings no removed job back, and frees its key', async () => {
    const path = tempJournal();
    const ids = await removeThenKill(path);
    const queue = openJournal(path, new ManualClock(T0), new RetryPolicy(1, 0, 0));
    for (const name of ['succeeded', 'dead', 'ready', 'delayed', 'cancelled']) {
      expect(() => queue.view(ids[name]!), name).toThrow(JobNotFoundError);
    }
    expect(queue.view(ids['kept']!).status).toBe('PENDING');
    expect(queue.stats()).toMatchObject({ pending: 1, succeeded: 0, dead: 0, cancelled: 0 });
    expect(queue.deadLetters()).toEqual([]);
    // The key of the removed SUCCEEDED job is free: a keyed submit makes a new job.
    expect(queue.submit('t', 'again', { key: 'freed' })).not.toBe(ids['succeeded']);
    closeJournal(queue);
  });

  it('refused (RUNNING) changes nothing, across a close and reopen', () => {
    const path = tempJournal();
    const clock = new ManualClock(T0);
    const policy = new RetryPolicy(3, 0, 0);
    const queue = openJournal(path, clock, policy);
    const id = queue.submit('t', 'p');
    const lease = queue.poll('w', 60_000)!;
    expect(() => queue.remove(id)).toThrow(IllegalStateError);
    queue.complete(id, lease.token, 'kept');
    closeJournal(queue);
    const reopened = openJournal(path, clock, policy);
    expect(reopened.view(id)).toMatchObject({ status: 'SUCCEEDED', result: 'kept' });
    reopened.remove(id);
    closeJournal(reopened);
    const third = openJournal(path, clock, policy);
    expect(() => third.view(id)).toThrow(JobNotFoundError);
    closeJournal(third);
  });
});
