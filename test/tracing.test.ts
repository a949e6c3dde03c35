/**
 * Job headers (the carrier of a trace context) on every backend, and
 * OpenTelemetry spans: a PRODUCER span `create {queue}` at each submit of a
 * traced queue, a CONSUMER span `process {queue}` around each attempt
 * (traceProcess, a WorkerPool's thread), a child of the producer's span
 * across threads and processes. The main thread's spans go to the SDK's
 * InMemorySpanExporter; a pool thread or child process sets up its own SDK
 * (test/fixtures/tracing-sdk.mjs) and sends its spans here as records.
 */
import { spawn } from 'node:child_process';
import { BroadcastChannel } from 'node:worker_threads';
import { SpanKind, SpanStatusCode, context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  InvalidArgumentError, JobQueue, MAX_HEADERS_BYTES, ManualClock, QueueFullError, RedisJobQueue, RetryPolicy, WorkerPool, systemClock, traceProcess,
  type JobQueueOptions, type Lease,
} from '../dist/index.js';
import { describeEachBackend, type ContractQueue } from './backends.js';
import { SPANS_CHANNEL, spanRecord } from './fixtures/tracing-sdk.mjs';
import { T0, bad, expectInvalid, mustPoll, setup, snapshot, withTimeout } from './helpers.js';
import { closeJournal, openJournal, tempJournal } from './journal-harness.js';
import { track, trackQueue } from './pool-harness.js';
import { describeRedis, fileRedis } from './redis-harness.js';

/** A finished span as the tests compare it (see tracing-sdk.mjs). */
interface SpanRecord {
  name: string;
  kind: SpanKind;
  traceId: string;
  spanId: string;
  parentSpanId: string | null;
  attributes: Record<string, unknown>;
  status: { code: SpanStatusCode; message: string | null };
}

const exporter = new InMemorySpanExporter();
beforeAll(() => {
  trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
});
afterAll(() => {
  trace.disable();
  propagation.disable();
  context.disable();
});
beforeEach(() => exporter.reset());

/** The spans this thread finished since the test began. */
const finished = (): SpanRecord[] => exporter.getFinishedSpans().map((span) => spanRecord(span) as SpanRecord);

/** W3C traceparent: version, trace id, parent (span) id, flags. */
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-0[01]$/;

// ── headers, on every backend ────────────────────────────────────────────

const BAD_HEADERS: ReadonlyArray<readonly [string, unknown]> = [
  ['a string', 'traceparent'],
  ['null', null],
  ['an array', ['a']],
  ['a Map', new Map([['a', 'b']])],
  ['a number value', { attempt: 1 }],
  ['an undefined value', { a: undefined }],
  ['a lone surrogate', { a: '\ud800' }],
  [`more than MAX_HEADERS_BYTES (${MAX_HEADERS_BYTES}) of JSON`, { big: 'x'.repeat(MAX_HEADERS_BYTES) }],
];

describeEachBackend('job headers', (backend) => {
  it('stores a job\'s headers and gives them back in its lease and its view; null for a job without any', async () => {
    const { queue } = await setup(backend);
    const headers = { tenant: 'acme', 'x-correlation-id': 'é'.repeat(40), empty: '' };
    const withHeaders = await queue.submit('t', 'p', { headers });
    const without = await queue.submit('t', 'p');
    const [first, second] = await queue.submitMany([{ type: 't', headers: { n: '1' } }, { type: 't' }]);
    expect((await mustPoll(queue, withHeaders)).headers).toEqual(headers);
    expect((await mustPoll(queue, without)).headers).toBeNull();
    expect((await mustPoll(queue, first)).headers).toEqual({ n: '1' });
    expect((await mustPoll(queue, second)).headers).toBeNull();
    expect((await queue.view(withHeaders)).headers).toEqual(headers);
    expect((await queue.view(without)).headers).toBeNull();
    expect((await queue.view(first)).headers).toEqual({ n: '1' });
  });

  it('keeps a job\'s headers through a failed attempt, a retry of the dead job, completeAndPoll\'s lease and its finish', async () => {
    const { queue, clock } = await setup(backend, { maxAttempts: 1 });
    const a = await queue.submit('t', 'a', { headers: { job: 'a' } });
    const b = await queue.submit('t', 'b', { headers: { job: 'b' } });
    await queue.fail(a, (await mustPoll(queue, a)).token, 'no');
    expect(await queue.view(a)).toMatchObject({ status: 'DEAD', headers: { job: 'a' } });
    await queue.retryDead(a);
    clock.advance(1);
    const lease = await mustPoll(queue, a);
    expect(lease.headers).toEqual({ job: 'a' });
    const next = await queue.completeAndPoll(a, lease.token, 'w1', 1_000);
    expect(next).toMatchObject({ jobId: b, headers: { job: 'b' } });
    expect(await queue.view(a)).toMatchObject({ status: 'SUCCEEDED', headers: { job: 'a' } });
  });

  it.each(BAD_HEADERS)('refuses %s as headers with InvalidArgumentError, and stores nothing', async (_name, headers) => {
    const { queue } = await setup(backend);
    const kept = await queue.submit('t', 'kept', { headers: { ok: 'yes' } });
    const before = await snapshot(queue, [kept, 'J2']);
    await expectInvalid(() => queue.submit('t', 'p', { headers: bad(headers) }));
    await expectInvalid(() => queue.submitMany([{ type: 't', headers: { ok: 'yes' } }, { type: 't', headers: bad(headers) }]));
    expect(await snapshot(queue, [kept, 'J2'])).toEqual(before);
  });

  it('takes headers of exactly MAX_HEADERS_BYTES of JSON', async () => {
    const { queue } = await setup(backend);
    // {"a":"..."} is 8 bytes around the value.
    const headers = { a: 'y'.repeat(MAX_HEADERS_BYTES - 8) };
    const id = await queue.submit('t', 'p', { headers });
    expect((await mustPoll(queue, id)).headers).toEqual(headers);
  });
});

describe('job headers in the journal', () => {
  const open = (path: string, clock: ManualClock): JobQueue => openJournal(path, clock, new RetryPolicy(3, 100, 10_000));

  it('keeps every job\'s headers across a reopen, finished or not, and none for a job without', () => {
    const path = tempJournal();
    const clock = new ManualClock(T0);
    const queue = open(path, clock);
    const done = queue.submit('t', 'p', { headers: { at: 'done' } });
    const pending = queue.submit('t', 'p', { headers: { at: 'pending' } });
    const plain = queue.submit('t', 'p');
    const lease = queue.poll('w1', 1_000)!;
    expect(lease.jobId).toBe(done);
    queue.complete(done, lease.token);
    closeJournal(queue);

    const again = open(path, clock);
    expect(again.view(done)).toMatchObject({ status: 'SUCCEEDED', headers: { at: 'done' } });
    expect(again.view(pending).headers).toEqual({ at: 'pending' });
    expect(again.view(plain).headers).toBeNull();
    expect(again.poll('w1', 1_000)).toMatchObject({ jobId: pending, headers: { at: 'pending' } });
  });

  it('opens a journal of schema version 4 (before headers): its jobs have none, new headers are kept', () => {
    const path = tempJournal();
    const clock = new ManualClock(T0);
    const queue = open(path, clock);
    const old = queue.submit('t', 'old');
    closeJournal(queue);
    // What leasehold wrote before this schema: no headers column, user_version 4.
    const db = new Database(path);
    db.exec('ALTER TABLE jobs DROP COLUMN headers');
    db.pragma('user_version = 4');
    db.close();

    const migrated = open(path, clock);
    expect(migrated.view(old).headers).toBeNull();
    const next = migrated.submit('t', 'new', { headers: { kept: 'yes' } });
    closeJournal(migrated);
    const check = new Database(path, { readonly: true });
    expect(check.pragma('user_version', { simple: true })).toBe(5);
    check.close();
    expect(open(path, clock).view(next).headers).toEqual({ kept: 'yes' });
  });

  it('refuses a journal whose headers are not the JSON of an object of strings, as a damaged row', () => {
    const path = tempJournal();
    const clock = new ManualClock(T0);
    const queue = open(path, clock);
    queue.submit('t', 'p', { headers: { a: 'b' } });
    closeJournal(queue);
    const db = new Database(path);
    db.prepare('UPDATE jobs SET headers = \'{"a": 1}\' WHERE num = 1').run();
    db.close();
    expect(() => open(path, clock)).toThrow(/damaged job row J1: headers that are not the JSON of an object of strings/);
  });
});
