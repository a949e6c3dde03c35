import { expect, it } from 'vitest';
import { describeEachBackend } from '../support/backends.js';
import { bytesOf, expectInvalid, mustPoll, setup, snapshot } from '../support/helpers.js';


const MIB = 1 << 20;

describeEachBackend('binary payloads', (backend) => {
  it('refuses a Uint8Array payload for a schedule with InvalidArgumentError (schedules keep text), creating none', async () => {
    const { queue } = await setup(backend);
    await expectInvalid(() => queue.schedule('nightly', { everyMillis: 1_000, type: 't', payload: bytesOf(4) as unknown as string }));
    expect(await queue.schedules()).toEqual([]);
  });

  it('leases a Uint8Array payload back as a Uint8Array with the same bytes, not valid UTF-8 included', async () => {
    const { queue } = await setup(backend);
    const sent = bytesOf(1000);
    const id = await queue.submit('t', sent);
    const lease = await mustPoll(queue, id);
    expect(lease.payload).toBeInstanceOf(Uint8Array);
    expect(lease.payload).toEqual(sent);
    expect((await queue.view(id)).payload).toEqual(sent);
  });

  it('keeps a string a string beside binary jobs, and an empty Uint8Array binary', async () => {
    const { queue } = await setup(backend);
    const text = await queue.submit('t', 'é'.repeat(100));
    const empty = await queue.submit('t', new Uint8Array(0));
    const [a, b] = [await mustPoll(queue, text), await mustPoll(queue, empty)];
    expect(a.payload).toBe('é'.repeat(100));
    expect(b.payload).toBeInstanceOf(Uint8Array);
    expect((b.payload as Uint8Array).length).toBe(0);
  });

  it('takes a 1 MiB payload and a 1 MiB result at the default limits', async () => {
    const { queue } = await setup(backend);
    const sent = bytesOf(MIB, 7);
    const id = await queue.submit('t', sent);
    const lease = await mustPoll(queue, id);
    expect(lease.payload).toBeInstanceOf(Uint8Array);
    // Compared whole (toEqual walks a megabyte element by element, for seconds).
    expect(Buffer.from(lease.payload as Uint8Array).equals(sent)).toBe(true);
    const result = bytesOf(MIB, 9);
    await queue.complete(id, lease.token, result);
    const view = await queue.view(id);
    expect(view.result).toBeInstanceOf(Uint8Array);
    expect(Buffer.from(view.result as Uint8Array).equals(result)).toBe(true);
  });

  it('keeps an empty Uint8Array result binary: view and finished give an empty Uint8Array, not undefined', async () => {
    const { queue } = await setup(backend);
    const id = await queue.submit('t', 'text');
    const lease = await mustPoll(queue, id);
    await queue.complete(id, lease.token, new Uint8Array(0));
    const result = (await queue.view(id)).result;
    expect(result).toBeInstanceOf(Uint8Array);
    expect((result as Uint8Array).length).toBe(0);
    expect(await queue.finished(id)).toEqual(new Uint8Array(0));
  });

  it('takes a Buffer (a Uint8Array) and leases it back as a Uint8Array of its bytes, not the pool around it', async () => {
    const { queue } = await setup(backend);
    const id = await queue.submit('t', Buffer.from('abc'));
    expect((await mustPoll(queue, id)).payload).toEqual(new Uint8Array([0x61, 0x62, 0x63]));
  });

  it('refuses other objects as a payload with InvalidArgumentError, changing nothing', async () => {
    const { queue } = await setup(backend);
    const id = await queue.submit('t', 'p');
    const before = await snapshot(queue, [id]);
    for (const payload of [new ArrayBuffer(4), new DataView(new ArrayBuffer(4)), new Int32Array(2), [1, 2], { 0: 1, length: 1 }]) {
      await expectInvalid(() => queue.submit('t', payload as unknown as Uint8Array));
      await expectInvalid(() => queue.updatePayload(id, payload as unknown as Uint8Array));
    }
    expect(await snapshot(queue, [id])).toEqual(before);
  });

  it('refuses bytes over maxPayloadBytes, and a binary result over it, with InvalidArgumentError, changing nothing', async () => {
    const { queue } = await setup(backend, { options: { maxPayloadBytes: 100 } });
    const id = await queue.submit('t', bytesOf(100));
    const before = await snapshot(queue, [id]);
    const error = await expectInvalid(() => queue.submit('t', bytesOf(101)));
    expect(error.message).toContain('maxPayloadBytes');
    await expectInvalid(() => queue.updatePayload(id, bytesOf(101)));
    expect(await snapshot(queue, [id])).toEqual(before);
    const lease = await mustPoll(queue, id);
    await expectInvalid(() => queue.complete(id, lease.token, bytesOf(101)));
    expect((await queue.view(id)).status).toBe('RUNNING');
    await queue.complete(id, lease.token, bytesOf(100));
    expect((await queue.view(id)).result).toEqual(bytesOf(100));
  });

  it('updatePayload turns text into bytes and bytes into text', async () => {
    const { queue } = await setup(backend);
    const id = await queue.submit('t', 'text');
    await queue.updatePayload(id, bytesOf(300));
    expect((await queue.view(id)).payload).toEqual(bytesOf(300));
    await queue.updatePayload(id, 'text again');
    expect((await queue.view(id)).payload).toBe('text again');
    await queue.updatePayload(id, bytesOf(3));
    expect((await mustPoll(queue, id)).payload).toEqual(bytesOf(3));
  });

  it('shows a dead binary job in deadLetters with its bytes', async () => {
    const { queue } = await setup(backend, { maxAttempts: 1 });
    const id = await queue.submit('t', bytesOf(200));
    const lease = await mustPoll(queue, id);
    await queue.fail(id, lease.token, 'boom');
    const [dead] = await queue.deadLetters();
    expect(dead?.id).toBe(id);
    expect(dead?.payload).toEqual(bytesOf(200));
  });

  it('keeps bytes after a type too long for the type table, which leads the job\'s data chain', async () => {
    const { queue } = await setup(backend);
    const type = 't'.repeat(200);
    const id = await queue.submit(type, bytesOf(150));
    await queue.updatePayload(id, 'text between');
    await queue.updatePayload(id, bytesOf(90, 5));
    const lease = await mustPoll(queue, id);
    expect([lease.type, lease.payload]).toEqual([type, bytesOf(90, 5)]);
    await queue.complete(id, lease.token, bytesOf(70, 6));
    expect(await queue.view(id)).toMatchObject({ type, payload: bytesOf(90, 5), result: bytesOf(70, 6) });
  });

  it('submitMany takes text and bytes in one batch, each read back as it was given', async () => {
    const { queue } = await setup(backend);
    const ids = await queue.submitMany([{ type: 't', payload: bytesOf(500) }, { type: 't', payload: 'text' }, { type: 't', payload: bytesOf(1) }]);
    const payloads = [];
    for (const id of ids) payloads.push((await queue.view(id)).payload);
    expect(payloads).toEqual([bytesOf(500), 'text', bytesOf(1)]);
  });

  it('keeps the bytes through completeAndPoll with a binary result', async () => {
    const { queue } = await setup(backend);
    const [a, b] = [await queue.submit('t', bytesOf(70)), await queue.submit('t', bytesOf(130, 3))];
    const lease = await mustPoll(queue, a);
    const next = await queue.completeAndPoll(a, lease.token, 'w1', 1_000, new Uint8Array([1, 2, 3]));
    expect(next?.jobId).toBe(b);
    expect(next?.payload).toEqual(bytesOf(130, 3));
    expect((await queue.view(a)).result).toEqual(new Uint8Array([1, 2, 3]));
  });
});
