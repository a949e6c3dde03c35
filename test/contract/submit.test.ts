import { expect, it } from 'vitest';
import { InvalidArgumentError, JobStatus } from '../../dist/index.js';
import { describeEachBackend } from '../support/backends.js';
import { T0, bad, expectInvalid, expectNoChange, mustPoll, setup, utf8Bytes } from '../support/helpers.js';

describeEachBackend('submit: ids', (backend) => {
  it('numbers jobs J1, J2, J3, ... in one sequence', async () => {
    const { queue } = await setup(backend);
    const ids: string[] = [];
    for (let i = 0; i < 12; i++) ids.push(await queue.submit('t', `p${i}`));
    expect(ids).toEqual(Array.from({ length: 12 }, (_, i) => `J${i + 1}`));
  });

  it('never reuses an id after jobs finish, are cancelled or fail', async () => {
    const { queue } = await setup(backend);
    expect(await queue.submit('t', 'a')).toBe('J1');
    expect(await queue.submit('t', 'b')).toBe('J2');
    await queue.cancel('J2');
    const lease = await mustPoll(queue, 'J1');
    await queue.complete('J1', lease.token);
    expect(await queue.submit('t', 'c')).toBe('J3');
    expect(await queue.submit('t', 'd', 5, T0 + 10)).toBe('J4');
  });

  it('starts a separate sequence for each queue', async () => {
    const a = (await setup(backend)).queue;
    const b = (await setup(backend)).queue;
    expect(await a.submit('t', '')).toBe('J1');
    expect(await a.submit('t', '')).toBe('J2');
    expect(await b.submit('t', '')).toBe('J1');
  });

  it('does not use up an id when submit is refused', async () => {
    const { queue } = await setup(backend);
    expect(await queue.submit('t', 'a')).toBe('J1');
    await expectInvalid(() => queue.submit('', 'a'));
    await expectInvalid(() => queue.submit('t', 'a', 1.5));
    expect(await queue.submit('t', 'b')).toBe('J2');
  });
});

describeEachBackend('submit: the new job', (backend) => {
  it('is PENDING with 0 attempts, no error and no lease', async () => {
    const { queue } = await setup(backend);
    const id = await queue.submit('email', 'hello');
    const view = await queue.view(id);
    expect(view.id).toBe(id);
    expect(view.type).toBe('email');
    expect(view.status).toBe(JobStatus.PENDING);
    expect(view.attempts).toBe(0);
    expect(view.lastError).toBeNull();
    expect(view.leaseUntil).toBeNull();
  });

  it('defaults priority to 0 and runAt to now', async () => {
    const { queue, clock } = await setup(backend);
    clock.advance(1234);
    const id = await queue.submit('t', 'p');
    const view = await queue.view(id);
    expect(view.priority).toBe(0);
    expect(view.nextRunAt).toBe(T0 + 1234);
    expect((await queue.stats()).ready).toBe(1);
  });

  it('treats an explicit undefined priority and runAt as the defaults', async () => {
    const { queue } = await setup(backend);
    const id = await queue.submit('t', 'p', undefined, undefined);
    expect((await queue.view(id)).priority).toBe(0);
    expect((await queue.view(id)).nextRunAt).toBe(T0);
  });

  it('keeps the given priority and runAt', async () => {
    const { queue } = await setup(backend);
    const id = await queue.submit('t', 'p', -7, T0 + 5000);
    expect((await queue.view(id)).priority).toBe(-7);
    expect((await queue.view(id)).nextRunAt).toBe(T0 + 5000);
    const past = await queue.submit('t', 'p', 3, T0 - 5000);
    expect((await queue.view(past)).priority).toBe(3);
    expect((await queue.view(past)).nextRunAt).toBe(T0 - 5000);
  });

  it('accepts a fractional runAt (finite is all that is asked)', async () => {
    const { queue } = await setup(backend);
    const id = await queue.submit('t', 'p', 0, T0 + 0.5);
    expect((await queue.view(id)).nextRunAt).toBe(T0 + 0.5);
  });

  it('keeps the type exactly', async () => {
    const { queue } = await setup(backend);
    const types = ['email', 'resize.image', 'Ünïcødé-类型-😀', 'a'];
    for (const type of types) {
      const id = await queue.submit(type, '');
      expect((await queue.view(id)).type).toBe(type);
    }
  });
});

describeEachBackend('submit: type validation', (backend) => {
  it.each(['', ' ', '  ', '\t', '\n', ' \t\r\n '])('rejects the blank type %j with InvalidArgumentError', async (type) => {
    const { queue } = await setup(backend);
    await expectInvalid(() => queue.submit(type, 'p'));
    expect((await queue.stats()).pending).toBe(0);
  });

  it.each(['\u00a0', '\u3000', '\u2003\ufeff'])('rejects the Unicode white-space type %j as blank', async (type) => {
    const { queue } = await setup(backend);
    await expectInvalid(() => queue.submit(type, 'p'));
  });

  it.each([42, null, undefined, {}, ['t'], true])('rejects the non-string type %s', async (type) => {
    const { queue } = await setup(backend);
    await expectInvalid(() => queue.submit(bad(type), 'p'));
    expect(await queue.queueDepth()).toBe(0);
  });
});

describeEachBackend('submit: payload', (backend) => {
  it.each([null, undefined])('stores a %s payload as the empty string', async (payload) => {
    const { queue } = await setup(backend);
    const id = await queue.submit('t', payload);
    expect((await queue.view(id)).payload).toBe('');
    expect((await mustPoll(queue, id)).payload).toBe('');
  });

  const samples: Array<[string, string]> = [
    ['empty', ''],
    ['ASCII', 'hello, world'],
    ['JSON', JSON.stringify({ to: 'a@b.c', n: [1, 2, 3], nested: { x: null } })],
    ['emoji incl. ZWJ sequences', '😀👩‍👩‍👧‍👦🏳️‍🌈'],
    ['CJK', '漢字かなカナ한국어'],
    ['NUL characters', '\u0000a\u0000\u0000b\u0000'],
    ['a lone NUL', '\u0000'],
    ['mixed scripts and controls', 'Ωμέγα\r\n\t\u0001\u007f\u0080\uffff\u{10ffff}'],
    ['leading and trailing white space', '  x  '],
  ];

  it.each(samples)('keeps a %s payload exactly, in view and in the lease', async (_name, payload) => {
    const { queue } = await setup(backend);
    const id = await queue.submit('t', payload);
    expect((await queue.view(id)).payload).toBe(payload);
    const lease = await mustPoll(queue, id);
    expect(lease.payload).toBe(payload);
    expect(lease.payload.length).toBe(payload.length);
  });

  it('keeps a 100 KB payload exactly', async () => {
    const { queue } = await setup(backend);
    const chunk = 'abc😀漢\u0000é';
    let payload = '';
    while (payload.length < 100 * 1024) payload += chunk;
    const id = await queue.submit('t', payload);
    expect((await queue.view(id)).payload === payload).toBe(true);
    expect((await mustPoll(queue, id)).payload === payload).toBe(true);
  });

  it('keeps many payloads apart (no cross-talk between jobs)', async () => {
    const { queue } = await setup(backend);
    const payloads = Array.from({ length: 200 }, (_, i) => `${i}:${'é'.repeat(i % 17)}😀`.repeat((i % 5) + 1));
    const ids: string[] = [];
    for (const p of payloads) ids.push(await queue.submit('t', p));
    for (const [i, id] of ids.entries()) expect((await queue.view(id)).payload).toBe(payloads[i]);
    for (const [i, id] of ids.entries()) {
      const lease = await mustPoll(queue, id);
      expect(lease.payload).toBe(payloads[i]);
      await queue.complete(id, lease.token);
    }
  });

  it('keeps payloads of every length from 0 to 200 bytes exactly, after types of many lengths', async () => {
    const { queue } = await setup(backend);
    // Characters of 1, 2, 3 and 4 UTF-8 bytes, so that boundaries fall inside characters too.
    const alphabet = ['a', 'é', '€', '😀', '\u0000'];
    const text = (bytes: number, seed: number): string => {
      let out = '';
      let left = bytes;
      for (let i = seed; left > 0; i++) {
        let ch = alphabet[i % alphabet.length]!;
        if (Buffer.byteLength(ch) > left) ch = 'z';
        out += ch;
        left -= Buffer.byteLength(ch);
      }
      return out;
    };
    const jobs: Array<[string, string, string]> = [];
    for (const typeBytes of [1, 2, 3, 59, 60, 61, 63, 64, 65, 119, 120, 121]) {
      for (let payloadBytes = 0; payloadBytes <= 200; payloadBytes += typeBytes % 7 === 0 ? 1 : 3) {
        const type = 't'.repeat(typeBytes);
        const payload = text(payloadBytes, payloadBytes + typeBytes);
        expect(utf8Bytes(payload)).toBe(payloadBytes);
        jobs.push([await queue.submit(type, payload), type, payload]);
      }
    }
    for (const [id, type, payload] of jobs) {
      const view = await queue.view(id);
      expect(view.type).toBe(type);
      expect(view.payload).toBe(payload);
    }
    for (const [id, type, payload] of jobs) {
      const lease = await mustPoll(queue, id);
      expect([lease.type, lease.payload]).toEqual([type, payload]);
      await queue.complete(id, lease.token);
    }
  });

  it('keeps pure-ASCII payloads of every length from 0 to 200 bytes exactly, after types of many lengths', async () => {
    const { queue } = await setup(backend);
    const jobs: Array<[string, string, string]> = [];
    for (const typeBytes of [1, 4, 59, 60, 61, 120]) {
      for (let n = 0; n <= 200; n++) {
        const type = 'k'.repeat(typeBytes);
        let payload = '';
        for (let i = 0; i < n; i++) payload += String.fromCharCode((i * 7 + n) % 128);
        jobs.push([await queue.submit(type, payload), type, payload]);
      }
    }
    for (const [id, type, payload] of jobs) {
      const lease = await mustPoll(queue, id);
      expect([lease.type, lease.payload]).toEqual([type, payload]);
      expect((await queue.view(id)).payload).toBe(payload);
      await queue.complete(id, lease.token);
    }
  });

  it.each(['\ud800', 'a\udc00b', 'x\ud83d', '\ude00y', '😀\ud800😀'])(
    'rejects the ill-formed payload %j (a lone surrogate) with InvalidArgumentError',
    async (payload) => {
      const { queue } = await setup(backend);
      expect(payload.isWellFormed()).toBe(false);
      await expectInvalid(() => queue.submit('t', payload));
      expect(await queue.queueDepth()).toBe(0);
    },
  );

  it.each([42, {}, ['p'], true])('rejects the non-string payload %s', async (payload) => {
    const { queue } = await setup(backend);
    await expectInvalid(() => queue.submit('t', bad(payload)));
    expect(await queue.queueDepth()).toBe(0);
  });
});

describeEachBackend('submit: priority and runAt validation', (backend) => {
  it.each([1.5, -0.5, NaN, Infinity, -Infinity])('rejects the priority %s with InvalidArgumentError', async (priority) => {
    const { queue } = await setup(backend);
    await expectInvalid(() => queue.submit('t', 'p', priority));
    expect(await queue.queueDepth()).toBe(0);
  });

  // (An object in priority's place is the options form: see submit-options.test.ts.)
  it.each(['1', null, true])('rejects the non-number priority %j', async (priority) => {
    const { queue } = await setup(backend);
    await expectInvalid(() => queue.submit('t', 'p', bad(priority)));
  });

  it.each([NaN, Infinity, -Infinity])('rejects the runAt %s with InvalidArgumentError', async (runAt) => {
    const { queue } = await setup(backend);
    await expectInvalid(() => queue.submit('t', 'p', 0, runAt));
    expect(await queue.queueDepth()).toBe(0);
  });

  it.each(['1000', {}])('rejects the non-number runAt %j', async (runAt) => {
    const { queue } = await setup(backend);
    await expectInvalid(() => queue.submit('t', 'p', 0, bad(runAt)));
  });

  it('changes nothing when refused', async () => {
    const { queue } = await setup(backend);
    await queue.submit('t', 'a');
    await queue.submit('t', 'b', 3, T0 + 100);
    const ids = ['J1', 'J2', 'J3'];
    await expectNoChange(queue, ids, () => queue.submit(' ', 'x'), InvalidArgumentError, 'ERR_INVALID_ARGUMENT');
    await expectNoChange(queue, ids, () => queue.submit('t', 'x', NaN), InvalidArgumentError, 'ERR_INVALID_ARGUMENT');
    await expectNoChange(queue, ids, () => queue.submit('t', 'x', 0, Infinity), InvalidArgumentError, 'ERR_INVALID_ARGUMENT');
    await expectNoChange(queue, ids, () => queue.submit('t', '\ud800'), InvalidArgumentError, 'ERR_INVALID_ARGUMENT');
  });
});
