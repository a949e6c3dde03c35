/** jsonHandlers at run time: what it refuses, and what the handlers it makes do with a payload. */
import { describe, expect, it } from 'vitest';
import { JobQueue, JsonJobs, ManualClock, PermanentError, RetryPolicy, jsonHandlers, type HandlerContext } from '../../dist/index.js';
import { bad, expectInvalidSync, unreadable } from '../support/helpers.js';

const ctx = { jobId: 'J1', type: 'email', attempt: 1, signal: new AbortController().signal, heartbeat: () => {} } as HandlerContext;

describe('jsonHandlers', () => {
  it.each([
    ['undefined', undefined],
    ['null', null],
    ['a string', 'email'],
    ['a function', () => {}],
  ])('refuses %s as the handlers with InvalidArgumentError', (_name, handlers) => {
    expect(expectInvalidSync(() => jsonHandlers(bad(handlers))).message).toContain('`handlers`');
  });

  it('refuses a handler that is not a function, naming its job type', () => {
    expect(expectInvalidSync(() => jsonHandlers(bad({ email: 'send' }))).message).toContain('`handlers.email`');
  });

  it('refuses handlers that throw as they are read, rather than letting that error out', () => {
    expect(expectInvalidSync(() => jsonHandlers(unreadable())).message).toMatch(/`handlers` .*properties can be read/);
  });

  it('hands each handler its payload parsed from JSON, and dead-letters a payload that is not JSON', async () => {
    const seen: unknown[] = [];
    const handlers = jsonHandlers({ email: (payload: { to: string }) => seen.push(payload) }) as Record<string, (payload: string, ctx: HandlerContext) => unknown>;
    await handlers.email!('{"to":"a@b.c"}', ctx);
    expect(seen).toEqual([{ to: 'a@b.c' }]);
    expect(() => handlers.email!('{oops', ctx)).toThrow(PermanentError);
  });
});

describe('JsonJobs#submit', () => {
  const handlers = jsonHandlers({ email: (_payload: { to: string }) => undefined });

  it("passes submit's options on with the JSON payload, as the positional form's priority", () => {
    const queue = new JobQueue(new ManualClock(1_000), new RetryPolicy(3, 0, 0));
    const jobs = new JsonJobs<typeof handlers>(queue);
    const id = jobs.submit('email', { to: 'ada@example.com' }, { maxAttempts: 2, delayMillis: 500, priority: 4, key: 'k' });
    expect(queue.view(id)).toMatchObject({ payload: '{"to":"ada@example.com"}', maxAttempts: 2, nextRunAt: 1_500, priority: 4, key: 'k' });
    expect(queue.view(jobs.submit('email', { to: 'b@example.com' }, 7)).priority).toBe(7);
  });

  it('refuses a mix of the two forms (options and a runAtMillis), submitting nothing', () => {
    const queue = new JobQueue(new ManualClock(1_000), new RetryPolicy(3, 0, 0));
    const jobs = new JsonJobs<typeof handlers>(queue);
    expectInvalidSync(() => jobs.submit('email', { to: 'ada@example.com' }, { priority: 1 }, 5));
    expect(queue.stats().pending).toBe(0);
  });
});
