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
} from '../../dist/index.js';
import { MIGRATIONS } from '../../dist/journal/migrations.js';
import { describeEachBackend, type ContractQueue } from '../support/backends.js';
import { SPANS_CHANNEL, spanRecord } from '../fixtures/tracing-sdk.mjs';
import { T0, bad, expectInvalid, mustPoll, setup, snapshot, withTimeout } from '../support/helpers.js';
import { closeJournal, openJournal, tempJournal } from '../support/journal-harness.js';
import { track, trackQueue } from '../support/pool-harness.js';
import { describeRedis, fileRedis } from '../support/redis-harness.js';

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
    const [first, second] = (await queue.submitMany([{ type: 't', headers: { n: '1' } }, { type: 't' }])) as [string, string];
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

  it('opens a journal of schema version 6 (before headers): its jobs have none, new headers are kept', () => {
    const path = tempJournal();
    const clock = new ManualClock(T0);
    const queue = open(path, clock);
    const old = queue.submit('t', 'old');
    closeJournal(queue);
    // What leasehold wrote before this schema: no headers column (nor the later times), user_version 6.
    const db = new Database(path);
    db.exec('ALTER TABLE jobs DROP COLUMN headers; ALTER TABLE jobs DROP COLUMN submitted_at; ALTER TABLE jobs DROP COLUMN started_at; ALTER TABLE jobs DROP COLUMN progress; ALTER TABLE jobs DROP COLUMN group_name; ALTER TABLE jobs DROP COLUMN flow_parent; ALTER TABLE jobs DROP COLUMN waiting_children;');
    db.pragma('user_version = 6');
    db.close();

    const migrated = open(path, clock);
    expect(migrated.view(old).headers).toBeNull();
    const next = migrated.submit('t', 'new', { headers: { kept: 'yes' } });
    closeJournal(migrated);
    const check = new Database(path, { readonly: true });
    expect(check.pragma('user_version', { simple: true })).toBe(MIGRATIONS.length);
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

// ── spans ────────────────────────────────────────────────────────────────

/** A traced queue of one backend, and its name in its spans. */
interface TracedQueue {
  queue: ContractQueue;
  destination: string;
}

interface TracedBackend {
  name: string;
  open(policy: RetryPolicy, options?: JobQueueOptions): Promise<TracedQueue>;
}

let queueNames = 0;

const TRACED: readonly TracedBackend[] = [
  {
    name: 'memory',
    async open(policy, options) {
      return { queue: trackQueue(new JobQueue(systemClock, policy, { ...options, tracing: { name: 'emails' } })), destination: 'emails' };
    },
  },
  {
    name: 'journal',
    async open(policy, options) {
      const queue = openJournal(tempJournal(), systemClock, policy, { ...options, tracing: { name: 'emails' } });
      return { queue: queue as unknown as ContractQueue, destination: 'emails' };
    },
  },
  {
    name: 'redis',
    async open(policy, options) {
      const { url } = await fileRedis();
      const name = `traced-${process.pid}-${++queueNames}`;
      return { queue: trackQueue(await RedisJobQueue.connect({ redis: url, name, policy, time: systemClock, ...options, tracing: true })), destination: name };
    },
  },
];

/** What every span of `operation` on `destination` carries. */
function messaging(operation: 'create' | 'process', destination: string): Record<string, unknown> {
  return {
    'messaging.system': 'leasehold',
    'messaging.operation.type': operation,
    'messaging.operation.name': operation,
    'messaging.destination.name': destination,
  };
}

/** The one span named `name` whose message id is `jobId` (a job's create span, or one attempt's process span with `attempt`). */
function spanOf(spans: readonly SpanRecord[], name: string, jobId: string, attempt?: number): SpanRecord {
  const found = spans.filter((span) => span.name === name && span.attributes['messaging.message.id'] === jobId &&
    (attempt === undefined || span.attributes['leasehold.attempt'] === attempt));
  expect(found, `${name} of ${jobId}`).toHaveLength(1);
  return found[0]!;
}

/** Runs one attempt of `lease` within traceProcess, as a poll loop of one's own does: `work` throwing fails it. */
async function processLease(queue: ContractQueue, lease: Lease, destination: string, work: () => void): Promise<void> {
  try {
    await traceProcess(lease, destination, work);
    await queue.complete(lease.jobId, lease.token);
  } catch (error) {
    await queue.fail(lease.jobId, lease.token, (error as Error).message);
  }
}

for (const backend of TRACED) {
  const run = backend.name === 'redis' ? describeRedis : describe;
  run(`spans [${backend.name}]`, () => {
    it('makes a PRODUCER span "create {queue}" per submitted job, whose context the job carries beside its own headers', async () => {
      const { queue, destination } = await backend.open(new RetryPolicy(3, 0, 0));
      const one = await queue.submit('t', 'p', { headers: { tenant: 'acme' } });
      const [two, three] = await queue.submitMany([{ type: 't' }, { type: 't', headers: { tenant: 'b' } }]);
      const spans = finished();
      expect(spans).toHaveLength(3);
      for (const [id, own] of [[one, { tenant: 'acme' }], [two, {}], [three, { tenant: 'b' }]] as const) {
        const span = spanOf(spans, `create ${destination}`, id!);
        expect(span.kind).toBe(SpanKind.PRODUCER);
        expect(span.attributes).toEqual({ ...messaging('create', destination), 'messaging.message.id': id });
        expect(span.status.code).toBe(SpanStatusCode.UNSET);
        const { headers } = await queue.view(id!);
        expect(headers).toEqual({ ...own, traceparent: expect.stringMatching(TRACEPARENT) });
        const [, traceId, parentId] = TRACEPARENT.exec(headers!['traceparent']!)!;
        expect([traceId, parentId]).toEqual([span.traceId, span.spanId]);
      }
    });

    it('makes the create span a child of the span active at submit', async () => {
      const { queue, destination } = await backend.open(new RetryPolicy(3, 0, 0));
      const outer = trace.getTracer('test').startSpan('request');
      const id = await context.with(trace.setSpan(context.active(), outer), () => queue.submit('t'));
      outer.end();
      const create = spanOf(finished(), `create ${destination}`, id);
      expect([create.traceId, create.parentSpanId]).toEqual([outer.spanContext().traceId, outer.spanContext().spanId]);
    });

    it('runs traceProcess within a CONSUMER span "process {queue}", a child of the job\'s create span, and of which spans made inside are children', async () => {
      const { queue, destination } = await backend.open(new RetryPolicy(3, 0, 0));
      const id = await queue.submit('t', 'p');
      const lease = await mustPoll(queue, id);
      await processLease(queue, lease, destination, () => trace.getTracer('test').startActiveSpan('inner', (span) => span.end()));
      const spans = finished();
      const create = spanOf(spans, `create ${destination}`, id);
      const process = spanOf(spans, `process ${destination}`, id);
      expect(process.kind).toBe(SpanKind.CONSUMER);
      expect([process.traceId, process.parentSpanId]).toEqual([create.traceId, create.spanId]);
      expect(process.attributes).toEqual({
        ...messaging('process', destination), 'messaging.message.id': id, 'leasehold.attempt': 1, 'leasehold.token': lease.token, 'leasehold.dead_lettered': false,
      });
      expect(process.status.code).toBe(SpanStatusCode.UNSET);
      const inner = spans.find((span) => span.name === 'inner')!;
      expect([inner.traceId, inner.parentSpanId]).toEqual([create.traceId, process.spanId]);
      expect((await queue.view(id)).status).toBe('SUCCEEDED');
    });

    it('marks a failed attempt\'s span ERROR with error.type, dead-lettered only on the job\'s last attempt', async () => {
      const { queue, destination } = await backend.open(new RetryPolicy(2, 0, 0));
      const id = await queue.submit('t');
      for (let attempt = 1; attempt <= 2; attempt++) {
        await processLease(queue, await mustPoll(queue, id), destination, () => {
          throw new RangeError(`attempt ${attempt}`);
        });
      }
      expect((await queue.view(id)).status).toBe('DEAD');
      const spans = finished();
      const create = spanOf(spans, `create ${destination}`, id);
      for (const attempt of [1, 2]) {
        const process = spanOf(spans, `process ${destination}`, id, attempt);
        expect(process.parentSpanId).toBe(create.spanId);
        expect(process.status).toEqual({ code: SpanStatusCode.ERROR, message: `attempt ${attempt}` });
        expect(process.attributes).toMatchObject({ 'error.type': 'RangeError', 'leasehold.dead_lettered': attempt === 2 });
      }
    });

    it('ends the create spans of a refused submit with status ERROR and error.type, and stores nothing', async () => {
      const { queue, destination } = await backend.open(new RetryPolicy(3, 0, 0), { capacity: 1 });
      await queue.submit('t');
      exporter.reset();
      await expect(Promise.resolve().then(() => queue.submitMany([{ type: 't' }, { type: 't' }]))).rejects.toBeInstanceOf(QueueFullError);
      const spans = finished();
      expect(spans.map((span) => span.name)).toEqual([`create ${destination}`, `create ${destination}`]);
      for (const span of spans) {
        expect(span.status.code).toBe(SpanStatusCode.ERROR);
        expect(span.attributes['error.type']).toBe('QueueFullError');
        expect(span.attributes['messaging.message.id']).toBeUndefined();
      }
      expect((await queue.stats()).pending).toBe(1);
    });
  });
}

describe('spans of a queue without tracing', () => {
  it('makes no span at submit and adds no headers; traceProcess still traces a lease of it, as a root', async () => {
    const queue = trackQueue(new JobQueue(systemClock, new RetryPolicy(3, 0, 0)));
    queue.submit('t', 'p', { headers: { own: 'only' } });
    expect(finished()).toEqual([]);
    const lease = queue.poll('w1', 1_000)!;
    expect(lease.headers).toEqual({ own: 'only' });
    await processLease(queue, lease, 'plain', () => undefined);
    const [process] = finished();
    expect(process).toMatchObject({ name: 'process plain', kind: SpanKind.CONSUMER, parentSpanId: null });
  });

  it('refuses a bad `tracing` option with InvalidArgumentError', async () => {
    for (const tracing of [{ name: '' }, { name: 3 }, 'yes', 1]) {
      expect(() => new JobQueue(systemClock, new RetryPolicy(3, 0, 0), { tracing: bad(tracing) })).toThrow(InvalidArgumentError);
    }
    await expectInvalid(() => traceProcess(bad(null), 'q', () => undefined));
    await expectInvalid(() => traceProcess(bad({ jobId: 'J1' }), ' ', () => undefined));
  });
});

// ── across threads and processes ─────────────────────────────────────────

const TRACING_HANDLERS = new URL('../fixtures/tracing-handlers.mjs', import.meta.url);

/** Collects the span records pool threads post on SPANS_CHANNEL; `until` resolves once `count` have come (or rejects after a bounded wait). */
function threadSpans(): { spans: SpanRecord[]; until(count: number): Promise<SpanRecord[]>; close(): void } {
  const channel = new BroadcastChannel(SPANS_CHANNEL);
  const spans: SpanRecord[] = [];
  const waiting: Array<() => void> = [];
  channel.onmessage = (event) => {
    spans.push((event as { data: SpanRecord }).data);
    for (const wake of waiting.splice(0)) wake();
  };
  const until = async (count: number): Promise<SpanRecord[]> => {
    while (spans.length < count) await new Promise<void>((resolve) => waiting.push(resolve));
    return spans;
  };
  return { spans, until: (count) => withTimeout(until(count), 30_000, `${count} spans from the pool threads`), close: () => channel.close() };
}

/**
 * Checks the spans of a pool's run: every ok job's process span (made in a
 * pool thread) is a child of its create span (made here), and the handler's
 * own span a child of it; the boom job's spans failed, the last dead-lettered.
 */
function expectPoolSpans(local: readonly SpanRecord[], remote: readonly SpanRecord[], destination: string, ok: readonly string[], boom: string, boomAttempts: number): void {
  for (const id of [...ok, boom]) {
    const create = spanOf(local, `create ${destination}`, id);
    const attempts = remote.filter((span) => span.name === `process ${destination}` && span.attributes['messaging.message.id'] === id);
    expect(attempts).toHaveLength(id === boom ? boomAttempts : 1);
    for (const process of attempts) {
      expect(process.kind).toBe(SpanKind.CONSUMER);
      expect([process.traceId, process.parentSpanId]).toEqual([create.traceId, create.spanId]);
      expect(process.attributes).toMatchObject({ ...messaging('process', destination), 'leasehold.token': expect.any(Number) });
      if (id === boom) {
        const attempt = process.attributes['leasehold.attempt'] as number;
        expect(process.status).toEqual({ code: SpanStatusCode.ERROR, message: 'boom' });
        expect(process.attributes).toMatchObject({ 'error.type': 'TypeError', 'leasehold.dead_lettered': attempt === boomAttempts });
      } else {
        expect(process.attributes).toMatchObject({ 'leasehold.attempt': 1, 'leasehold.dead_lettered': false });
        expect(process.status.code).toBe(SpanStatusCode.UNSET);
        const inner = remote.filter((span) => span.name === 'inner work' && span.parentSpanId === process.spanId);
        expect(inner).toHaveLength(1);
        expect(inner[0]!.traceId).toBe(create.traceId);
      }
    }
  }
}

const POOL_BACKENDS: ReadonlyArray<TracedBackend> = TRACED.filter((backend) => backend.name !== 'journal');

for (const backend of POOL_BACKENDS) {
  const run = backend.name === 'redis' ? describeRedis : describe;
  run(`a WorkerPool's spans [${backend.name}]`, () => {
    it('runs each handler in a pool thread within a process span that is a child of the job\'s create span from this thread', { timeout: 60_000 }, async () => {
      const received = threadSpans();
      try {
        const { queue, destination } = await backend.open(new RetryPolicy(2, 0, 0));
        const ok: string[] = [];
        for (let n = 0; n < 8; n++) ok.push(await queue.submit('ok', String(n)));
        const boom = await queue.submit('boom');
        const pool = track(new WorkerPool(queue as never, { handlers: TRACING_HANDLERS, threads: 2, concurrency: 2 }));
        await pool.start();
        await withTimeout(pool.drain(), 45_000, 'the pool draining');
        // Each ok job: a process span and the handler's own; the boom job: two process spans.
        const remote = await received.until(ok.length * 2 + 2);
        expectPoolSpans(finished(), remote, destination, ok, boom, 2);
        expect((await queue.view(boom)).status).toBe('DEAD');
        await pool.close();
      } finally {
        received.close();
      }
    });
  });
}

/** Runs tracing-process.mjs on `handle` for `count` leases; the span records it printed. */
async function childSpans(handle: unknown, count: number): Promise<SpanRecord[]> {
  const child = spawn(process.execPath, [new URL('../fixtures/tracing-process.mjs', import.meta.url).pathname, JSON.stringify(handle), String(count)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const code = await withTimeout(new Promise<number | null>((resolve) => child.on('exit', resolve)), 30_000, 'the child process');
  expect(code).toBe(0);
  const lines = out.trim().split('\n').map((line) => JSON.parse(line) as { span?: SpanRecord; done?: true });
  expect(lines.at(-1)).toEqual({ done: true });
  return lines.flatMap((line) => (line.span === undefined ? [] : [line.span]));
}

describeRedis('spans across processes [redis]', () => {
  it('makes the process spans of a child process\'s traceProcess children of this process\'s create spans', { timeout: 60_000 }, async () => {
    const { url } = await fileRedis();
    const name = `traced-process-${process.pid}`;
    const queue = trackQueue(await RedisJobQueue.connect({ redis: url, name, policy: new RetryPolicy(1, 0, 0), time: systemClock, tracing: true }));
    const ids = [await queue.submit('ok'), await queue.submit('boom'), await queue.submit('ok')];
    const remote = await childSpans(queue.share(), ids.length);
    const local = finished();
    expect(remote).toHaveLength(ids.length);
    for (const id of ids) {
      const create = spanOf(local, `create ${name}`, id);
      const process = spanOf(remote, `process ${name}`, id);
      expect([process.kind, process.traceId, process.parentSpanId]).toEqual([SpanKind.CONSUMER, create.traceId, create.spanId]);
      expect(process.attributes).toMatchObject({ ...messaging('process', name), 'leasehold.attempt': 1 });
    }
    const boom = spanOf(remote, `process ${name}`, ids[1]!);
    expect(boom.status).toEqual({ code: SpanStatusCode.ERROR, message: 'child boom' });
    expect(boom.attributes).toMatchObject({ 'error.type': 'RangeError', 'leasehold.dead_lettered': true });
    expect((await queue.stats())).toMatchObject({ succeeded: 2, dead: 1 });
  });
});
