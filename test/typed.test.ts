/** jsonHandlers at run time: what it refuses, and what the handlers it makes do with a payload. */
import { describe, expect, it } from 'vitest';
import { PermanentError, jsonHandlers, type HandlerContext } from '../dist/index.js';
import { bad, expectInvalidSync, unreadable } from './helpers.js';

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
