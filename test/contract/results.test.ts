import { expect, it } from 'vitest';
import { AbortedError, IllegalStateError, InvalidArgumentError, JobFailedError, TimeoutError } from '../../dist/index.js';
import { describeEachBackend } from '../support/backends.js';
import { bad, expectError, expectInvalid, expectNotFound, mustPoll, setup, snapshot, thrownBy } from '../support/helpers.js';

/**
 * A promise and whether it has settled yet, to show that a wait was still
 * waiting when the job finished; its rejection counts as handled until the
 * test awaits it.
 */
function tracked<T>(promise: Promise<T>): { promise: Promise<T>; settled: () => boolean } {
  let settled = false;
  promise.then(() => (settled = true), () => (settled = true));
  return { promise, settled: () => settled };
}

const RESULTS: ReadonlyArray<readonly [string, unknown]> = [
  ['an object', { rows: 3, names: ['a', 'é'], nested: { ok: true, none: null } }],
  ['an array', [1, 'two', [3]]],
  ['a string', 'done'],
  ['a number', 0],
  ['false', false],
  ['null', null],
  ['a long text across many arena chunks', 'x'.repeat(5_000)],
];

const REFUSED: ReadonlyArray<readonly [string, () => unknown]> = [
  ['a cycle', () => {
    const cycle: Record<string, unknown> = {};
    cycle['self'] = cycle;
    return cycle;
  }],
  ['a BigInt', () => 10n],
  ['a function', () => () => 1],
  ['a symbol', () => Symbol('s')],
  ['more JSON than maxResultBytes (64)', () => 'y'.repeat(63)],
];

describeEachBackend('results', (backend) => {
  it.each(RESULTS)('stores %s with the SUCCEEDED job, and view gives it back parsed', async (_name, result) => {
    const { queue } = await setup(backend);
    const id = await queue.submit('t', 'p');
    const lease = await mustPoll(queue, id);
    await queue.complete(id, lease.token, result);
    const view = await queue.view(id);
    expect(view.status).toBe('SUCCEEDED');
    expect(view.result).toEqual(result);
  });

  it('has no result for a complete without one, nor for a job not SUCCEEDED', async () => {
    const { queue } = await setup(backend);
    const [a, b] = [await queue.submit('t'), await queue.submit('t')];
    const lease = await mustPoll(queue, a);
    expect((await queue.view(a)).result).toBeUndefined();
    await queue.complete(a, lease.token);
    expect((await queue.view(a)).result).toBeUndefined();
    expect((await queue.view(b)).result).toBeUndefined();
  });

  it('stores the result of completeAndPoll, and leases the next job', async () => {
    const { queue } = await setup(backend);
    const [a, b] = [await queue.submit('t'), await queue.submit('t')];
    const lease = await mustPoll(queue, a);
    const next = await queue.completeAndPoll(a, lease.token, 'w1', 1_000, { sum: 42 });
    expect(next?.jobId).toBe(b);
    expect((await queue.view(a)).result).toEqual({ sum: 42 });
  });

  it.each(REFUSED)('refuses %s as a result with InvalidArgumentError, and changes nothing: the job RUNNING, its token valid', async (_name, make) => {
    const { queue } = await setup(backend, { options: { maxResultBytes: 64 } });
    const [a, b] = [await queue.submit('t'), await queue.submit('t')];
    const lease = await mustPoll(queue, a);
    const before = await snapshot(queue, [a, b]);
    await expectInvalid(() => queue.complete(a, lease.token, make()));
    await expectInvalid(() => queue.completeAndPoll(a, lease.token, 'w1', 1_000, make()));
    expect(await snapshot(queue, [a, b])).toEqual(before);
    // The token still completes the job.
    await queue.complete(a, lease.token, 'ok');
    expect((await queue.view(a)).result).toBe('ok');
  });

  it('counts maxResultBytes in UTF-8 bytes of the JSON text', async () => {
    const { queue } = await setup(backend, { options: { maxResultBytes: 8 } });
    const id = await queue.submit('t');
    const lease = await mustPoll(queue, id);
    // '"ééé"' is 8 bytes of JSON: it fits; one more é does not.
    await expectInvalid(() => queue.complete(id, lease.token, 'éééé'));
    await queue.complete(id, lease.token, 'ééé');
    expect((await queue.view(id)).result).toBe('ééé');
  });

  it('refuses a maxResultBytes option that is not an integer from 1 to 2^24', async () => {
    const { clock, policy } = await setup(backend);
    for (const value of [0, 1.5, 2 ** 24 + 1, bad('64')]) {
      await expectInvalid(() => backend.open(clock, policy, { maxResultBytes: value }));
    }
  });

  it('frees a result with its evicted job: results far beyond the room of one queue keep fitting', async () => {
    // An arena of about 30 chunks (the smallest for 1-byte payloads), 4 slots: each result takes 10 chunks.
    const { queue } = await setup(backend, { options: { capacity: 4, maxPayloadBytes: 1, arenaBytes: 2_084 } });
    const result = 'r'.repeat(600);
    for (let i = 0; i < 40; i++) {
      const id = await queue.submit('t', 'p');
      const lease = await mustPoll(queue, id);
      await queue.complete(id, lease.token, `${i}${result}`);
      expect((await queue.view(id)).result).toBe(`${i}${result}`);
    }
    expect((await queue.stats()).succeeded).toBeLessThanOrEqual(4);
  });
});

describeEachBackend('finished', (backend) => {
  it('resolves with the result once the job it waits for is completed', async () => {
    const { queue } = await setup(backend);
    const id = await queue.submit('t');
    const lease = await mustPoll(queue, id);
    const waiting = tracked(queue.finished(id));
    await queue.view(id);
    expect(waiting.settled()).toBe(false);
    await queue.complete(id, lease.token, { rows: 7 });
    await expect(waiting.promise).resolves.toEqual({ rows: 7 });
  });

  it('resolves at once, with its result or undefined, for a job already SUCCEEDED', async () => {
    const { queue } = await setup(backend);
    const [a, b] = [await queue.submit('t'), await queue.submit('t')];
    await queue.complete(a, (await mustPoll(queue, a)).token, [1, 2]);
    await queue.complete(b, (await mustPoll(queue, b)).token);
    await expect(queue.finished(a)).resolves.toEqual([1, 2]);
    await expect(queue.finished(b)).resolves.toBeUndefined();
  });

  it('rejects JobFailedError with status DEAD and lastError once the job is dead-lettered', async () => {
    const { queue } = await setup(backend);
    const id = await queue.submit('t');
    const lease = await mustPoll(queue, id);
    const waiting = tracked(queue.finished(id)).promise;
    await queue.fail(id, lease.token, 'poison', { permanent: true });
    const error = (await expectError(() => waiting, JobFailedError, 'ERR_JOB_FAILED')) as JobFailedError;
    expect([error.jobId, error.status, error.lastError]).toEqual([id, 'DEAD', 'poison']);
    // Already DEAD: at once.
    await expectError(() => queue.finished(id), JobFailedError, 'ERR_JOB_FAILED');
  });

  it('rejects JobFailedError once the last attempt\'s lease expires', async () => {
    const { queue, clock } = await setup(backend, { maxAttempts: 1 });
    const id = await queue.submit('t');
    await mustPoll(queue, id, 1_000);
    const waiting = tracked(queue.finished(id)).promise;
    clock.advance(1_000);
    // Any call brings the queue up to now: the expiry dead-letters the job.
    expect((await queue.stats()).dead).toBe(1);
    const error = (await expectError(() => waiting, JobFailedError, 'ERR_JOB_FAILED')) as JobFailedError;
    expect([error.status, error.lastError]).toEqual(['DEAD', 'lease expired']);
  });

  it('rejects JobFailedError with status CANCELLED once the job is cancelled', async () => {
    const { queue } = await setup(backend);
    const id = await queue.submit('t');
    const waiting = tracked(queue.finished(id)).promise;
    await queue.cancel(id);
    const error = (await expectError(() => waiting, JobFailedError, 'ERR_JOB_FAILED')) as JobFailedError;
    expect([error.status, error.lastError]).toEqual(['CANCELLED', null]);
  });

  it('waits through retries: a failed attempt that will be retried does not settle it', async () => {
    const { queue } = await setup(backend, { baseBackoffMillis: 0, maxBackoffMillis: 0 });
    const id = await queue.submit('t');
    const waiting = tracked(queue.finished(id));
    await queue.fail(id, (await mustPoll(queue, id)).token, 'flaky');
    await queue.view(id);
    expect(waiting.settled()).toBe(false);
    await queue.complete(id, (await mustPoll(queue, id)).token, 'second time');
    await expect(waiting.promise).resolves.toBe('second time');
  });

  it('rejects JobNotFoundError for an id no job has', async () => {
    const { queue } = await setup(backend);
    await expectNotFound(() => queue.finished('J77'));
    await expectNotFound(() => queue.finished('nope'));
  });

  it('rejects JobNotFoundError for a job evicted before it was seen finished', async () => {
    const { queue } = await setup(backend, { options: { capacity: 1 } });
    const first = await queue.submit('t');
    await queue.complete(first, (await mustPoll(queue, first)).token, 'gone soon');
    // The second submit needs the only slot: the finished first job is evicted.
    await queue.submit('t');
    await expectNotFound(() => queue.finished(first));
  });

  it('rejects TimeoutError after timeoutMillis, and the job is as it was', async () => {
    const { queue } = await setup(backend);
    const id = await queue.submit('t');
    const before = await snapshot(queue, [id]);
    const error = await expectError(() => queue.finished(id, { timeoutMillis: 20 }), TimeoutError, 'ERR_TIMEOUT');
    expect(error.message).toContain(id);
    expect(await snapshot(queue, [id])).toEqual(before);
  });

  it('rejects AbortedError when its signal aborts, with the signal\'s reason as cause', async () => {
    const { queue } = await setup(backend);
    const id = await queue.submit('t');
    const controller = new AbortController();
    const waiting = tracked(queue.finished(id, { signal: controller.signal })).promise;
    await queue.view(id);
    const reason = new Error('shutting down');
    controller.abort(reason);
    const error = await expectError(() => waiting, AbortedError, 'ERR_ABORTED');
    expect(error.cause).toBe(reason);
    // An already aborted signal: as soon as the job is seen unfinished.
    await expectError(() => queue.finished(id, { signal: AbortSignal.abort() }), AbortedError, 'ERR_ABORTED');
  });

  it('rejects bad options with InvalidArgumentError (a rejection, not a throw)', async () => {
    const { queue } = await setup(backend);
    const id = await queue.submit('t');
    for (const options of [bad(5), bad([]), { timeoutMillis: -1 }, { timeoutMillis: NaN }, { timeoutMillis: bad(null) }, { signal: bad({}) }, bad({ timeout: 5 })]) {
      const outcome = queue.finished(id, options);
      expect(outcome).toBeInstanceOf(Promise);
      expect(await thrownBy(() => outcome)).toBeInstanceOf(InvalidArgumentError);
    }
  });

  it('rejects a wait with IllegalStateError when its queue is closed', async () => {
    const { queue } = await setup(backend);
    const id = await queue.submit('t');
    const waiting = tracked(queue.finished(id)).promise;
    await queue.view(id);
    await queue.close();
    await expectError(() => waiting, IllegalStateError, 'ERR_ILLEGAL_STATE');
  });

  it('settles every one of several waits for the same job, and waits for different jobs apart', async () => {
    const { queue } = await setup(backend);
    const [a, b] = [await queue.submit('t'), await queue.submit('t')];
    const leaseA = await mustPoll(queue, a);
    const leaseB = await mustPoll(queue, b);
    const waits = [queue.finished(a), queue.finished(a), queue.finished(b)].map((wait) => tracked(wait).promise);
    const forB = tracked(waits[2]!);
    await queue.complete(a, leaseA.token, 'A');
    await expect(Promise.all(waits.slice(0, 2))).resolves.toEqual(['A', 'A']);
    await queue.view(b);
    expect(forB.settled()).toBe(false);
    await queue.complete(b, leaseB.token, 'B');
    await expect(forB.promise).resolves.toBe('B');
  });
});
