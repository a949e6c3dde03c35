import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Registry } from 'prom-client';
import { JobNotFoundError, JobQueue, ManualClock, PartitionedRedisQueue, QueueFullError, RedisJobQueue, RetryPolicy, WorkerPool, collectMetrics } from '../../dist/index.js';
import { describeEachBackend, memory, openQueue, type ContractQueue } from '../support/backends.js';
import {
  T0,
  bad,
  expectFull,
  expectInvalid,
  expectInvalidSync,
  expectNoChange,
  expectNotFound,
  killJob,
  mustPoll,
  setup,
  snapshot,
  unreadable,
  utf8Bytes,
} from '../support/helpers.js';
import { tempDir } from '../support/journal-harness.js';

/** Polls `id` (which must be the job handed out) and completes it. */
async function finish(queue: ContractQueue, id: string): Promise<void> {
  await queue.complete(id, (await mustPoll(queue, id)).token);
}

describeEachBackend('capacity: a full queue', (backend) => {
  it('refuses a new job with QueueFullError once capacity PENDING jobs are held, changing nothing', async () => {
    const { queue } = await setup(backend, { options: { capacity: 3 } });
    await queue.submit('t', 'a');
    await queue.submit('t', 'b', 0, T0 + 1000);
    await queue.submit('t', 'c');
    const ids = ['J1', 'J2', 'J3', 'J4'];
    await expectNoChange(queue, ids, () => queue.submit('t', 'd'), QueueFullError, 'ERR_QUEUE_FULL');
    await expectNoChange(queue, ids, () => queue.submit('t', 'd', 100), QueueFullError, 'ERR_QUEUE_FULL');
    expect((await queue.stats()).pending).toBe(3);
  });

  it('counts RUNNING and DEAD jobs as held, and never evicts them', async () => {
    const s = await setup(backend, { maxAttempts: 1, options: { capacity: 3 } });
    const { queue } = s;
    await queue.submit('t', 'dead 1'); // J1
    await killJob(s, 'J1');
    await queue.submit('t', 'running'); // J2
    const running = await mustPoll(queue, 'J2', 10_000_000);
    await queue.submit('t', 'dead 2'); // J3
    await killJob(s, 'J3');
    const ids = ['J1', 'J2', 'J3', 'J4'];
    await expectNoChange(queue, ids, () => queue.submit('t', 'no room'), QueueFullError, 'ERR_QUEUE_FULL');
    expect((await queue.view('J1')).status).toBe('DEAD');
    expect((await queue.view('J2')).status).toBe('RUNNING');
    expect((await queue.view('J3')).status).toBe('DEAD');
    expect((await queue.deadLetters()).map((v) => v.id)).toEqual(['J1', 'J3']);
    await queue.complete('J2', running.token); // the lease survived the refused submit
  });

  it('does not use up an id on a refused submit', async () => {
    const { queue } = await setup(backend, { options: { capacity: 2 } });
    await queue.submit('t', 'a'); // J1
    await queue.submit('t', 'b'); // J2
    await expectFull(() => queue.submit('t', 'c'));
    await expectFull(() => queue.submit('t', 'c'));
    await queue.cancel('J1'); // a finished job: its room may now be taken
    expect(await queue.submit('t', 'c')).toBe('J3');
  });

  it('accepts capacity 1', async () => {
    const { queue } = await setup(backend, { options: { capacity: 1 } });
    expect(await queue.submit('t', 'a')).toBe('J1');
    await expectFull(() => queue.submit('t', 'b'));
    await finish(queue, 'J1');
    expect(await queue.submit('t', 'b')).toBe('J2');
    await expectNotFound(() => queue.view('J1'));
  });

  it('gets room back when a DEAD job is revived and then finishes', async () => {
    const s = await setup(backend, { maxAttempts: 1, options: { capacity: 1 } });
    await s.queue.submit('t', 'a'); // J1
    await killJob(s, 'J1');
    await expectFull(() => s.queue.submit('t', 'b'));
    await s.queue.retryDead('J1');
    await expectFull(() => s.queue.submit('t', 'b'));
    await finish(s.queue, 'J1');
    expect(await s.queue.submit('t', 'b')).toBe('J2');
  });
});

describeEachBackend('capacity: eviction of finished jobs', (backend) => {
  it('keeps finished jobs while there is room', async () => {
    const { queue } = await setup(backend, { options: { capacity: 3 } });
    await queue.submit('t', 'a'); // J1
    await finish(queue, 'J1');
    await queue.submit('t', 'b'); // J2
    await queue.cancel('J2');
    await queue.submit('t', 'c'); // J3: the queue is now exactly full
    expect(await queue.view('J1')).toMatchObject({ status: 'SUCCEEDED', payload: 'a' });
    expect(await queue.view('J2')).toMatchObject({ status: 'CANCELLED', payload: 'b' });
    expect(await queue.stats()).toMatchObject({ succeeded: 1, cancelled: 1, pending: 1 });
  });

  it('evicts a finished job only when room is needed, and says so', async () => {
    const { queue } = await setup(backend, { options: { capacity: 2 } });
    await queue.submit('t', 'a'); // J1
    await finish(queue, 'J1');
    await queue.submit('t', 'b'); // J2: fits without eviction
    expect((await queue.view('J1')).status).toBe('SUCCEEDED');
    await queue.submit('t', 'c'); // J3: needs J1's room
    const error = await expectNotFound(() => queue.view('J1'));
    expect(error).toBeInstanceOf(JobNotFoundError);
    expect(error.message).toMatch(/evicted/i);
    expect((await queue.view('J2')).status).toBe('PENDING');
    expect((await queue.view('J3')).payload).toBe('c');
  });

  it('evicts SUCCEEDED and CANCELLED jobs oldest-finished first (not oldest-submitted), one per new job', async () => {
    const { queue, clock } = await setup(backend, { options: { capacity: 4 } });
    await queue.submit('t', 'a'); // J1
    await queue.submit('t', 'b'); // J2
    await queue.submit('t', 'c'); // J3
    await queue.submit('t', 'live'); // J4
    const l1 = await mustPoll(queue, 'J1');
    const l2 = await mustPoll(queue, 'J2');
    clock.advance(10);
    await queue.cancel('J3'); // finished first
    clock.advance(10);
    await queue.complete('J2', l2.token); // finished second
    clock.advance(10);
    await queue.complete('J1', l1.token); // finished third
    const present = async () => {
      const views = (await snapshot(queue, ['J1', 'J2', 'J3'])).views;
      return ['J1', 'J2', 'J3'].filter((id) => 'status' in views[id]!);
    };

    await queue.submit('t', 'd'); // J5
    expect(await present()).toEqual(['J1', 'J2']);
    expect((await expectNotFound(() => queue.view('J3'))).message).toMatch(/evicted/i);
    await queue.submit('t', 'e'); // J6
    expect(await present()).toEqual(['J1']);
    expect((await expectNotFound(() => queue.view('J2'))).message).toMatch(/evicted/i);
    await queue.submit('t', 'f'); // J7
    expect(await present()).toEqual([]);
    expect((await expectNotFound(() => queue.view('J1'))).message).toMatch(/evicted/i);
    await expectFull(() => queue.submit('t', 'g'));
    const statuses: string[] = [];
    for (const id of ['J4', 'J5', 'J6', 'J7']) statuses.push((await queue.view(id)).status);
    expect(statuses).toEqual(['PENDING', 'PENDING', 'PENDING', 'PENDING']);
  });

  it('still evicts oldest-finished first after the clock was set back', async () => {
    const { queue, clock } = await setup(backend, { options: { capacity: 3 } });
    await queue.submit('t', 'a'); // J1
    await queue.submit('t', 'b'); // J2
    await queue.submit('t', 'live'); // J3
    const l1 = await mustPoll(queue, 'J1');
    const l2 = await mustPoll(queue, 'J2');
    clock.advance(10);
    await queue.complete('J2', l2.token); // finished first
    clock.advance(10);
    await queue.complete('J1', l1.token); // finished second
    clock.set(T0 - 1_000_000); // the clock goes back (an NTP step)
    await queue.submit('t', 'c', 0, T0 - 1_000_000); // J4 evicts J2
    expect((await expectNotFound(() => queue.view('J2'))).message).toMatch(/evicted/i);
    expect((await queue.view('J1')).status).toBe('SUCCEEDED');
    await queue.submit('t', 'd', 0, T0 - 1_000_000); // J5 evicts J1
    await expectNotFound(() => queue.view('J1'));
    const statuses: string[] = [];
    for (const id of ['J3', 'J4', 'J5']) statuses.push((await queue.view(id)).status);
    expect(statuses).toEqual(['PENDING', 'PENDING', 'PENDING']);
  });

  it('never evicts PENDING, RUNNING or DEAD jobs, whatever their age', async () => {
    const s = await setup(backend, { maxAttempts: 1, options: { capacity: 4 } });
    const { queue } = s;
    await queue.submit('t', 'dead', 5); // J1, oldest
    await killJob(s, 'J1');
    await queue.submit('t', 'running', 5); // J2
    const running = await mustPoll(queue, 'J2', 10_000_000);
    await queue.submit('t', 'pending', 0, s.clock.now() + 10_000_000); // J3
    await queue.submit('t', 'finished'); // J4, newest
    await finish(queue, 'J4');
    await queue.submit('t', 'new'); // J5: evicts J4, the only finished job
    await expectNotFound(() => queue.view('J4'));
    const statuses: string[] = [];
    for (const id of ['J1', 'J2', 'J3', 'J5']) statuses.push((await queue.view(id)).status);
    expect(statuses).toEqual(['DEAD', 'RUNNING', 'PENDING', 'PENDING']);
    await expectFull(() => queue.submit('t', 'none'));
    await queue.complete('J2', running.token);
  });

  it('refuses every operation on an evicted job with JobNotFoundError', async () => {
    const { queue } = await setup(backend, { options: { capacity: 1 } });
    await queue.submit('t', 'a'); // J1
    const lease = await mustPoll(queue, 'J1');
    await queue.complete('J1', lease.token);
    await queue.submit('t', 'b'); // J2 evicts J1
    await expectNotFound(() => queue.view('J1'));
    await expectNotFound(() => queue.complete('J1', lease.token));
    await expectNotFound(() => queue.fail('J1', lease.token, 'x'));
    await expectNotFound(() => queue.extend('J1', lease.token, 1000));
    await expectNotFound(() => queue.retryDead('J1'));
    await expectNotFound(() => queue.cancel('J1'));
  });

  it('does not reuse the id of an evicted job', async () => {
    const { queue } = await setup(backend, { options: { capacity: 1 } });
    await queue.submit('t', 'a'); // J1
    await queue.cancel('J1');
    expect(await queue.submit('t', 'b')).toBe('J2');
    expect((await queue.view('J2')).payload).toBe('b');
    await expectNotFound(() => queue.view('J1'));
    expect(await queue.deadLetters()).toEqual([]);
  });

  it('keeps working through many generations of evictions', async () => {
    const { queue } = await setup(backend, { options: { capacity: 8 } });
    for (let i = 1; i <= 500; i++) {
      const id = await queue.submit('t', `payload ${i} ${'é'.repeat(i % 13)}`);
      expect(id).toBe(`J${i}`);
      const lease = await mustPoll(queue, id);
      expect(lease.payload).toBe(`payload ${i} ${'é'.repeat(i % 13)}`);
      await queue.complete(id, lease.token);
    }
    expect((await queue.view('J500')).status).toBe('SUCCEEDED');
    expect((await queue.view('J493')).status).toBe('SUCCEEDED');
    expect((await expectNotFound(() => queue.view('J492'))).message).toMatch(/evicted/i);
    expect((await expectNotFound(() => queue.view('J1'))).message).toMatch(/evicted/i);
  });

  it('finds every job by its id when evictions hand the slots out in another order than the jobs came', async () => {
    const { queue } = await setup(backend, { options: { capacity: 4 } });
    // Higher priority first: J4 finishes first, J1 last, so J5 is stored where J4 was, J8 where J1 was.
    for (let generation = 0; generation < 3; generation++) {
      const first = generation * 4 + 1;
      for (let i = first; i < first + 4; i++) expect(await queue.submit('t', `payload ${i}`, i - first)).toBe(`J${i}`);
      for (let i = first + 3; i >= first; i--) {
        expect((await queue.view(`J${i}`)).payload).toBe(`payload ${i}`);
        await finish(queue, `J${i}`);
      }
      for (let i = first; i < first + 4; i++) expect((await queue.view(`J${i}`)).status).toBe('SUCCEEDED');
      for (let i = first - 4; i > 0 && i < first; i++) expect((await expectNotFound(() => queue.view(`J${i}`))).message).toMatch(/evicted/i);
    }
  });
});

/** The payload arena (`arenaBytes`) is the shared-memory backend's own. */
describe('capacity: shared payload memory (memory backend only)', () => {
  const backend = memory;

  it('refuses with QueueFullError, changing nothing, when payload memory runs out', async () => {
    const { queue } = await setup(backend, { options: { arenaBytes: 65_536, maxPayloadBytes: 16_384 } });
    const payload = 'p'.repeat(10_000);
    const ids: string[] = [];
    let refused: unknown;
    for (let i = 0; i < 100 && refused === undefined; i++) {
      try {
        ids.push(await queue.submit('t', payload));
      } catch (error) {
        refused = error;
      }
    }
    expect(refused).toBeInstanceOf(QueueFullError);
    expect(ids.length).toBeGreaterThan(0);
    expect(ids.length).toBeLessThan(7); // 64 KiB cannot hold 7 payloads of 10 000 bytes
    await expectNoChange(queue, [...ids, `J${ids.length + 1}`], () => queue.submit('t', payload), QueueFullError, 'ERR_QUEUE_FULL');
    for (const id of ids) expect((await queue.view(id)).payload).toBe(payload);
  });

  it('reclaims the memory of each lastError a job replaces, and of its last one when it is evicted', async () => {
    // The smallest arena for 1 KiB payloads (about 60 chunks); each error takes 9 chunks.
    const { queue } = await setup(backend, { maxAttempts: 3, baseBackoffMillis: 0, maxBackoffMillis: 0, options: { capacity: 4, maxPayloadBytes: 1024, arenaBytes: 2 * (1024 + 1024 + 16) } });
    for (let round = 0; round < 60; round++) {
      const id = await queue.submit('t', 'p');
      for (let attempt = 1; attempt <= 3; attempt++) {
        const error = `${round}/${attempt} `.padEnd(600, 'e');
        await queue.fail(id, (await mustPoll(queue, id)).token, error);
        expect((await queue.view(id)).lastError).toBe(error);
      }
      expect((await queue.view(id)).status).toBe('DEAD');
      await queue.retryDead(id);
      await finish(queue, id);
    }
    expect(await queue.stats()).toMatchObject({ pending: 0, dead: 0 });
  });

  it('reclaims the payload memory of evicted finished jobs', async () => {
    const { queue } = await setup(backend, { options: { arenaBytes: 65_536, maxPayloadBytes: 16_384 } });
    for (let i = 1; i <= 50; i++) {
      const payload = String(i).padEnd(10_000, '.');
      const id = await queue.submit('t', payload);
      const lease = await mustPoll(queue, id);
      expect(lease.payload).toBe(payload);
      await queue.complete(id, lease.token);
    }
    expect((await queue.stats()).pending).toBe(0);
  });
  it('stores a payload of maxPayloadBytes in a queue that holds only finished jobs, however they used the memory', async () => {
    const { queue } = await setup(backend, { options: { arenaBytes: 65_536, maxPayloadBytes: 16_384 } });
    for (let i = 0; i < 200; i++) await finish(queue, await queue.submit('t', 'x'.repeat(1000)));
    expect(await queue.stats()).toMatchObject({ pending: 0, running: 0, dead: 0 });
    const big = 'y'.repeat(16_384);
    const id = await queue.submit('t', big); // every finished job may be evicted: there is room
    expect((await queue.view(id)).payload === big).toBe(true);
  });

  it('stores a 1 MiB payload after 65 536 small jobs finished (default options)', async () => {
    const { queue } = await setup(backend, { maxAttempts: 1 });
    const small = 'x'.repeat(1000);
    for (let i = 0; i < 65_536; i++) {
      const id = await queue.submit('t', small);
      const lease = (await queue.poll('w', 1000))!;
      await queue.complete(id, lease.token);
    }
    expect(await queue.stats()).toMatchObject({ pending: 0, running: 0, dead: 0 });
    const big = 'y'.repeat(1_048_576);
    const id = await queue.submit('t', big);
    expect((await queue.view(id)).payload === big).toBe(true);
  });

  it('evicts nothing when it refuses a submit anyway (a failed call changes nothing)', async () => {
    const { queue } = await setup(backend, { options: { arenaBytes: 65_536, maxPayloadBytes: 16_384 } });
    await finish(queue, await queue.submit('t', 'small')); // J1: finished, evictable
    const payload = 'p'.repeat(10_000);
    const ids = ['J1'];
    for (let i = 0; i < 100; i++) {
      const watched = [...ids, `J${ids.length + 1}`];
      const before = await snapshot(queue, watched);
      let refused: unknown;
      try {
        ids.push(await queue.submit('t', payload));
        continue;
      } catch (error) {
        refused = error;
      }
      expect(refused).toBeInstanceOf(QueueFullError);
      expect(await snapshot(queue, watched)).toEqual(before);
      return;
    }
    expect.unreachable('64 KiB of payload memory never filled up');
  });
});

describeEachBackend('maxPayloadBytes', (backend) => {
  it('accepts a payload of exactly the limit and refuses one byte more', async () => {
    const { queue } = await setup(backend, { options: { maxPayloadBytes: 10 } });
    expect((await queue.view(await queue.submit('t', 'a'.repeat(10)))).payload).toBe('a'.repeat(10));
    const error = await expectInvalid(() => queue.submit('t', 'a'.repeat(11)));
    expect(error.code).toBe('ERR_INVALID_ARGUMENT');
    expect(await queue.queueDepth()).toBe(1);
  });

  it('counts UTF-8 bytes: a 3-byte character counts 3', async () => {
    const { queue } = await setup(backend, { options: { maxPayloadBytes: 10 } });
    expect(utf8Bytes('€€€a')).toBe(10);
    expect((await queue.view(await queue.submit('t', '€€€a'))).payload).toBe('€€€a'); // 4 UTF-16 units, 10 bytes
    await expectInvalid(() => queue.submit('t', '€€€€')); // 4 units, 12 bytes
    await expectInvalid(() => queue.submit('t', '€€€ab')); // 11 bytes
  });

  it('counts a 4-byte character (a surrogate pair) as 4, not 2 × 3', async () => {
    const { queue } = await setup(backend, { options: { maxPayloadBytes: 10 } });
    expect(utf8Bytes('😀😀ab')).toBe(10);
    expect((await queue.view(await queue.submit('t', '😀😀ab'))).payload).toBe('😀😀ab');
    await expectInvalid(() => queue.submit('t', '😀😀abc'));
  });

  it('counts a 2-byte character as 2 and NUL as 1', async () => {
    const { queue } = await setup(backend, { options: { maxPayloadBytes: 10 } });
    expect((await queue.view(await queue.submit('t', 'éééé\u0000\u0000'))).payload).toBe('éééé\u0000\u0000'); // 10 bytes
    await expectInvalid(() => queue.submit('t', 'ééééé\u0000')); // 11 bytes
  });

  it('accepts null and empty payloads under the smallest limit', async () => {
    const { queue } = await setup(backend, { options: { maxPayloadBytes: 1 } });
    expect((await queue.view(await queue.submit('t', null))).payload).toBe('');
    expect((await queue.view(await queue.submit('t', ''))).payload).toBe('');
    expect((await queue.view(await queue.submit('t', 'x'))).payload).toBe('x');
    await expectInvalid(() => queue.submit('t', 'é'));
  });

  it('changes nothing when a payload is too large', async () => {
    const { queue } = await setup(backend, { options: { maxPayloadBytes: 10 } });
    await queue.submit('t', 'ok');
    await expectNoChange(queue, ['J1', 'J2'], () => queue.submit('t', 'x'.repeat(11)), Error, 'ERR_INVALID_ARGUMENT');
    expect(await queue.submit('t', 'ok')).toBe('J2');
  });

  it('defaults to 1 MiB: exactly 1 048 576 bytes fit, one more does not', async () => {
    const { queue } = await setup(backend);
    const exact = 'x'.repeat(1_048_576);
    const id = await queue.submit('t', exact);
    expect((await queue.view(id)).payload.length).toBe(1_048_576);
    expect((await mustPoll(queue, id)).payload === exact).toBe(true);
    await expectInvalid(() => queue.submit('t', exact + 'x'));
    await expectInvalid(() => queue.submit('t', 'x'.repeat(1_048_574) + '€'));
  });
});

describeEachBackend('options validation', (backend) => {
  const clock = new ManualClock(T0);
  const policy = new RetryPolicy(3, 100, 1000);

  it.each([0, -1, 1.5, NaN, Infinity, -Infinity, '10', 2 ** 53, null])('rejects capacity %s', async (capacity) => {
    await expectInvalid(() => openQueue(backend, clock, policy, { capacity: bad(capacity) }));
  });

  it.each([0, -1, 1.5, NaN, Infinity, '10', null])('rejects maxPayloadBytes %s', async (maxPayloadBytes) => {
    await expectInvalid(() => openQueue(backend, clock, policy, { maxPayloadBytes: bad(maxPayloadBytes) }));
  });

  it.each([
    ['maxErrorBytes', 0],
    ['maxErrorBytes', -1],
    ['maxErrorBytes', 2.5],
    ['maxErrorBytes', null],
    ['maxResultBytes', null],
  ])('rejects %s = %s', async (name, value) => {
    await expectInvalid(() => openQueue(backend, clock, policy, { [name]: value }));
  });

  it.each([
    ['a misspelt option', { capacty: 8 }, /no keys but .*capacity.*, got `capacty`/],
    ['an array as retain', { retain: [] }, /`retain` to be an object, got an array/],
    ['a misspelt retain limit', { retain: { maxFinshed: 3 } }, /`retain` to have no keys but maxFinished, maxAgeMillis, maxDead, maxDeadAgeMillis, got `maxFinshed`/],
  ])('rejects %s, naming it', async (_name, options, message) => {
    expect((await expectInvalid(() => openQueue(backend, clock, policy, bad(options)))).message).toMatch(message);
  });

  it('rejects a retain option that throws when read with InvalidArgumentError, not the error it threw', async () => {
    expect((await expectInvalid(() => openQueue(backend, clock, policy, { retain: unreadable() }))).message).toMatch(/`retain` .*properties can be read/);
  });

  it('accepts an empty options object and capacity 1', async () => {
    expect(await (await openQueue(backend, clock, policy, {})).stats()).toMatchObject({ pending: 0 });
    expect(await (await openQueue(backend, clock, policy, { capacity: 1 })).stats()).toMatchObject({ pending: 0 });
  });
});

/** The payload arena and the lock are the shared-memory backend's own. */
describe('options validation (memory backend only)', () => {
  const clock = new ManualClock(T0);
  const policy = new RetryPolicy(3, 100, 1000);

  it.each([
    ['arenaBytes', 0],
    ['arenaBytes', -1],
    ['arenaBytes', 1.5],
    ['arenaBytes', NaN],
    ['lockTimeoutMillis', 0],
    ['lockTimeoutMillis', -1],
    ['lockTimeoutMillis', 0.5],
    ['lockTimeoutMillis', NaN],
    ['lockTimeoutMillis', null],
    ['arenaBytes', null],
  ])('rejects %s = %s', (name, value) => {
    expectInvalidSync(() => new JobQueue(clock, policy, { [name]: value }));
  });

  it.each([[[]], ['x'], [5]])('rejects %j as the options object, in new JobQueue and JobQueue.open', (options) => {
    expect(expectInvalidSync(() => new JobQueue(clock, policy, bad(options))).message).toContain('`options` to be an object');
    const path = join(tempDir(), 'queue.db');
    expect(expectInvalidSync(() => JobQueue.open(path, clock, policy, bad(options))).message).toContain('`options` to be an object');
    expect(existsSync(path)).toBe(false);
  });

  it('takes synchronous in JobQueue.open only, and names the keys each takes', () => {
    expect(expectInvalidSync(() => new JobQueue(clock, policy, bad({ synchronous: 'FULL' }))).message).toMatch(/no keys but capacity, .*tracing, got `synchronous`/);
    const path = join(tempDir(), 'queue.db');
    expect(expectInvalidSync(() => JobQueue.open(path, clock, policy, bad({ capacty: 8 }))).message).toMatch(/no keys but capacity, .*tracing, synchronous, got `capacty`/);
    expect(expectInvalidSync(() => JobQueue.open(path, clock, policy, { synchronous: bad(null) })).message).toContain('synchronous');
    expect(existsSync(path)).toBe(false);
  });

  it('refuses options that throw when read with InvalidArgumentError, in every constructor (JobQueue.open making no file)', async () => {
    const path = join(tempDir(), 'queue.db');
    for (const options of [unreadable(), unreadable('capacity')]) {
      expect(expectInvalidSync(() => new JobQueue(clock, policy, options)).message).toMatch(/properties can be read/);
    }
    for (const options of [unreadable(), unreadable('synchronous')]) {
      expect(expectInvalidSync(() => JobQueue.open(path, clock, policy, options)).message).toMatch(/properties can be read/);
    }
    expect(existsSync(path)).toBe(false);
    expect(expectInvalidSync(() => new RetryPolicy(3, 100, 1000, unreadable('jitter'))).message).toMatch(/properties can be read/);
    // Refused before any connection is tried: no server is needed.
    expect((await expectInvalid(() => RedisJobQueue.connect(unreadable('redis')))).message).toMatch(/properties can be read/);
    expect((await expectInvalid(() => PartitionedRedisQueue.connect(unreadable()))).message).toMatch(/properties can be read/);
    const queue = new JobQueue(clock, policy, { capacity: 4 });
    expect(expectInvalidSync(() => new WorkerPool(queue, unreadable('threads'))).message).toMatch(/properties can be read/);
    queue.close();
  });

  it('refuses, with InvalidArgumentError naming it, every other object of the caller that throws when read: a tracing option, a clock, a policy, a handle, a metrics target', () => {
    for (const tracing of [unreadable(), unreadable('name')]) {
      expect(expectInvalidSync(() => new JobQueue(clock, policy, { tracing })).message).toMatch(/`tracing` .*properties can be read/);
    }
    expect(expectInvalidSync(() => new JobQueue(unreadable(), policy)).message).toMatch(/`time` .*properties can be read/);
    expect(expectInvalidSync(() => new JobQueue(unreadable('now'), policy)).message).toMatch(/`time` .*properties can be read/);
    expect(expectInvalidSync(() => new JobQueue(clock, unreadable())).message).toMatch(/`policy` .*properties can be read/);
    const queue = new JobQueue(clock, policy, { capacity: 4 });
    const handle = queue.share();
    for (const bad of [unreadable(), unreadable('kind'), { ...handle, options: unreadable() }, { ...handle, policy: unreadable() }, { ...handle, buffers: unreadable() }]) {
      expect(expectInvalidSync(() => JobQueue.attach(bad)).message).toMatch(/properties can be read/);
    }
    const registry = new Registry();
    for (const target of [unreadable(), unreadable('queue'), { queue: unreadable() }, { queue, pool: unreadable() }]) {
      expect(expectInvalidSync(() => collectMetrics(target, registry)).message).toMatch(/properties can be read/);
    }
    expect(expectInvalidSync(() => collectMetrics({ queue }, unreadable())).message).toMatch(/`registry` .*properties can be read/);
    // Refused before anything was attached: the queue is collected as if the calls above had not been made.
    const metrics = collectMetrics({ queue }, registry);
    metrics.close();
    queue.close();
  });
});
