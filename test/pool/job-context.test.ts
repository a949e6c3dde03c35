/**
 * A pool job's signal is made only when its handler reads it (see
 * src/pool/job-context.ts); read late, it must look as if it had been there
 * all along. AbortController is counted by a subclass put in its global's place.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { JobContext, LazyAbort } from '../../dist/pool/job-context.js';

let made = 0;
const RealAbortController = globalThis.AbortController;

beforeEach(() => {
  made = 0;
  globalThis.AbortController = class extends RealAbortController {
    constructor() {
      super();
      made++;
    }
  };
});
afterEach(() => {
  globalThis.AbortController = RealAbortController;
});

describe('a job signal made on first read', () => {
  it('makes no AbortController for a job whose handler never reads its signal, aborted or not', () => {
    new LazyAbort();
    const aborted = new LazyAbort();
    aborted.abort(new Error('closing'));
    expect(aborted.reason).toEqual(new Error('closing'));
    expect(made).toBe(0);
  });

  it('reads aborted, with the reason, when the abort came before the first read', () => {
    const abort = new LazyAbort();
    const reason = new Error('timed out after 200 ms');
    abort.abort(reason);
    const { signal } = abort;
    expect(signal.aborted).toBe(true);
    expect(signal.reason).toBe(reason);
    expect(abort.signal).toBe(signal);
    expect(made).toBe(1);
  });

  it('fires abort listeners added before the abort, once, and keeps the first reason', () => {
    const abort = new LazyAbort();
    const heard: unknown[] = [];
    abort.signal.addEventListener('abort', () => heard.push(abort.signal.reason));
    const first = new Error('lease lost');
    abort.abort(first);
    abort.abort(new Error('closing'));
    expect(heard).toEqual([first]);
    expect(abort.reason).toBe(first);
    expect(abort.signal.reason).toBe(first);
  });

  it('keeps the first reason also when both aborts came before the first read', () => {
    const abort = new LazyAbort();
    const first = new Error('timed out');
    abort.abort(first);
    abort.abort(new Error('closing'));
    expect(abort.signal.reason).toBe(first);
    expect(abort.reason).toBe(first);
  });

  it('is not aborted until it is', () => {
    const abort = new LazyAbort();
    expect(abort.reason).toBeUndefined();
    expect(abort.signal.aborted).toBe(false);
  });

  it("gives a handler's context the job's signal, made on its first read and the same after", () => {
    const abort = new LazyAbort();
    const ctx = new JobContext('J1', 'mail', 1, () => {}, abort);
    expect(made).toBe(0);
    const reason = new Error('closing');
    abort.abort(reason);
    expect(ctx.signal.reason).toBe(reason);
    expect(ctx.signal).toBe(ctx.signal);
    expect(made).toBe(1);
  });
});

describe('ctx.log', () => {
  it('sends each line to the thread, and refuses a line that is not a string without sending it', () => {
    const sent: string[] = [];
    const ctx = new JobContext('J1', 't', 1, () => undefined, new LazyAbort(), undefined, (line) => sent.push(line));
    ctx.log('one');
    ctx.log('');
    for (const line of [undefined, null, 3, ['x']]) {
      expect(() => ctx.log(line as never)).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARGUMENT' }));
    }
    expect(sent).toEqual(['one', '']);
  });
});

describe('ctx.childResults', () => {
  it("reads the children's results through the thread's queue, by the job's id", async () => {
    const asked: string[] = [];
    const queue = { childResults: (id: string) => (asked.push(id), { J2: 'done' }) };
    const ctx = new JobContext('J1', 't', 1, () => undefined, new LazyAbort(), undefined, undefined, queue);
    await expect(ctx.childResults()).resolves.toEqual({ J2: 'done' });
    expect(asked).toEqual(['J1']);
  });

  it('rejects with UnsupportedOperationError in a context made outside a pool thread, which has no queue', async () => {
    const ctx = new JobContext('J1', 't', 1, () => undefined, new LazyAbort());
    await expect(ctx.childResults()).rejects.toMatchObject({ name: 'UnsupportedOperationError', code: 'ERR_UNSUPPORTED' });
  });
});
