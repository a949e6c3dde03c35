/**
 * `reserveBytes` / `releaseBytes` on every backend: the same contract
 * whether the bytes are the queue's shared memory (a JobQueue) or a plain
 * Uint8Array (Redis): a reservation written and submitted is the job's
 * payload, a bad length or a release of bytes the queue never handed out is
 * refused with InvalidArgumentError and changes nothing, a release of one
 * submitted or released already changes nothing. Where the memory is shared,
 * test/core/reserve-bytes.test.ts looks at the memory itself.
 */
import { expect, it } from 'vitest';
import { describeEachBackend } from '../support/backends.js';
import { bytesOf, expectInvalidSync, mustPoll, setup, snapshot } from '../support/helpers.js';

const LONG = 64 * 1024;

describeEachBackend('payloads written in place', (backend) => {
  it('hands out a Uint8Array of the length asked; written and submitted, it is the job payload, leased and viewed', async () => {
    const { queue } = await setup(backend);
    const sent = bytesOf(LONG, 3);
    const bytes = queue.reserveBytes(LONG);
    expect(bytes).toBeInstanceOf(Uint8Array);
    expect(bytes.length).toBe(LONG);
    bytes.set(sent);
    const id = await queue.submit('t', bytes);
    const lease = await mustPoll(queue, id);
    expect(Buffer.from(lease.payload as Uint8Array).equals(sent)).toBe(true);
    expect(Buffer.from((await queue.view(id)).payload as Uint8Array).equals(sent)).toBe(true);
    // Submitted: a release of it changes nothing.
    queue.releaseBytes(bytes);
    expect(Buffer.from((await queue.view(id)).payload as Uint8Array).equals(sent)).toBe(true);
  });

  it('takes reservations in submitMany and the options form, short ones included', async () => {
    const { queue } = await setup(backend);
    const [a, b, c] = [queue.reserveBytes(LONG), queue.reserveBytes(100), queue.reserveBytes(0)];
    a.set(bytesOf(LONG, 5));
    b.set(bytesOf(100, 6));
    const ids = await queue.submitMany([{ type: 't', payload: a }, { type: 't', payload: b, priority: 1 }]);
    const third = await queue.submit('t', c, { priority: 2 });
    expect((await mustPoll(queue, third)).payload).toEqual(new Uint8Array(0));
    expect((await mustPoll(queue, ids[1])).payload).toEqual(bytesOf(100, 6));
    expect(Buffer.from((await mustPoll(queue, ids[0])).payload as Uint8Array).equals(bytesOf(LONG, 5))).toBe(true);
  });

  it('refuses a length that is not an integer from 0 to maxPayloadBytes with InvalidArgumentError, changing nothing', async () => {
    const { queue } = await setup(backend, { options: { maxPayloadBytes: 8192 } });
    const id = await queue.submit('t', 'p');
    const before = await snapshot(queue, [id]);
    for (const length of [-1, 1.5, NaN, Infinity, 8193, '10', null, undefined]) {
      expectInvalidSync(() => queue.reserveBytes(length as unknown as number));
    }
    expect(queue.reserveBytes(8192).length).toBe(8192);
    expect(await snapshot(queue, [id])).toEqual(before);
  });

  it('refuses a release of bytes it never handed out (a subarray, a copy, another array) with InvalidArgumentError', async () => {
    const { queue } = await setup(backend);
    const bytes = queue.reserveBytes(LONG);
    for (const other of [bytes.subarray(1), bytes.slice(), new Uint8Array(LONG), 'bytes', null]) {
      expectInvalidSync(() => queue.releaseBytes(other as unknown as Uint8Array));
    }
    queue.releaseBytes(bytes);
    // Released already: nothing to give back, nothing refused.
    queue.releaseBytes(bytes);
  });

  it('copies a subarray of a reservation as any payload: the job holds those bytes', async () => {
    const { queue } = await setup(backend);
    const bytes = queue.reserveBytes(LONG);
    bytes.set(bytesOf(LONG, 9));
    const id = await queue.submit('t', bytes.subarray(10, 5010));
    queue.releaseBytes(bytes);
    expect((await mustPoll(queue, id)).payload).toEqual(bytesOf(LONG, 9).subarray(10, 5010));
  });
});
