/**
 * Edits of a PENDING job — changePriority, changeDelay, promote,
 * updatePayload — on every backend: each changes the job in place (its place
 * in the ready order follows), and each is refused with IllegalStateError,
 * changing nothing, on any other status.
 */
import { expect, it } from 'vitest';
import { IllegalStateError, InvalidArgumentError, JobNotFoundError } from '../../dist/index.js';
import { describeEachBackend, type ContractQueue } from '../support/backends.js';
import { T0, bad, drainOrder, expectNoChange, killJob, mustPoll, setup } from '../support/helpers.js';

describeEachBackend('changePriority of a PENDING job', (backend) => {
  it('moves a ready job to its new place in the ready order', async () => {
    const { queue } = await setup(backend);
    const a = await queue.submit('t', 'a');
    const b = await queue.submit('t', 'b', 3);
    const c = await queue.submit('t', 'c');
    await queue.changePriority(c, 5);
    await queue.changePriority(b, -1);
    expect(await queue.view(c)).toMatchObject({ status: 'PENDING', priority: 5, payload: 'c', attempts: 0, nextRunAt: T0 });
    expect(await drainOrder(queue)).toEqual([c, a, b]);
  });

  it('keeps a delayed job delayed, and it runs by its new priority once due', async () => {
    const { queue, clock } = await setup(backend);
    const delayed = await queue.submit('t', 'd', 0, T0 + 500);
    const other = await queue.submit('t', 'o', 1, T0 + 500);
    await queue.changePriority(delayed, 9);
    expect(await queue.stats()).toMatchObject({ pending: 2, ready: 0, delayed: 2 });
    expect(await queue.poll('w', 1_000)).toBeUndefined();
    clock.advance(500);
    expect(await drainOrder(queue)).toEqual([delayed, other]);
  });
});

describeEachBackend('changeDelay of a PENDING job', (backend) => {
  it('delays a ready job: it runs delayMillis from now, not before', async () => {
    const { queue, clock } = await setup(backend);
    const id = await queue.submit('t', 'p');
    clock.advance(10);
    await queue.changeDelay(id, 500);
    expect(await queue.view(id)).toMatchObject({ status: 'PENDING', nextRunAt: T0 + 510, attempts: 0 });
    expect(await queue.stats()).toMatchObject({ pending: 1, ready: 0, delayed: 1 });
    clock.advance(499);
    expect(await queue.poll('w', 1_000)).toBeUndefined();
    clock.advance(1);
    expect(await mustPoll(queue, id)).toMatchObject({ attempt: 1, payload: 'p' });
  });

  it('brings a delayed job forward, and with 0 makes it ready now', async () => {
    const { queue, clock } = await setup(backend);
    const id = await queue.submit('t', 'p', 0, T0 + 60_000);
    await queue.changeDelay(id, 100);
    expect((await queue.view(id)).nextRunAt).toBe(T0 + 100);
    clock.advance(20);
    await queue.changeDelay(id, 0);
    expect(await queue.view(id)).toMatchObject({ status: 'PENDING', nextRunAt: T0 + 20 });
    await mustPoll(queue, id);
  });

  it('moves a job waiting out its backoff, keeping its attempts and lastError', async () => {
    const { queue } = await setup(backend, { baseBackoffMillis: 60_000, maxBackoffMillis: 60_000 });
    const id = await queue.submit('t', 'p');
    await queue.fail(id, (await mustPoll(queue, id)).token, 'first');
    await queue.changeDelay(id, 0);
    expect(await queue.view(id)).toMatchObject({ status: 'PENDING', attempts: 1, lastError: 'first', nextRunAt: T0 });
    expect((await mustPoll(queue, id)).attempt).toBe(2);
  });
});

describeEachBackend('promote of a PENDING job', (backend) => {
  it('makes a delayed job ready now, in runAt order among the ready', async () => {
    const { queue, clock } = await setup(backend);
    const delayed = await queue.submit('t', 'd', 0, T0 + 60_000);
    clock.advance(5);
    const later = await queue.submit('t', 'l');
    clock.advance(5);
    await queue.promote(delayed);
    expect(await queue.view(delayed)).toMatchObject({ status: 'PENDING', nextRunAt: T0 + 10 });
    expect(await queue.stats()).toMatchObject({ ready: 2, delayed: 0 });
    expect(await drainOrder(queue)).toEqual([later, delayed]);
  });

  it('leaves a job that is already ready as it is', async () => {
    const { queue, clock } = await setup(backend);
    const first = await queue.submit('t', 'a');
    const second = await queue.submit('t', 'b');
    clock.advance(50);
    const before = await queue.view(first);
    await queue.promote(first);
    expect(await queue.view(first)).toEqual(before);
    expect(await drainOrder(queue)).toEqual([first, second]);
  });
});

describeEachBackend('updatePayload of a PENDING job', (backend) => {
  it('gives the next lease and the view the new payload, and nothing else changes', async () => {
    const { queue } = await setup(backend);
    const id = await queue.submit('t', 'old', { priority: 2, headers: { tenant: 'a' }, key: 'k' });
    const before = await queue.view(id);
    await queue.updatePayload(id, '{"n":2}');
    expect(await queue.view(id)).toEqual({ ...before, payload: '{"n":2}' });
    expect(await mustPoll(queue, id)).toMatchObject({ payload: '{"n":2}', headers: { tenant: 'a' } });
  });

  it('takes null as the empty payload, and a payload many times the size of the first', async () => {
    const { queue } = await setup(backend);
    const id = await queue.submit('t', 'x');
    await queue.updatePayload(id, null);
    expect((await queue.view(id)).payload).toBe('');
    const big = 'é'.repeat(3_000);
    await queue.updatePayload(id, big);
    expect((await mustPoll(queue, id)).payload).toBe(big);
  });

  it('frees the payload it replaces: a hundred edits fit an arena that holds a few payloads', async () => {
    const { queue } = await setup(backend, { options: { maxPayloadBytes: 1_000, arenaBytes: 8_192 } });
    const id = await queue.submit('t', 'a'.repeat(900));
    for (let i = 0; i < 100; i++) await queue.updatePayload(id, String(i % 10).repeat(900));
    expect((await mustPoll(queue, id)).payload).toBe('9'.repeat(900));
  });
});

describeEachBackend('an edit of a job a rate limit holds back', (backend) => {
  it('keeps it held until its window opens, counted once, and it then runs as edited', async () => {
    const { queue, clock } = await setup(backend);
    await queue.setRateLimit('email', { max: 1, windowMillis: 1_000 });
    const first = await queue.submit('email', 'a');
    const held = await queue.submit('email', 'b');
    const other = await queue.submit('email', 'c');
    await mustPoll(queue, first, 60_000);
    expect(await queue.poll('w', 60_000)).toBeUndefined();
    await queue.changePriority(held, 5);
    await queue.updatePayload(held, 'b2');
    expect(await queue.poll('w', 60_000)).toBeUndefined();
    expect(await queue.stats()).toMatchObject({ pending: 2, ready: 2, delayed: 0, running: 1 });
    clock.advance(1_000);
    expect(await mustPoll(queue, held, 60_000)).toMatchObject({ payload: 'b2' });
    expect(await queue.poll('w', 60_000)).toBeUndefined();
    clock.advance(1_000);
    await mustPoll(queue, other, 60_000);
  });
});

/** The four edits, each with good arguments. */
const EDITS: readonly [string, (queue: ContractQueue, id: string) => unknown][] = [
  ['changePriority', (queue, id) => queue.changePriority(id, 7)],
  ['changeDelay', (queue, id) => queue.changeDelay(id, 1_000)],
  ['promote', (queue, id) => queue.promote(id)],
  ['updatePayload', (queue, id) => queue.updatePayload(id, 'new')],
];

describeEachBackend('an edit outside PENDING', (backend) => {
  it('is refused with IllegalStateError for a RUNNING, SUCCEEDED, DEAD or CANCELLED job, changing nothing', async () => {
    const s = await setup(backend, { maxAttempts: 1 });
    const { queue } = s;
    const running = await queue.submit('t', 'r', 0, T0 + 100); // J1, delayed at first: promote would move it
    const succeeded = await queue.submit('t', 's');
    const dead = await queue.submit('t', 'd');
    const cancelled = await queue.submit('t', 'c', 0, T0 + 100);
    await queue.complete(succeeded, (await mustPoll(queue, succeeded)).token);
    await killJob(s, dead);
    await queue.cancel(cancelled);
    s.clock.advance(100);
    const lease = await mustPoll(queue, running);
    const ids = [running, succeeded, dead, cancelled];
    for (const [name, edit] of EDITS) {
      for (const id of ids) {
        const error = await expectNoChange(queue, ids, () => edit(queue, id), IllegalStateError, 'ERR_ILLEGAL_STATE');
        expect(error.message, `${name} of ${id}`).toMatch(/only while PENDING/);
      }
    }
    // The lease the refused edits met is still good.
    await queue.complete(running, lease.token);
  });

  it('is refused with JobNotFoundError for an unknown or malformed id, changing nothing', async () => {
    const { queue } = await setup(backend);
    const id = await queue.submit('t', 'p');
    for (const [, edit] of EDITS) {
      await expectNoChange(queue, [id], () => edit(queue, 'J99'), JobNotFoundError, 'ERR_JOB_NOT_FOUND');
      await expectNoChange(queue, [id], () => edit(queue, 'x'), JobNotFoundError, 'ERR_JOB_NOT_FOUND');
    }
  });

  it('refuses a bad argument with InvalidArgumentError before it looks at the job, changing nothing', async () => {
    const { queue } = await setup(backend, { options: { maxPayloadBytes: 10 } });
    const id = await queue.submit('t', 'p');
    const refused = [
      () => queue.changePriority(id, 1.5), () => queue.changePriority(id, bad('1')), () => queue.changePriority(id, Number.NaN),
      () => queue.changeDelay(id, -1), () => queue.changeDelay(id, Number.NaN), () => queue.changeDelay(id, bad(undefined)),
      () => queue.updatePayload(id, bad(5)), () => queue.updatePayload(id, 'x'.repeat(11)), () => queue.updatePayload(id, '\uD800'),
      // Arguments first: a bad one is refused even for an unknown job.
      () => queue.changePriority('J99', 0.5),
    ];
    for (const call of refused) await expectNoChange(queue, [id], call, InvalidArgumentError, 'ERR_INVALID_ARGUMENT');
  });
});
