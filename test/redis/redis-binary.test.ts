/**
 * Binary values on Redis, beyond the contract (test/contract/binary-payloads.test.ts runs that on
 * every backend): how they are stored (the raw bytes, marked in the job's hash), the data model
 * version they move a queue to (so that a build without bytes refuses it), that text jobs make the
 * commands they always made, that an AOF restart keeps them, and two processes exchanging 1 MiB
 * payloads and results through one queue, every byte checked on both sides.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { afterEach, expect, it } from 'vitest';
import { ManualClock, RedisJobQueue, RetryPolicy, systemClock, type RedisQueueOptions } from '../../dist/index.js';
import { payloadOf, resultOf } from '../fixtures/redis-binary-lib.mjs';
import { T0, bytesOf, pause } from '../support/helpers.js';
import { describeRedis, onePerFile, startRedis } from '../support/redis-harness.js';

const PEER = fileURLToPath(new URL('../fixtures/redis-binary-peer.mjs', import.meta.url));
const MIB = 1 << 20;
let names = 0;
const fresh = (what: string) => `binary-${what}-${process.pid}-${++names}`;


/** Whether `value` is a Uint8Array of exactly `bytes` (compared whole). */
function same(value: unknown, bytes: Uint8Array): boolean {
  return value instanceof Uint8Array && Buffer.from(value).equals(bytes);
}

const key = (name: string, suffix: string) => `leasehold:{${name}}:${suffix}`;

/** Calls of each command since the last CONFIG RESETSTAT (commands a script runs included), from INFO commandstats. */
async function commandCalls(admin: Redis): Promise<Record<string, number>> {
  const calls: Record<string, number> = {};
  for (const [, command, count] of (await admin.info('commandstats')).matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) calls[command!] = Number(count);
  return calls;
}

describeRedis('binary values on Redis', () => {
  const server = onePerFile(() => startRedis());
  const opened: Array<RedisJobQueue | Redis> = [];
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((item) => (item instanceof Redis ? item.quit() : item.close())));
  });
  const open = async (options: Partial<RedisQueueOptions> & { name: string }, url?: string) => {
    const queue = await RedisJobQueue.connect({ redis: url ?? (await server()).url, policy: new RetryPolicy(1, 0, 0), ...options });
    opened.push(queue);
    return queue;
  };
  const adminOf = async (url?: string) => {
    const admin = new Redis(url ?? (await server()).url);
    opened.push(admin);
    return admin;
  };

  it('stores a binary payload and result as their raw bytes, each marked in the job\'s hash; a text job\'s hash has no mark', async () => {
    const name = fresh('raw');
    const [queue, admin] = [await open({ name }), await adminOf()];
    const [bytes, text] = [await queue.submit('t', bytesOf(300), 5), await queue.submit('t', 'é text')];
    expect(Buffer.from(bytesOf(300)).equals((await admin.hgetBuffer(key(name, 'job:1'), 'payload'))!)).toBe(true);
    expect(await admin.hget(key(name, 'job:1'), 'binaryPayload')).toBe('1');
    const lease = (await queue.poll('w', 60_000))!;
    expect(lease.jobId).toBe(bytes);
    await queue.complete(bytes, lease.token, bytesOf(200, 9));
    // The result's bytes exactly: the NUL that marks it on the way in is not stored.
    expect(Buffer.from(bytesOf(200, 9)).equals((await admin.hgetBuffer(key(name, 'job:1'), 'result'))!)).toBe(true);
    expect(await admin.hget(key(name, 'job:1'), 'binaryResult')).toBe('1');
    const textLease = (await queue.poll('w', 60_000))!;
    await queue.complete(text, textLease.token, { ok: 1 });
    const textHash = await admin.hgetall(key(name, 'job:2'));
    expect(textHash).toMatchObject({ payload: 'é text', result: '{"ok":1}' });
    expect(Object.keys(textHash).filter((field) => field.startsWith('binary'))).toEqual([]);
    expect(await queue.finished(bytes)).toEqual(bytesOf(200, 9));
    expect(await queue.finished(text)).toEqual({ ok: 1 });
  });

  it('completes a batch with binary and JSON results (completeManyAndPoll), refusing only the one over maxPayloadBytes, and leases bytes', async () => {
    const queue = await open({ name: fresh('batch'), maxPayloadBytes: 100 });
    const ids = await queue.submitMany([1, 2, 3, 4, 5].map((seed) => ({ type: 't', payload: seed === 3 ? 'text' : bytesOf(100, seed) })));
    const leases = await queue.pollMany('w', 60_000, 3);
    expect(leases.map((lease) => lease.payload)).toEqual([bytesOf(100, 1), bytesOf(100, 2), 'text']);
    const outcome = await queue.completeManyAndPoll([
      { jobId: ids[0]!, token: leases[0]!.token, result: bytesOf(100, 6) },
      { jobId: ids[1]!, token: leases[1]!.token, result: bytesOf(101, 7) },
      { jobId: ids[2]!, token: leases[2]!.token, result: { json: true } },
    ], 'w', 60_000, 2);
    expect(outcome.refused.map(({ jobId, error }) => [jobId, error.name])).toEqual([[ids[1], 'InvalidArgumentError']]);
    expect(outcome.leases.map((lease) => lease.payload)).toEqual([bytesOf(100, 4), bytesOf(100, 5)]);
    expect(await Promise.all(ids.slice(0, 3).map(async (id) => (await queue.view(id)).result))).toEqual([bytesOf(100, 6), undefined, { json: true }]);
    expect((await queue.view(ids[1]!)).status).toBe('RUNNING');
  });

  it('moves the queue to data model 4 at its first binary value, 5 with groups; a queue of text alone stays at 2 (3 with groups)', async () => {
    const admin = await adminOf();
    const version = (name: string) => admin.hget(key(name, 'state'), 'version');

    const plain = fresh('model');
    const queue = await open({ name: plain });
    const id = await queue.submit('t', 'text');
    await queue.updatePayload(id, 'more text');
    const lease = (await queue.poll('w', 60_000))!;
    await queue.complete(id, lease.token, 'a JSON result');
    expect(await version(plain)).toBe('2');
    await queue.submitMany([{ type: 't', payload: 'text' }, { type: 't', payload: bytesOf(3) }]);
    expect(await version(plain)).toBe('4');
    await queue.submit('t', 'grouped', { group: 'g' });
    expect(await version(plain)).toBe('5');

    const grouped = fresh('model');
    const other = await open({ name: grouped });
    const first = await other.submit('t', 'text', { group: 'g' });
    expect(await version(grouped)).toBe('3');
    const leased = (await other.poll('w', 60_000))!;
    // A binary result alone marks the queue too: a build without bytes would read it as JSON text.
    await other.complete(first, leased.token, bytesOf(4));
    expect(await version(grouped)).toBe('5');

    const edited = fresh('model');
    const third = await open({ name: edited });
    await third.updatePayload(await third.submit('t', 'text'), bytesOf(4));
    expect(await version(edited)).toBe('4');
  });

  it('drops the mark when a text payload replaces bytes (updatePayload, a debounced submit)', async () => {
    const name = fresh('unmark');
    const [queue, admin] = [await open({ name }), await adminOf()];
    const id = await queue.submit('t', bytesOf(10));
    await queue.updatePayload(id, 'text');
    expect(await admin.hget(key(name, 'job:1'), 'binaryPayload')).toBeNull();
    expect((await queue.view(id)).payload).toBe('text');
    const debounced = { key: 'k', debounceMillis: 60_000 };
    const held = await queue.submit('d', 'first', debounced);
    expect(await queue.submit('d', bytesOf(20, 3), debounced)).toBe(held);
    expect((await queue.view(held)).payload).toEqual(bytesOf(20, 3));
    expect(await queue.submit('d', 'last', debounced)).toBe(held);
    expect((await queue.view(held)).payload).toBe('last');
    expect(await admin.hget(key(name, `job:${held.slice(1)}`), 'binaryPayload')).toBeNull();
  });

  it('makes the Redis commands text jobs always made: none more on a queue that never held bytes', async () => {
    const admin = await adminOf();
    const cycle = async (queue: RedisJobQueue) => {
      await queue.submit('t', 'a', { key: 'k', debounceMillis: 1 });
      await queue.submitMany([{ type: 't', payload: 'b' }, { type: 't', payload: 'c' }]);
      await queue.submit('t', 'again', { key: 'k', debounceMillis: 1 });
      await queue.updatePayload('J2', 'b2');
      for (let lease = await queue.poll('w', 60_000); lease !== undefined; lease = await queue.poll('w', 60_000)) {
        await queue.complete(lease.jobId, lease.token, { attempt: lease.attempt });
      }
      await queue.view('J1');
    };
    const textOnly = await open({ name: fresh('calls'), time: new ManualClock(T0) });
    await admin.call('CONFIG', 'RESETSTAT');
    await cycle(textOnly);
    const calls = await commandCalls(admin);
    // Text over text on a queue that never held bytes: no mark to drop.
    expect(calls['hdel']).toBeUndefined();
    // The same cycle on a queue that held bytes: one HDEL per text payload written over a job (the debounce, the update).
    const mixed = await open({ name: fresh('calls'), time: new ManualClock(T0) });
    await mixed.submit('warm', bytesOf(1));
    await admin.call('CONFIG', 'RESETSTAT');
    await cycle(mixed);
    expect((await commandCalls(admin))['hdel']).toBe(2);
  });

  it('keeps binary jobs, in their states and bytes, when Redis is killed (SIGKILL) and restarted from its AOF', async () => {
    const own = await startRedis();
    try {
      const clock = new ManualClock(T0);
      const name = fresh('aof');
      const queue = await open({ name, time: clock }, own.url);
      const ids = await queue.submitMany([
        { type: 'running', payload: bytesOf(MIB, 2), priority: 9 }, { type: 'succeeded', payload: bytesOf(1000, 3), priority: 8 },
        { type: 'dead', payload: bytesOf(500, 4), priority: 7 }, { type: 'pending', payload: bytesOf(MIB, 5) }, { type: 'text', payload: 'é😀' },
      ]);
      const running = (await queue.poll('w', 60_000))!;
      await queue.complete(ids[1]!, (await queue.poll('w', 60_000))!.token, bytesOf(MIB, 6));
      await queue.fail(ids[2]!, (await queue.poll('w', 60_000))!.token, 'poison');
      const before = await Promise.all(ids.map((id) => queue.view(id)));
      await own.kill();
      await own.restart();
      const after = await open({ name, time: clock }, own.url);
      const views = await Promise.all(ids.map((id) => after.view(id)));
      expect(views.map((view) => view.status)).toEqual(['RUNNING', 'SUCCEEDED', 'DEAD', 'PENDING', 'PENDING']);
      expect(same(views[0]!.payload, bytesOf(MIB, 2)) && same(views[3]!.payload, bytesOf(MIB, 5))).toBe(true);
      expect(same(views[1]!.result, bytesOf(MIB, 6))).toBe(true);
      // Compared whole, the megabytes as the booleans above.
      const small = (list: typeof views) => list.map((view) => ({ ...view, payload: view.payload.length, result: view.result instanceof Uint8Array ? view.result.length : view.result }));
      expect(small(views)).toEqual(small(before));
      expect([views[2]!.payload, views[4]!.payload]).toEqual([bytesOf(500, 4), 'é😀']);
      await after.complete(running.jobId, running.token, bytesOf(7, 7));
      const next = (await after.poll('w', 60_000))!;
      expect([next.jobId, same(next.payload, bytesOf(MIB, 5))]).toEqual([ids[3], true]);
      expect(await after.finished(running.jobId)).toEqual(bytesOf(7, 7));
    } finally {
      await Promise.all(opened.splice(0).map((item) => (item instanceof Redis ? item.quit() : item.close())));
      await own.stop();
    }
  });

  it('carries bytes on a queue that waits for a replica (each write and WAIT in one pipeline), and the replica has them', async () => {
    const master = await startRedis();
    const replica = await startRedis({ args: ['--replicaof', '127.0.0.1', String(master.port)] });
    try {
      const replicaAdmin = await adminOf(replica.url);
      for (let deadline = Date.now() + 20_000; !(await replicaAdmin.info('replication')).includes('master_link_status:up');) {
        if (Date.now() > deadline) throw new Error('the replica did not sync with its master');
        await pause(20);
      }
      const name = fresh('replicated');
      const queue = await open({ name, replicas: 1, replicaTimeoutMillis: 10_000 }, master.url);
      const id = await queue.submit('t', bytesOf(MIB, 11));
      const lease = (await queue.poll('w', 60_000))!;
      expect(same(lease.payload, bytesOf(MIB, 11))).toBe(true);
      const next = await queue.submit('t', bytesOf(70, 12));
      const following = await queue.completeAndPoll(id, lease.token, 'w', 60_000, bytesOf(300, 13));
      expect([following?.jobId, following?.payload]).toEqual([next, bytesOf(70, 12)]);
      expect((await queue.view(id)).result).toEqual(bytesOf(300, 13));
      // Acknowledged by the replica before the reply: its copy is there, byte for byte.
      expect(Buffer.from(bytesOf(300, 13)).equals((await replicaAdmin.hgetBuffer(key(name, 'job:1'), 'result'))!)).toBe(true);
    } finally {
      await Promise.all(opened.splice(0).map((item) => (item instanceof Redis ? item.quit() : item.close())));
      await Promise.all([replica.stop(), master.stop()]);
    }
  });

  it('carries 1 MiB payloads and results between a producer process and a consumer process, every byte checked on both sides', async () => {
    const name = fresh('processes');
    const queue = await open({ name, time: systemClock });
    const handle = JSON.stringify(queue.share());
    const COUNT = 8;
    const run = (role: string) => new Promise<{ code: number | null; out: string; err: string }>((resolve) => {
      const child = spawn(process.execPath, [PEER, role, handle, String(COUNT)], { stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      let err = '';
      child.stdout.on('data', (data: Buffer) => (out += data.toString()));
      child.stderr.on('data', (data: Buffer) => (err += data.toString()));
      child.once('exit', (code) => resolve({ code, out, err }));
    });
    const [producer, consumer] = await Promise.all([run('producer'), run('consumer')]);
    expect(producer, producer.err).toMatchObject({ code: 0 });
    expect(consumer, consumer.err).toMatchObject({ code: 0 });
    const produced = JSON.parse(producer.out) as { ids: string[]; checked: number };
    expect(produced.checked).toBe(COUNT);
    expect(JSON.parse(consumer.out)).toEqual({ ev: 'consumed', count: COUNT });
    // And as this third process reads them back.
    for (const [i, id] of produced.ids.entries()) {
      const view = await queue.view(id);
      expect([view.status, same(view.payload, payloadOf(i)), same(view.result, resultOf(i))]).toEqual(['SUCCEEDED', true, true]);
    }
  }, 120_000);
});
