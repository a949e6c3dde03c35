/**
 * WorkerPool with real piscina threads: options at the edge,
 * start / drain / close / stats, handler modules (named and default exports),
 * what a handler's return or throw does to its job, the handler context,
 * concurrency inside one thread, and threads that poll for themselves.
 *
 * Handlers (test/fixtures/pool-handlers.mjs) report by appending JSON lines to
 * a log in a temp directory named in their payload; every test reads and
 * checks the whole log. Waiting is done by polling a condition with a
 * deadline, never by sleeping a fixed time and hoping.
 */
import { relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  HandlerModuleError, IllegalStateError, InvalidArgumentError, JobQueue, ManualClock, RetryPolicy, WorkerPool, systemClock,
} from '../../dist/index.js';
import { bad, expectInvalidSync, pause, throwsWhenRead, unreadable } from '../support/helpers.js';
import { HANDLERS, bringUpLoops, scratch, track, until } from '../support/pool-harness.js';

const DEFAULT_EXPORT = new URL('../fixtures/pool-default.mjs', import.meta.url);

/** Checks `condition` throughout `ms` and fails the moment it stops holding (for "nothing happens" claims). */
async function holds(what: string, condition: () => boolean, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    expect(condition(), what).toBe(true);
    await pause(5);
  }
  expect(condition(), what).toBe(true);
}

function systemQueue(maxAttempts = 3, base = 0, cap = 0): JobQueue {
  return new JobQueue(systemClock, new RetryPolicy(maxAttempts, base, cap));
}

/** Asserts that `promise` rejects with an error of class `cls` and code `code`, and returns it. */
async function rejectsWith<E extends Error>(
  promise: Promise<unknown>,
  cls: abstract new (...args: never[]) => E,
  code: string,
): Promise<E> {
  const outcome = await promise.then(
    () => ({ rejected: false as const }),
    (error: unknown) => ({ rejected: true as const, error }),
  );
  expect(outcome.rejected, 'expected the promise to reject').toBe(true);
  const error = (outcome as { error: unknown }).error;
  expect(error).toBeInstanceOf(cls);
  expect((error as { code?: unknown }).code).toBe(code);
  return error as E;
}

// ── options ─────────────────────────────────────────────────────────────────

describe('WorkerPool options', { timeout: 20_000 }, () => {
  const queue = systemQueue();

  const badOptions: [option: string, value: unknown][] = [
    ['threads', 0],
    ['threads', -1],
    ['threads', 1.5],
    ['threads', Number.NaN],
    ['threads', '2'],
    // Past the bounds, which an up-front allocation of shared memory per thread and per job at once needs.
    ['threads', 1025],
    ['threads', 2 ** 31],
    ['threads', 1e300],
    ['leaseMillis', 0],
    ['leaseMillis', -5],
    ['leaseMillis', Number.NaN],
    ['leaseMillis', Number.POSITIVE_INFINITY],
    ['leaseMillis', '100'],
    // Longer than any poll takes (2^53 - 1): its leaseUntil could overflow.
    ['leaseMillis', 2 ** 53],
    ['concurrency', 0],
    ['concurrency', 1.5],
    ['concurrency', Number.NaN],
    ['concurrency', 4097],
    ['concurrency', 2 ** 31],
    // Objects that throw as they are read: refused, the caller's error not let out.
    ['timeoutMillis', unreadable()],
    ['resourceLimits', unreadable()],
    ['shutdownOn', new Proxy(['SIGTERM'], { get: throwsWhenRead })],
    ['logger', unreadable('info')],
    ['workerId', ''],
    ['workerId', '   '],
    ['workerId', 7],
    ['handlers', ''],
    ['handlers', 42],
    ['timeoutMillis', 0],
    ['timeoutMillis', -1],
    ['timeoutMillis', Number.NaN],
    ['timeoutMillis', '500'],
    ['timeoutMillis', null],
    ['timeoutGraceMillis', 0],
    ['timeoutGraceMillis', Number.POSITIVE_INFINITY],
    ['unknownTypes', 'skip'],
    ['shutdownOn', 'SIGTERM'],
    ['shutdownOn', ['TERM']],
    ['resourceLimits', null],
    ['logger', {}],
    ['logger', 'console'],
    // null is a value, not a default: refused as in the queue's options.
    ['threads', null],
    ['leaseMillis', null],
    ['concurrency', null],
    ['workerId', null],
    ['unknownTypes', null],
    ['shutdownOn', null],
  ];
  const label = (value: unknown): string => {
    if (typeof value === 'string') return JSON.stringify(value);
    try {
      return String(value);
    } catch {
      return 'an object that throws when read';
    }
  };
  it.each(badOptions.map(([option, value]) => [option, label(value), value] as const))(
    'refuses %s = %s with InvalidArgumentError that names the option',
    (option, _label, value) => {
      const options = { handlers: HANDLERS, threads: 1, [option]: value };
      const error = expectInvalidSync(() => new WorkerPool(queue, bad(options)));
      expect(error.message).toContain(`\`${option}\``);
    },
  );

  it('refuses a per-type timeout that is not a positive number, naming the type', () => {
    const error = expectInvalidSync(() => new WorkerPool(queue, { handlers: HANDLERS, threads: 1, timeoutMillis: { resize: 0 } }));
    expect(error.message).toContain('`timeoutMillis.resize`');
    expect(expectInvalidSync(() => new WorkerPool(queue, { handlers: HANDLERS, timeoutMillis: { default: -1 } })).message).toContain('`timeoutMillis.default`');
    expect(expectInvalidSync(() => new WorkerPool(queue, { handlers: HANDLERS, resourceLimits: { maxOldGenerationSizeMb: 0 } })).message)
      .toContain('`resourceLimits.maxOldGenerationSizeMb`');
  });

  it('refuses something that is not a JobQueue, and options that are not an object', () => {
    expectInvalidSync(() => new WorkerPool(bad({}), { handlers: HANDLERS }));
    expectInvalidSync(() => new WorkerPool(bad(null), { handlers: HANDLERS }));
    expectInvalidSync(() => new WorkerPool(queue, bad(null)));
    expectInvalidSync(() => new WorkerPool(queue, bad('handlers.mjs')));
    expect(expectInvalidSync(() => new WorkerPool(queue, bad([HANDLERS]))).message).toContain('got an array');
  });

  it('refuses an option it does not know, naming it and the ones it takes', () => {
    const error = expectInvalidSync(() => new WorkerPool(queue, bad({ handlers: HANDLERS, thread: 2 })));
    expect(error.message).toMatch(/no keys but handlers, threads, .*logger, got `thread`/);
  });

  it('takes the handler module as a URL, an absolute path or a path relative to the working directory', async () => {
    const s = scratch();
    const q = systemQueue();
    const absolute = fileURLToPath(HANDLERS);
    for (const handlers of [HANDLERS, HANDLERS.href, absolute, relative(process.cwd(), absolute)]) {
      const pool = track(new WorkerPool(q, { handlers, threads: 1, leaseMillis: 2_000 }));
      await pool.start();
      const id = q.submit('noop', s.payload());
      await pool.drain();
      expect(q.view(id).status).toBe('SUCCEEDED');
      await pool.close();
    }
    expect(s.events('ok')).toHaveLength(4);
  });
});

// ── drain ───────────────────────────────────────────────────────────────────

describe('WorkerPool#drain', { timeout: 20_000 }, () => {
  it("asks the queue for its counts about every 100 ms while the pool's threads hold leases, not at every 5 ms look", async () => {
    const s = scratch();
    const queue = systemQueue();
    const pool = track(new WorkerPool(queue, { handlers: HANDLERS, threads: 2, leaseMillis: 10_000 }));
    await pool.start();
    const ids = [1, 2, 3, 4].map((n) => queue.submit('slow', s.payload({ n, ms: 400 })));
    let asked = 0;
    const stats = queue.stats.bind(queue);
    queue.stats = () => {
      asked++;
      return stats();
    };
    const since = performance.now();
    await pool.drain();
    const took = performance.now() - since;
    expect(ids.map((id) => queue.view(id).status)).toEqual(['SUCCEEDED', 'SUCCEEDED', 'SUCCEEDED', 'SUCCEEDED']);
    // About 800 ms of leases held: a look at the queue every 5 ms would ask some 160 times.
    expect(took).toBeGreaterThan(700);
    expect(asked).toBeLessThanOrEqual(took / 100 + 10);
  });
});

// ── start ───────────────────────────────────────────────────────────────────

describe('WorkerPool#start', { timeout: 20_000 }, () => {
  it.each([
    ['is missing', new URL('../fixtures/pool-no-such-module.mjs', import.meta.url), /pool-no-such-module/],
    ['throws while it is imported', new URL('../fixtures/pool-throws.mjs', import.meta.url), /refuses to load \(at .*pool-throws\.mjs:4:7\)$/],
    ['throws null while it is imported', new URL('../fixtures/pool-throws-null.mjs', import.meta.url), /pool-throws-null\.mjs did not load: /],
    ['has a syntax error', new URL('../fixtures/pool-syntax-error.mjs', import.meta.url), /did not load: Unexpected token '\{' \(at .*pool-syntax-error\.mjs:4:32\)$/],
  ])('rejects with HandlerModuleError, its import\'s error as cause, and starts nothing when the handler module %s', async (_, handlers, says) => {
    const s = scratch();
    const queue = systemQueue();
    const id = queue.submit('noop', s.payload());
    const pool = track(new WorkerPool(queue, { handlers, threads: 2, leaseMillis: 500 }));
    const error = await rejectsWith(pool.start(), HandlerModuleError, 'ERR_HANDLER_MODULE');
    expect(error.message).toMatch(says);
    expect(error.moduleUrl).toBe(handlers.href);
    expect(error.cause).toBeDefined();
    // Nothing polls: the job stays untouched, and the pool says it cannot drain.
    await holds('the job waiting before start() is never leased', () => queue.view(id).attempts === 0, 300);
    await rejectsWith(pool.drain(), IllegalStateError, 'ERR_ILLEGAL_STATE');
    expect(pool.stats()).toMatchObject({ pending: 1, running: 0, restarts: 0 });
  });

  it('says where a syntax error is: the file, line and column, with the SyntaxError as cause', async () => {
    const handlers = new URL('../fixtures/pool-syntax-error.mjs', import.meta.url);
    const pool = track(new WorkerPool(systemQueue(), { handlers, threads: 1 }));
    const error = await rejectsWith(pool.start(), HandlerModuleError, 'ERR_HANDLER_MODULE');
    expect(error.place).toEqual({ file: fileURLToPath(handlers), line: 4, column: 32 });
    expect((error.cause as Error).name).toBe('SyntaxError');
    expect((error.cause as Error).message).toBe("Unexpected token '{'");
  });

  it('refuses, with InvalidArgumentError, a queue whose clock cannot cross threads (instead of restarting threads forever)', async () => {
    // A TimeSource of the caller's own: pool threads cannot attach to this queue (only systemClock and a ManualClock cross threads).
    const queue = new JobQueue({ now: () => Date.now() }, new RetryPolicy(3, 0, 0));
    const starting = (async () => {
      const pool = track(new WorkerPool(queue, { handlers: HANDLERS, threads: 2, leaseMillis: 1_000 }));
      await pool.start();
      return pool;
    })();
    await rejectsWith(starting, InvalidArgumentError, 'ERR_INVALID_ARGUMENT');
  });

  it('rejects a second start() with IllegalStateError, both while starting and once running', async () => {
    const pool = track(new WorkerPool(systemQueue(), { handlers: HANDLERS, threads: 1 }));
    const first = pool.start();
    await rejectsWith(pool.start(), IllegalStateError, 'ERR_ILLEGAL_STATE');
    await first;
    await rejectsWith(pool.start(), IllegalStateError, 'ERR_ILLEGAL_STATE');
  });

  it('rejects start() after close(): a closed pool stays closed', async () => {
    const pool = track(new WorkerPool(systemQueue(), { handlers: HANDLERS, threads: 1 }));
    await pool.close();
    await rejectsWith(pool.start(), IllegalStateError, 'ERR_ILLEGAL_STATE');
  });

  it('runs no job after close() resolved, even when close() was called while start() was still loading', async () => {
    const s = scratch();
    const queue = systemQueue();
    const pool = track(new WorkerPool(queue, { handlers: HANDLERS, threads: 1, leaseMillis: 1_000 }));
    const starting = pool.start();
    await pool.close();
    await starting.catch(() => undefined); // rejecting (the pool closed first) is fine; running is not
    const id = queue.submit('noop', s.payload());
    await holds('a job submitted after close() resolved is never run', () => queue.view(id).attempts === 0, 500);
    expect(s.lines()).toEqual([]);
  });
});

// ── handler modules and outcomes ────────────────────────────────────────────

describe('handler modules', { timeout: 20_000 }, () => {
  it('finds handlers among named exports and passes the payload and the context', async () => {
    const s = scratch();
    const queue = systemQueue();
    const pool = track(new WorkerPool(queue, { handlers: HANDLERS, threads: 1, leaseMillis: 2_000 }));
    await pool.start();
    const payload = s.payload({ text: 'héllo, 世界' });
    const id = queue.submit('echo', payload);
    await pool.drain();
    expect(queue.view(id)).toMatchObject({ status: 'SUCCEEDED', attempts: 1, lastError: null });
    const [line, ...more] = s.events('ok', id);
    expect(more).toEqual([]);
    expect(line).toMatchObject({
      jobId: id,
      type: 'echo',
      attempt: 1,
      payload,
      signalIsAbortSignal: true,
      signalAborted: false,
      heartbeatIsFunction: true,
    });
  });

  it('finds handlers among the function properties of a default export object', async () => {
    const s = scratch();
    const queue = systemQueue(2);
    const pool = track(new WorkerPool(queue, { handlers: DEFAULT_EXPORT, threads: 1, leaseMillis: 2_000 }));
    await pool.start();
    const greet = queue.submit('greet', s.payload());
    const refuse = queue.submit('refuse', s.payload());
    const version = queue.submit('version', s.payload()); // a number property is not a handler
    await pool.drain();
    expect(queue.view(greet)).toMatchObject({ status: 'SUCCEEDED', attempts: 1 });
    expect(s.events('ok', greet)).toEqual([expect.objectContaining({ from: 'default', type: 'greet' })]);
    expect(queue.view(refuse)).toMatchObject({ status: 'DEAD', attempts: 2, lastError: 'refused by the default export' });
    expect(queue.view(version).status).toBe('DEAD');
    expect(queue.view(version).lastError).toContain('"version"');
  });

  it('completes the job when the handler returns, also from a plain synchronous function', async () => {
    const s = scratch();
    const queue = systemQueue();
    const pool = track(new WorkerPool(queue, { handlers: HANDLERS, threads: 1, leaseMillis: 2_000 }));
    await pool.start();
    const id = queue.submit('syncValue', s.payload());
    await pool.drain();
    expect(queue.view(id)).toMatchObject({ status: 'SUCCEEDED', attempts: 1 });
    expect(s.events('ok', id)).toHaveLength(1);
  });

  it('shows in the job view which pool thread ran it: the workerId prefix and the thread index', async () => {
    const s = scratch();
    const queue = systemQueue();
    const pool = track(new WorkerPool(queue, { handlers: HANDLERS, threads: 2, leaseMillis: 2_000, workerId: 'thumbs' }));
    await pool.start();
    const ids = [queue.submit('syncValue', s.payload()), queue.submit('syncValue', s.payload())];
    await pool.drain();
    for (const id of ids) expect(queue.view(id).workerId).toMatch(/^thumbs-[01]$/);
  });

  it('fails the attempt with the thrown message as lastError, and retries it', async () => {
    const s = scratch();
    const queue = systemQueue(3);
    const pool = track(new WorkerPool(queue, { handlers: HANDLERS, threads: 1, leaseMillis: 2_000 }));
    await pool.start();
    const id = queue.submit('flaky', s.payload({ succeedOn: 2 }));
    await pool.drain();
    expect(queue.view(id)).toMatchObject({ status: 'SUCCEEDED', attempts: 2, lastError: 'flaky attempt 1' });
    expect(s.events('start', id).map((l) => l.attempt)).toEqual([1]);
    expect(s.events('ok', id).map((l) => l.attempt)).toEqual([2]);
  });

  /** One job of `type` run alone on a fresh one-thread pool, drained. */
  async function runAlone(maxAttempts: number, type: string, fields?: Record<string, unknown>) {
    const s = scratch();
    const queue = systemQueue(maxAttempts);
    const pool = track(new WorkerPool(queue, { handlers: HANDLERS, threads: 1, leaseMillis: 2_000 }));
    await pool.start();
    const id = queue.submit(type, s.payload(fields));
    await pool.drain();
    return { s, queue, pool, id };
  }

  it.each([
    ['a string', 'string', 'a plain string'],
    ['undefined', 'undefined', 'undefined'],
    ['an object whose toString throws', 'unprintable', 'a thrown object that cannot be shown as text'],
    ['an object without a prototype', 'nullPrototype', 'a thrown object that cannot be shown as text'],
    ['an Error whose message is no string', 'messageNotText', 'a thrown object that cannot be shown as text'],
    ['a proxy that throws as it is inspected', 'proxy', 'a thrown object that cannot be shown as text'],
    ['an Error whose name throws as it is read', 'nameThrows', 'named badly'],
  ])('fails the attempt when the handler throws %s, its lastError what can be said of it, on the same thread', async (_, value, message) => {
    const { queue, pool, id } = await runAlone(1, 'throwsOddly', { throw: value });
    expect(queue.view(id)).toMatchObject({ status: 'DEAD', attempts: 1, lastError: message });
    expect(pool.stats().restarts).toBe(0);
  });

  it.each([
    ['PermanentError from leasehold', 'poison', 'this payload can never work'],
    ['an error of its own named PermanentError', 'poisonByName', 'rejected by name'],
  ])('dead-letters the job at once, after one attempt, when the handler throws %s', async (_, type, message) => {
    const { s, queue, id } = await runAlone(5, type);
    expect(queue.view(id)).toMatchObject({ status: 'DEAD', attempts: 1, lastError: message });
    expect(s.events('start', id)).toHaveLength(1);
    expect(queue.deadLetters().map((v) => v.id)).toEqual([id]);
  });

  it('dead-letters at once, by default, a job whose type has no handler, with a lastError that names the type and the known ones', async () => {
    const s = scratch();
    const queue = systemQueue(3);
    const pool = track(new WorkerPool(queue, { handlers: HANDLERS, threads: 1, leaseMillis: 2_000 }));
    await pool.start();
    const id = queue.submit('nobody-handles-this', s.payload());
    await pool.drain();
    const view = queue.view(id);
    expect(view).toMatchObject({ status: 'DEAD', attempts: 1 });
    expect(view.lastError).toMatch(/^No handler for job type "nobody-handles-this" in .*pool-handlers\.mjs \(it exports: .*"noop".*\)$/);
    expect(s.lines()).toEqual([]);
  });

  it("retries a job whose type has no handler after its backoff, with unknownTypes: 'retry' (a rolling deploy)", async () => {
    const s = scratch();
    const queue = systemQueue(3, 0, 0);
    const pool = track(new WorkerPool(queue, { handlers: HANDLERS, threads: 1, leaseMillis: 2_000, unknownTypes: 'retry' }));
    await pool.start();
    const id = queue.submit('nobody-handles-this', s.payload());
    await pool.drain();
    const view = queue.view(id);
    expect(view).toMatchObject({ status: 'DEAD', attempts: 3 });
    expect(view.lastError).toContain('No handler for job type "nobody-handles-this"');
  });
});

// ── heartbeats and the signal ───────────────────────────────────────────────

describe('heartbeats and ctx.signal', { timeout: 20_000 }, () => {
  it('keeps the lease of a job that runs 3 × leaseMillis while its thread stays responsive: one attempt', async () => {
    const s = scratch();
    const queue = systemQueue(3);
    const leaseMillis = 300;
    const pool = track(new WorkerPool(queue, { handlers: HANDLERS, threads: 2, leaseMillis }));
    await pool.start();
    const id = queue.submit('slow', s.payload({ ms: 3 * leaseMillis }));
    await pool.drain();
    expect(queue.view(id)).toMatchObject({ status: 'SUCCEEDED', attempts: 1, lastError: null });
    expect(s.events('start', id)).toHaveLength(1);
    const [ok] = s.events('ok', id);
    expect(ok).toMatchObject({ attempt: 1, signalAborted: false });
    expect(ok!.t - s.events('start', id)[0]!.t).toBeGreaterThanOrEqual(3 * leaseMillis);
    expect(pool.stats()).toMatchObject({ restarts: 0, refused: 0 });
  });

  it('extends the lease to now + leaseMillis when the handler calls ctx.heartbeat(); once the lease is lost it throws ERR_STALE_LEASE and aborts the signal', async () => {
    const s = scratch();
    const clock = new ManualClock(1_000_000);
    const queue = new JobQueue(clock, new RetryPolicy(3, 0, 0));
    // A long lease: the automatic heartbeats (every leaseMillis / 3 of real time) stay out of the way.
    const leaseMillis = 30_000;
    const pool = track(new WorkerPool(queue, { handlers: HANDLERS, threads: 1, leaseMillis }));
    await pool.start();
    const id = queue.submit('manualHeartbeat', s.payload({ then: 'return' }));
    await until('the handler started', () => s.events('start', id).length === 1);
    expect(queue.view(id).leaseUntil).toBe(1_000_000 + leaseMillis);

    clock.advance(20_000);
    s.signal('beat1');
    await until('the first heartbeat', () => s.events('beat1', id).length === 1);
    expect(queue.view(id).leaseUntil).toBe(1_020_000 + leaseMillis);

    clock.advance(leaseMillis + 1); // the lease ends while the handler still runs
    s.signal('beat2');
    await until('the second heartbeat', () => s.events('beat2', id).length >= 1);
    expect(s.events('beat2', id)[0]).toMatchObject({ attempt: 1, code: 'ERR_STALE_LEASE', signalAborted: true });

    // Attempt 1 returns anyway: its complete is refused; attempt 2 (files already there) succeeds.
    await pool.drain();
    expect(queue.view(id)).toMatchObject({ status: 'SUCCEEDED', attempts: 2 });
    expect(s.events('beat2', id).map((l) => [l.attempt, l.code])).toEqual([[1, 'ERR_STALE_LEASE'], [2, null]]);
    expect(pool.stats()).toMatchObject({ succeeded: 1, refused: 1 });
  });

  it('aborts ctx.signal when the lease is lost, and refuses the late complete of that zombie', async () => {
    const s = scratch();
    const clock = new ManualClock(5_000_000);
    const queue = new JobQueue(clock, new RetryPolicy(3, 0, 0));
    const pool = track(new WorkerPool(queue, { handlers: HANDLERS, threads: 2, leaseMillis: 300 }));
    await pool.start();
    const id = queue.submit('awaitAbort', s.payload({ then: 'return', onlyAttempt: 1 }));
    await until('attempt 1 started', () => s.events('start', id).length === 1);
    clock.advance(10_000); // far past leaseUntil: the next automatic heartbeat is refused
    await pool.drain();
    await until('the zombie returned', () => s.events('zombie-returns', id).length === 1);
    await until('its complete was refused', () => pool.stats().refused === 1, 5_000, () => pool.stats());
    expect(queue.view(id)).toMatchObject({ status: 'SUCCEEDED', attempts: 2 });
    expect(s.events('aborted', id).map((l) => l.attempt)).toEqual([1]);
    expect(s.events('ok', id).map((l) => l.attempt)).toEqual([2]);
    expect(pool.stats().succeeded).toBe(1);
  });

  it('aborts ctx.signal when the pool closes; a handler that stops then leaves its job PENDING, not lost', async () => {
    const s = scratch();
    const queue = systemQueue(3, 0, 0);
    const pool = track(new WorkerPool(queue, { handlers: HANDLERS, threads: 1, leaseMillis: 5_000 }));
    await pool.start();
    const id = queue.submit('awaitAbort', s.payload({ then: 'throw' }));
    await until('the handler started', () => s.events('start', id).length === 1);
    await pool.close();
    expect(s.events('aborted', id)).toHaveLength(1);
    // A shutdown is not a failure: the interrupted attempt is not counted, and the job is ready at once.
    expect(queue.view(id)).toMatchObject({ status: 'PENDING', attempts: 0, lastError: null });
    expect(queue.stats()).toMatchObject({ running: 0, ready: 1 });
  });
});

// ── concurrency within one thread ───────────────────────────────────────────

describe('concurrency', { timeout: 20_000 }, () => {
  it('runs `concurrency` jobs at once inside one thread', async () => {
    const s = scratch();
    const queue = systemQueue(1);
    const pool = track(new WorkerPool(queue, { handlers: HANDLERS, threads: 1, concurrency: 4, leaseMillis: 5_000 }));
    await pool.start();
    // Each job waits until 4 jobs of its own thread are inside at once (maxAttempts 1: no second chance).
    const ids = Array.from({ length: 4 }, () => queue.submit('barrier', s.payload({ parties: 4, giveUpMillis: 3_000 })));
    await pool.drain();
    for (const id of ids) expect(queue.view(id)).toMatchObject({ status: 'SUCCEEDED', attempts: 1 });
    const oks = s.events('ok');
    expect(oks).toHaveLength(4);
    expect(new Set(oks.map((l) => l.threadId)).size).toBe(1);
    expect(Math.max(...oks.map((l) => l.maxInside as number))).toBe(4);
  });

  it('never runs more than `concurrency` jobs at once in a thread', async () => {
    const s = scratch();
    const queue = systemQueue(1);
    const pool = track(new WorkerPool(queue, { handlers: HANDLERS, threads: 1, concurrency: 3, leaseMillis: 5_000 }));
    await pool.start();
    for (let i = 0; i < 12; i++) queue.submit('overlap', s.payload({ ms: 40 }));
    await pool.drain();
    expect(queue.stats().succeeded).toBe(12);
    const starts = s.events('start');
    expect(starts).toHaveLength(12);
    expect(Math.max(...starts.map((l) => l.inside as number))).toBe(3);
  });

  it('runs one job at a time per thread by default', async () => {
    const s = scratch();
    const queue = systemQueue(1);
    const pool = track(new WorkerPool(queue, { handlers: HANDLERS, threads: 1, leaseMillis: 5_000 }));
    await pool.start();
    for (let i = 0; i < 5; i++) queue.submit('overlap', s.payload({ ms: 20 }));
    await pool.drain();
    expect(s.events('start').map((l) => l.inside)).toEqual([1, 1, 1, 1, 1]);
  });
});

// ── threads that poll for themselves ────────────────────────────────────────

describe('pool threads', { timeout: 20_000 }, () => {
  it('run jobs while the main thread is blocked: the main thread dispatches nothing per job', async () => {
    const s = scratch();
    const queue = systemQueue(1);
    const pool = track(new WorkerPool(queue, { handlers: HANDLERS, threads: 2, leaseMillis: 5_000 }));
    await pool.start();
    await bringUpLoops(queue, pool, s, 2);
    expect(queue.stats().succeeded).toBe(2);

    for (let i = 0; i < 200; i++) queue.submit('noop', s.payload({ n: i }));
    // Spin without ever yielding to this thread's event loop: no callback of the pool's can run here.
    const deadline = Date.now() + 10_000;
    let stats = queue.stats();
    while (stats.succeeded < 202 && Date.now() < deadline) stats = queue.stats();
    expect(stats).toMatchObject({ succeeded: 202, pending: 0, running: 0 });
  });

  it('sleep while idle instead of polling hot', async () => {
    const s = scratch();
    const queue = systemQueue(1);
    const pool = track(new WorkerPool(queue, { handlers: HANDLERS, threads: 4, leaseMillis: 5_000 }));
    await pool.start();
    // Then they all go idle.
    await bringUpLoops(queue, pool, s, 4);
    const before = process.cpuUsage();
    const startedAt = performance.now();
    await pause(600);
    const used = process.cpuUsage(before);
    const wallMillis = performance.now() - startedAt;
    const cpuMillis = (used.user + used.system) / 1000;
    // Four threads polling in a loop would burn ~4 × wall time (or every core); idle waits cost almost nothing.
    expect(cpuMillis).toBeLessThan(0.25 * wallMillis);
  });

  // The wake-up of idle threads by a submit is tested directly, with handshakes, in pool-wakeup.test.ts.
});

// ── drain, close, stats ─────────────────────────────────────────────────────

describe('WorkerPool#drain', { timeout: 20_000 }, () => {
  it('resolves only when no job is PENDING (delayed or in backoff) or RUNNING', async () => {
    const s = scratch();
    const queue = systemQueue(3, 100, 100);
    const pool = track(new WorkerPool(queue, { handlers: HANDLERS, threads: 2, leaseMillis: 2_000 }));
    await pool.start();
    const delayed = queue.submit('noop', s.payload(), 0, Date.now() + 300);
    const retrying = queue.submit('flaky', s.payload({ succeedOn: 3 }));
    const slow = queue.submit('slow', s.payload({ ms: 200 }));
    await pool.drain();
    const stats = queue.stats();
    expect(stats).toMatchObject({ pending: 0, running: 0, succeeded: 3 });
    for (const id of [delayed, retrying, slow]) expect(queue.view(id).status).toBe('SUCCEEDED');
  });

  it('resolves at once when the queue is empty, and rejects with IllegalStateError when no pool thread would drain it', async () => {
    const queue = systemQueue();
    const idle = track(new WorkerPool(queue, { handlers: HANDLERS, threads: 1 }));
    await idle.drain(); // nothing to wait for
    queue.submit('noop', '{}');
    await rejectsWith(idle.drain(), IllegalStateError, 'ERR_ILLEGAL_STATE');
  });
});

describe('WorkerPool#close', { timeout: 20_000 }, () => {
  it('lets running jobs finish: a job that ignores the signal completes on its first attempt', async () => {
    const s = scratch();
    const queue = systemQueue(3);
    const pool = track(new WorkerPool(queue, { handlers: HANDLERS, threads: 2, leaseMillis: 2_000 }));
    await pool.start();
    const id = queue.submit('slow', s.payload({ ms: 300 }));
    await until('the job started', () => s.events('start', id).length === 1);
    await pool.close();
    expect(queue.view(id)).toMatchObject({ status: 'SUCCEEDED', attempts: 1 });
    expect(s.events('ok', id)).toEqual([expect.objectContaining({ signalAborted: true })]);
  });

  it('hands back a job that outlives its chance to finish (max(leaseMillis, 1 s)): PENDING, not lost, and never completed by the stopped thread', async () => {
    const s = scratch();
    const queue = systemQueue(3);
    const pool = track(new WorkerPool(queue, { handlers: HANDLERS, threads: 1, leaseMillis: 300 }));
    await pool.start();
    const id = queue.submit('slow', s.payload({ ms: 4_000, laterMs: 0 }));
    await until('the job started', () => s.events('start', id).length === 1);
    await pool.close();
    expect(queue.view(id)).toMatchObject({ status: 'PENDING', attempts: 0, lastError: null });
    expect(queue.stats()).toMatchObject({ running: 0, ready: 1 });
    // Its thread was stopped: the handler never gets to finish and complete it behind our back.
    await holds('the handed-back job stays PENDING', () => queue.view(id).status === 'PENDING', 500);
    expect(s.events('ok', id)).toEqual([]);

    const next = track(new WorkerPool(queue, { handlers: HANDLERS, threads: 1, leaseMillis: 5_000 }));
    await next.start();
    await next.drain();
    expect(queue.view(id)).toMatchObject({ status: 'SUCCEEDED', attempts: 1 });
    expect(s.events('ok', id).map((l) => l.attempt)).toEqual([1]);
  });

  it('stops polling: a job submitted after close() stays PENDING', async () => {
    const s = scratch();
    const queue = systemQueue();
    const pool = track(new WorkerPool(queue, { handlers: HANDLERS, threads: 2, leaseMillis: 1_000 }));
    await pool.start();
    await pool.close();
    const id = queue.submit('noop', s.payload());
    await holds('no thread leases it', () => queue.view(id).attempts === 0, 300);
    await rejectsWith(pool.drain(), IllegalStateError, 'ERR_ILLEGAL_STATE');
  });

  it('can be called again and concurrently: every call resolves', async () => {
    const pool = track(new WorkerPool(systemQueue(), { handlers: HANDLERS, threads: 2, leaseMillis: 1_000 }));
    await pool.start();
    await Promise.all([pool.close(), pool.close()]);
    await pool.close();
  });

  it('waits for running jobs even when leaseMillis exceeds what one timer can wait (2^31 ms)', async () => {
    const s = scratch();
    const queue = systemQueue(3);
    const pool = track(new WorkerPool(queue, { handlers: HANDLERS, threads: 1, leaseMillis: 2 ** 31 }));
    await pool.start();
    const id = queue.submit('slow', s.payload({ ms: 300 }));
    await until('the job started', () => s.events('start', id).length === 1);
    await pool.close();
    expect(queue.view(id)).toMatchObject({ status: 'SUCCEEDED', attempts: 1, lastError: null });
  });
});

describe('WorkerPool#stats', { timeout: 20_000 }, () => {
  it('reports the queue stats plus threads, restarts and refused', async () => {
    const s = scratch();
    const queue = systemQueue(1);
    const pool = track(new WorkerPool(queue, { handlers: HANDLERS, threads: 3, leaseMillis: 2_000 }));
    expect(pool.stats()).toEqual({ ...queue.stats(), threads: 3, restarts: 0, refused: 0 });
    await pool.start();
    queue.submit('noop', s.payload());
    queue.submit('alwaysFails', s.payload());
    queue.submit('noop', s.payload(), 0, Date.now() + 60_000);
    await until('two jobs settled', () => queue.stats().succeeded === 1 && queue.stats().dead === 1);
    const stats = pool.stats();
    expect(stats).toEqual({ ...queue.stats(), threads: 3, restarts: 0, refused: 0 });
    expect(stats).toMatchObject({ succeeded: 1, dead: 1, pending: 1, delayed: 1, running: 0 });
  });
});
