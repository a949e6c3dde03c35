import { describe, expect, it } from 'vitest';
import { IllegalStateError } from '../dist/index.js';
import { T0, expectIllegalState, expectNoChange, expectStale, killJob, mustPoll, setup } from './helpers.js';

describe('cancel from PENDING', () => {
  it('cancels a ready PENDING job', () => {
    const { queue } = setup();
    const id = queue.submit('t', 'p');
    queue.cancel(id);
    expect(queue.view(id)).toMatchObject({ id, status: 'CANCELLED', attempts: 0, leaseUntil: null, payload: 'p' });
  });

  it('cancels a delayed PENDING job', () => {
    const { queue } = setup();
    const id = queue.submit('t', 'p', 0, T0 + 60_000);
    queue.cancel(id);
    expect(queue.view(id).status).toBe('CANCELLED');
  });

  it('cancels a job waiting out its retry backoff, keeping its history', () => {
    const { queue } = setup();
    const id = queue.submit('t', 'p');
    queue.fail(id, mustPoll(queue, id).token, 'first');
    queue.cancel(id);
    expect(queue.view(id)).toMatchObject({ status: 'CANCELLED', attempts: 1, lastError: 'first' });
  });

  it('cancels a job whose lease has expired (expiry made it PENDING again)', () => {
    const { queue, clock } = setup();
    const id = queue.submit('t', 'p');
    const lease = mustPoll(queue, id, 1000);
    clock.advance(1000);
    queue.cancel(id);
    expect(queue.view(id).status).toBe('CANCELLED');
    expectStale(() => queue.complete(id, lease.token));
  });

  it('cancels a job revived by retryDead', () => {
    const s = setup({ maxAttempts: 1 });
    const id = s.queue.submit('t', 'p');
    killJob(s, id);
    s.queue.retryDead(id);
    s.queue.cancel(id);
    expect(s.queue.view(id).status).toBe('CANCELLED');
  });

  it('cancels only the named job', () => {
    const { queue } = setup();
    queue.submit('t', 'a'); // J1
    queue.submit('t', 'b'); // J2
    queue.submit('t', 'c'); // J3
    queue.cancel('J2');
    expect(['J1', 'J2', 'J3'].map((id) => queue.view(id).status)).toEqual(['PENDING', 'CANCELLED', 'PENDING']);
  });
});

describe('a cancelled job', () => {
  it('is never polled, not even after its runAt passes', () => {
    const { queue, clock } = setup();
    queue.submit('t', 'ready', 100); // J1
    queue.submit('t', 'delayed', 100, T0 + 500); // J2
    queue.submit('t', 'other'); // J3
    queue.cancel('J1');
    queue.cancel('J2');
    clock.advance(1_000_000);
    const other = mustPoll(queue, 'J3');
    queue.complete('J3', other.token);
    expect(queue.poll('w', 1000)).toBeUndefined();
    clock.advance(1_000_000);
    expect(queue.poll('w', 1000)).toBeUndefined();
  });

  it('is neither pending nor dead in the counts', () => {
    const { queue } = setup();
    queue.submit('t', 'a'); // J1
    queue.submit('t', 'b', 0, T0 + 100); // J2
    queue.cancel('J1');
    queue.cancel('J2');
    expect(queue.queueDepth()).toBe(0);
    expect(queue.dlqDepth()).toBe(0);
    expect(queue.deadLetters()).toEqual([]);
    expect(queue.stats()).toEqual({ pending: 0, ready: 0, delayed: 0, running: 0, succeeded: 0, dead: 0, cancelled: 2 });
  });

  it('cannot be revived by retryDead', () => {
    const { queue } = setup();
    const id = queue.submit('t', 'p');
    queue.cancel(id);
    expectIllegalState(() => queue.retryDead(id));
    expect(queue.view(id).status).toBe('CANCELLED');
  });
});

describe('cancel outside PENDING', () => {
  it('refuses a RUNNING job with IllegalStateError and leaves the lease valid', () => {
    const { queue } = setup();
    const id = queue.submit('t', 'p');
    const lease = mustPoll(queue, id);
    const error = expectNoChange(queue, [id], () => queue.cancel(id), IllegalStateError, 'ERR_ILLEGAL_STATE');
    expect(error.name).toBe('IllegalStateError');
    queue.complete(id, lease.token);
    expect(queue.view(id).status).toBe('SUCCEEDED');
  });

  it('refuses a SUCCEEDED job', () => {
    const { queue } = setup();
    const id = queue.submit('t', 'p');
    queue.complete(id, mustPoll(queue, id).token);
    expectNoChange(queue, [id], () => queue.cancel(id), IllegalStateError, 'ERR_ILLEGAL_STATE');
  });

  it('refuses a DEAD job, which stays in the dead letters', () => {
    const s = setup({ maxAttempts: 1 });
    const id = s.queue.submit('t', 'p');
    killJob(s, id);
    expectNoChange(s.queue, [id], () => s.queue.cancel(id), IllegalStateError, 'ERR_ILLEGAL_STATE');
    expect(s.queue.deadLetters().map((v) => v.id)).toEqual([id]);
  });

  it('refuses a job that is already CANCELLED', () => {
    const { queue } = setup();
    const id = queue.submit('t', 'p');
    queue.cancel(id);
    expectNoChange(queue, [id], () => queue.cancel(id), IllegalStateError, 'ERR_ILLEGAL_STATE');
  });

  it('uses the plain IllegalStateError code, not the stale-lease one', () => {
    const { queue } = setup();
    const id = queue.submit('t', 'p');
    mustPoll(queue, id);
    expect(expectIllegalState(() => queue.cancel(id)).code).toBe('ERR_ILLEGAL_STATE');
  });
});
