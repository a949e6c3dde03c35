import { describe, expect, it } from 'vitest';
import { JobNotFoundError, JobQueue, ManualClock, QueueFullError, RetryPolicy } from '../dist/index.js';
import {
  T0,
  bad,
  expectFull,
  expectInvalid,
  expectNoChange,
  expectNotFound,
  killJob,
  mustPoll,
  setup,
  snapshot,
  utf8Bytes,
} from './helpers.js';

/** Polls `id` (which must be the job handed out) and completes it. */
function finish(queue: JobQueue, id: string): void {
  queue.complete(id, mustPoll(queue, id).token);
}

describe('capacity: a full queue', () => {
  it('refuses a new job with QueueFullError once capacity PENDING jobs are held, changing nothing', () => {
    const { queue } = setup({ options: { capacity: 3 } });
    queue.submit('t', 'a');
    queue.submit('t', 'b', 0, T0 + 1000);
    queue.submit('t', 'c');
    const ids = ['J1', 'J2', 'J3', 'J4'];
    expectNoChange(queue, ids, () => queue.submit('t', 'd'), QueueFullError, 'ERR_QUEUE_FULL');
    expectNoChange(queue, ids, () => queue.submit('t', 'd', 100), QueueFullError, 'ERR_QUEUE_FULL');
    expect(queue.stats().pending).toBe(3);
  });

  it('counts RUNNING and DEAD jobs as held, and never evicts them', () => {
    const s = setup({ maxAttempts: 1, options: { capacity: 3 } });
    const { queue } = s;
    queue.submit('t', 'dead 1'); // J1
    killJob(s, 'J1');
    queue.submit('t', 'running'); // J2
    const running = mustPoll(queue, 'J2', 10_000_000);
    queue.submit('t', 'dead 2'); // J3
    killJob(s, 'J3');
    const ids = ['J1', 'J2', 'J3', 'J4'];
    expectNoChange(queue, ids, () => queue.submit('t', 'no room'), QueueFullError, 'ERR_QUEUE_FULL');
    expect(queue.view('J1').status).toBe('DEAD');
    expect(queue.view('J2').status).toBe('RUNNING');
    expect(queue.view('J3').status).toBe('DEAD');
    expect(queue.deadLetters().map((v) => v.id)).toEqual(['J1', 'J3']);
    queue.complete('J2', running.token); // the lease survived the refused submit
  });

  it('does not use up an id on a refused submit', () => {
    const { queue } = setup({ options: { capacity: 2 } });
    queue.submit('t', 'a'); // J1
    queue.submit('t', 'b'); // J2
    expectFull(() => queue.submit('t', 'c'));
    expectFull(() => queue.submit('t', 'c'));
    queue.cancel('J1'); // a finished job: its room may now be taken
    expect(queue.submit('t', 'c')).toBe('J3');
  });

  it('accepts capacity 1', () => {
    const { queue } = setup({ options: { capacity: 1 } });
    expect(queue.submit('t', 'a')).toBe('J1');
    expectFull(() => queue.submit('t', 'b'));
    finish(queue, 'J1');
    expect(queue.submit('t', 'b')).toBe('J2');
    expectNotFound(() => queue.view('J1'));
  });

  it('gets room back when a DEAD job is revived and then finishes', () => {
    const s = setup({ maxAttempts: 1, options: { capacity: 1 } });
    s.queue.submit('t', 'a'); // J1
    killJob(s, 'J1');
    expectFull(() => s.queue.submit('t', 'b'));
    s.queue.retryDead('J1');
    expectFull(() => s.queue.submit('t', 'b'));
    finish(s.queue, 'J1');
    expect(s.queue.submit('t', 'b')).toBe('J2');
  });
});

describe('capacity: eviction of finished jobs', () => {
  it('keeps finished jobs while there is room', () => {
    const { queue } = setup({ options: { capacity: 3 } });
    queue.submit('t', 'a'); // J1
    finish(queue, 'J1');
    queue.submit('t', 'b'); // J2
    queue.cancel('J2');
    queue.submit('t', 'c'); // J3: the queue is now exactly full
    expect(queue.view('J1')).toMatchObject({ status: 'SUCCEEDED', payload: 'a' });
    expect(queue.view('J2')).toMatchObject({ status: 'CANCELLED', payload: 'b' });
    expect(queue.stats()).toMatchObject({ succeeded: 1, cancelled: 1, pending: 1 });
  });

  it('evicts a finished job only when room is needed, and says so', () => {
    const { queue } = setup({ options: { capacity: 2 } });
    queue.submit('t', 'a'); // J1
    finish(queue, 'J1');
    queue.submit('t', 'b'); // J2: fits without eviction
    expect(queue.view('J1').status).toBe('SUCCEEDED');
    queue.submit('t', 'c'); // J3: needs J1's room
    const error = expectNotFound(() => queue.view('J1'));
    expect(error).toBeInstanceOf(JobNotFoundError);
    expect(error.message).toMatch(/evicted/i);
    expect(queue.view('J2').status).toBe('PENDING');
    expect(queue.view('J3').payload).toBe('c');
  });

  it('evicts SUCCEEDED and CANCELLED jobs oldest-finished first (not oldest-submitted), one per new job', () => {
    const { queue, clock } = setup({ options: { capacity: 4 } });
    queue.submit('t', 'a'); // J1
    queue.submit('t', 'b'); // J2
    queue.submit('t', 'c'); // J3
    queue.submit('t', 'live'); // J4
    const l1 = mustPoll(queue, 'J1');
    const l2 = mustPoll(queue, 'J2');
    clock.advance(10);
    queue.cancel('J3'); // finished first
    clock.advance(10);
    queue.complete('J2', l2.token); // finished second
    clock.advance(10);
    queue.complete('J1', l1.token); // finished third
    const present = () => ['J1', 'J2', 'J3'].filter((id) => 'status' in snapshot(queue, [id]).views[id]!);

    queue.submit('t', 'd'); // J5
    expect(present()).toEqual(['J1', 'J2']);
    expect(expectNotFound(() => queue.view('J3')).message).toMatch(/evicted/i);
    queue.submit('t', 'e'); // J6
    expect(present()).toEqual(['J1']);
    expect(expectNotFound(() => queue.view('J2')).message).toMatch(/evicted/i);
    queue.submit('t', 'f'); // J7
    expect(present()).toEqual([]);
    expect(expectNotFound(() => queue.view('J1')).message).toMatch(/evicted/i);
    expectFull(() => queue.submit('t', 'g'));
    expect(['J4', 'J5', 'J6', 'J7'].map((id) => queue.view(id).status)).toEqual(['PENDING', 'PENDING', 'PENDING', 'PENDING']);
  });

  it('still evicts oldest-finished first after the clock was set back', () => {
    const { queue, clock } = setup({ options: { capacity: 3 } });
    queue.submit('t', 'a'); // J1
    queue.submit('t', 'b'); // J2
    queue.submit('t', 'live'); // J3
    const l1 = mustPoll(queue, 'J1');
    const l2 = mustPoll(queue, 'J2');
    clock.advance(10);
    queue.complete('J2', l2.token); // finished first
    clock.advance(10);
    queue.complete('J1', l1.token); // finished second
    clock.set(T0 - 1_000_000); // the clock goes back (an NTP step)
    queue.submit('t', 'c', 0, T0 - 1_000_000); // J4 evicts J2
    expect(expectNotFound(() => queue.view('J2')).message).toMatch(/evicted/i);
    expect(queue.view('J1').status).toBe('SUCCEEDED');
    queue.submit('t', 'd', 0, T0 - 1_000_000); // J5 evicts J1
    expectNotFound(() => queue.view('J1'));
    expect(['J3', 'J4', 'J5'].map((id) => queue.view(id).status)).toEqual(['PENDING', 'PENDING', 'PENDING']);
  });

  it('never evicts PENDING, RUNNING or DEAD jobs, whatever their age', () => {
    const s = setup({ maxAttempts: 1, options: { capacity: 4 } });
    const { queue } = s;
    queue.submit('t', 'dead', 5); // J1, oldest
    killJob(s, 'J1');
    queue.submit('t', 'running', 5); // J2
    const running = mustPoll(queue, 'J2', 10_000_000);
    queue.submit('t', 'pending', 0, s.clock.now() + 10_000_000); // J3
    queue.submit('t', 'finished'); // J4, newest
    finish(queue, 'J4');
    queue.submit('t', 'new'); // J5: evicts J4, the only finished job
    expectNotFound(() => queue.view('J4'));
    expect(['J1', 'J2', 'J3', 'J5'].map((id) => queue.view(id).status)).toEqual(['DEAD', 'RUNNING', 'PENDING', 'PENDING']);
    expectFull(() => queue.submit('t', 'none'));
    queue.complete('J2', running.token);
  });

  it('refuses every operation on an evicted job with JobNotFoundError', () => {
    const { queue } = setup({ options: { capacity: 1 } });
    queue.submit('t', 'a'); // J1
    const lease = mustPoll(queue, 'J1');
    queue.complete('J1', lease.token);
    queue.submit('t', 'b'); // J2 evicts J1
    expectNotFound(() => queue.view('J1'));
    expectNotFound(() => queue.complete('J1', lease.token));
    expectNotFound(() => queue.fail('J1', lease.token, 'x'));
    expectNotFound(() => queue.extend('J1', lease.token, 1000));
    expectNotFound(() => queue.retryDead('J1'));
    expectNotFound(() => queue.cancel('J1'));
  });

  it('does not reuse the id of an evicted job', () => {
    const { queue } = setup({ options: { capacity: 1 } });
    queue.submit('t', 'a'); // J1
    queue.cancel('J1');
    expect(queue.submit('t', 'b')).toBe('J2');
    expect(queue.view('J2').payload).toBe('b');
    expectNotFound(() => queue.view('J1'));
    expect(queue.deadLetters()).toEqual([]);
  });

  it('keeps working through many generations of evictions', () => {
    const { queue } = setup({ options: { capacity: 8 } });
    for (let i = 1; i <= 500; i++) {
      const id = queue.submit('t', `payload ${i} ${'é'.repeat(i % 13)}`);
      expect(id).toBe(`J${i}`);
      const lease = mustPoll(queue, id);
      expect(lease.payload).toBe(`payload ${i} ${'é'.repeat(i % 13)}`);
      queue.complete(id, lease.token);
    }
    expect(queue.view('J500').status).toBe('SUCCEEDED');
    expect(queue.view('J493').status).toBe('SUCCEEDED');
    expect(expectNotFound(() => queue.view('J492')).message).toMatch(/evicted/i);
    expect(expectNotFound(() => queue.view('J1')).message).toMatch(/evicted/i);
  });
});

describe('capacity: shared payload memory', () => {
  it('refuses with QueueFullError, changing nothing, when payload memory runs out', () => {
    const { queue } = setup({ options: { arenaBytes: 65_536, maxPayloadBytes: 16_384 } });
    const payload = 'p'.repeat(10_000);
    const ids: string[] = [];
    let refused: unknown;
    for (let i = 0; i < 100 && refused === undefined; i++) {
      try {
        ids.push(queue.submit('t', payload));
      } catch (error) {
        refused = error;
      }
    }
    expect(refused).toBeInstanceOf(QueueFullError);
    expect(ids.length).toBeGreaterThan(0);
    expect(ids.length).toBeLessThan(7); // 64 KiB cannot hold 7 payloads of 10 000 bytes
    expectNoChange(queue, [...ids, `J${ids.length + 1}`], () => queue.submit('t', payload), QueueFullError, 'ERR_QUEUE_FULL');
    for (const id of ids) expect(queue.view(id).payload).toBe(payload);
  });

  it('reclaims the payload memory of evicted finished jobs', () => {
    const { queue } = setup({ options: { arenaBytes: 65_536, maxPayloadBytes: 16_384 } });
    for (let i = 1; i <= 50; i++) {
      const payload = String(i).padEnd(10_000, '.');
      const id = queue.submit('t', payload);
      const lease = mustPoll(queue, id);
      expect(lease.payload).toBe(payload);
      queue.complete(id, lease.token);
    }
    expect(queue.stats().pending).toBe(0);
  });
  it('stores a payload of maxPayloadBytes in a queue that holds only finished jobs, however they used the memory', () => {
    const { queue } = setup({ options: { arenaBytes: 65_536, maxPayloadBytes: 16_384 } });
    for (let i = 0; i < 200; i++) finish(queue, queue.submit('t', 'x'.repeat(1000)));
    expect(queue.stats()).toMatchObject({ pending: 0, running: 0, dead: 0 });
    const big = 'y'.repeat(16_384);
    const id = queue.submit('t', big); // every finished job may be evicted: there is room
    expect(queue.view(id).payload === big).toBe(true);
  });

  it('stores a 1 MiB payload after 65 536 small jobs finished (default options)', () => {
    const { queue } = setup({ maxAttempts: 1 });
    const small = 'x'.repeat(1000);
    for (let i = 0; i < 65_536; i++) {
      const id = queue.submit('t', small);
      const lease = queue.poll('w', 1000)!;
      queue.complete(id, lease.token);
    }
    expect(queue.stats()).toMatchObject({ pending: 0, running: 0, dead: 0 });
    const big = 'y'.repeat(1_048_576);
    const id = queue.submit('t', big);
    expect(queue.view(id).payload === big).toBe(true);
  });

  it('evicts nothing when it refuses a submit anyway (a failed call changes nothing)', () => {
    const { queue } = setup({ options: { arenaBytes: 65_536, maxPayloadBytes: 16_384 } });
    finish(queue, queue.submit('t', 'small')); // J1: finished, evictable
    const payload = 'p'.repeat(10_000);
    const ids = ['J1'];
    for (let i = 0; i < 100; i++) {
      const watched = [...ids, `J${ids.length + 1}`];
      const before = snapshot(queue, watched);
      let refused: unknown;
      try {
        ids.push(queue.submit('t', payload));
        continue;
      } catch (error) {
        refused = error;
      }
      expect(refused).toBeInstanceOf(QueueFullError);
      expect(snapshot(queue, watched)).toEqual(before);
      return;
    }
    expect.unreachable('64 KiB of payload memory never filled up');
  });
});

describe('maxPayloadBytes', () => {
  it('accepts a payload of exactly the limit and refuses one byte more', () => {
    const { queue } = setup({ options: { maxPayloadBytes: 10 } });
    expect(queue.view(queue.submit('t', 'a'.repeat(10))).payload).toBe('a'.repeat(10));
    const error = expectInvalid(() => queue.submit('t', 'a'.repeat(11)));
    expect(error.code).toBe('ERR_INVALID_ARGUMENT');
    expect(queue.queueDepth()).toBe(1);
  });

  it('counts UTF-8 bytes: a 3-byte character counts 3', () => {
    const { queue } = setup({ options: { maxPayloadBytes: 10 } });
    expect(utf8Bytes('€€€a')).toBe(10);
    expect(queue.view(queue.submit('t', '€€€a')).payload).toBe('€€€a'); // 4 UTF-16 units, 10 bytes
    expectInvalid(() => queue.submit('t', '€€€€')); // 4 units, 12 bytes
    expectInvalid(() => queue.submit('t', '€€€ab')); // 11 bytes
  });

  it('counts a 4-byte character (a surrogate pair) as 4, not 2 × 3', () => {
    const { queue } = setup({ options: { maxPayloadBytes: 10 } });
    expect(utf8Bytes('😀😀ab')).toBe(10);
    expect(queue.view(queue.submit('t', '😀😀ab')).payload).toBe('😀😀ab');
    expectInvalid(() => queue.submit('t', '😀😀abc'));
  });

  it('counts a 2-byte character as 2 and NUL as 1', () => {
    const { queue } = setup({ options: { maxPayloadBytes: 10 } });
    expect(queue.view(queue.submit('t', 'éééé\u0000\u0000')).payload).toBe('éééé\u0000\u0000'); // 10 bytes
    expectInvalid(() => queue.submit('t', 'ééééé\u0000')); // 11 bytes
  });

  it('accepts null and empty payloads under the smallest limit', () => {
    const { queue } = setup({ options: { maxPayloadBytes: 1 } });
    expect(queue.view(queue.submit('t', null)).payload).toBe('');
    expect(queue.view(queue.submit('t', '')).payload).toBe('');
    expect(queue.view(queue.submit('t', 'x')).payload).toBe('x');
    expectInvalid(() => queue.submit('t', 'é'));
  });

  it('changes nothing when a payload is too large', () => {
    const { queue } = setup({ options: { maxPayloadBytes: 10 } });
    queue.submit('t', 'ok');
    expectNoChange(queue, ['J1', 'J2'], () => queue.submit('t', 'x'.repeat(11)), Error, 'ERR_INVALID_ARGUMENT');
    expect(queue.submit('t', 'ok')).toBe('J2');
  });

  it('defaults to 1 MiB: exactly 1 048 576 bytes fit, one more does not', () => {
    const { queue } = setup();
    const exact = 'x'.repeat(1_048_576);
    const id = queue.submit('t', exact);
    expect(queue.view(id).payload.length).toBe(1_048_576);
    expect(mustPoll(queue, id).payload === exact).toBe(true);
    expectInvalid(() => queue.submit('t', exact + 'x'));
    expectInvalid(() => queue.submit('t', 'x'.repeat(1_048_574) + '€'));
  });
});

describe('options validation', () => {
  const clock = new ManualClock(T0);
  const policy = new RetryPolicy(3, 100, 1000);

  it.each([0, -1, 1.5, NaN, Infinity, -Infinity, '10', 2 ** 53])('rejects capacity %s', (capacity) => {
    expectInvalid(() => new JobQueue(clock, policy, { capacity: bad(capacity) }));
  });

  it.each([0, -1, 1.5, NaN, Infinity, '10'])('rejects maxPayloadBytes %s', (maxPayloadBytes) => {
    expectInvalid(() => new JobQueue(clock, policy, { maxPayloadBytes: bad(maxPayloadBytes) }));
  });

  it.each([
    ['arenaBytes', 0],
    ['arenaBytes', -1],
    ['arenaBytes', 1.5],
    ['arenaBytes', NaN],
    ['maxErrorBytes', 0],
    ['maxErrorBytes', -1],
    ['maxErrorBytes', 2.5],
    ['lockTimeoutMillis', 0],
    ['lockTimeoutMillis', -1],
    ['lockTimeoutMillis', 0.5],
    ['lockTimeoutMillis', NaN],
  ])('rejects %s = %s', (name, value) => {
    expectInvalid(() => new JobQueue(clock, policy, { [name]: value }));
  });

  it('accepts an empty options object and capacity 1', () => {
    expect(() => new JobQueue(clock, policy, {})).not.toThrow();
    expect(() => new JobQueue(clock, policy, { capacity: 1 })).not.toThrow();
  });
});
