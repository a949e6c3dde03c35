/**
 * `fail(jobId, token, error)` takes an Error as well as a string, on every
 * backend: the job keeps the error's message as its lastError (its name when
 * the message is empty), as a catch block hands it over. A value that is
 * neither is refused before anything changes.
 */
import { runInNewContext } from 'node:vm';
import { expect, it } from 'vitest';
import { InvalidArgumentError, PermanentError } from '../../dist/index.js';
import { describeEachBackend } from '../support/backends.js';
import { bad, expectNoChange, setup } from '../support/helpers.js';

describeEachBackend('fail with an Error', (backend) => {
  it("keeps the Error's message as lastError, and retries or dead-letters as with a string", async () => {
    const { queue, clock } = await setup(backend, { maxAttempts: 2 });
    const id = await queue.submit('t', 'p');
    let lease = (await queue.poll('w', 10_000))!;
    await queue.fail(id, lease.token, new TypeError('cannot read the image'));
    expect(await queue.view(id)).toMatchObject({ status: 'PENDING', attempts: 1, lastError: 'cannot read the image' });
    clock.advance(10_000);
    lease = (await queue.poll('w', 10_000))!;
    await queue.fail(id, lease.token, new RangeError(''));
    expect(await queue.view(id)).toMatchObject({ status: 'DEAD', attempts: 2, lastError: 'RangeError' });
  });

  it('takes an Error of another realm (a vm context) and one with { permanent: true }', async () => {
    const { queue } = await setup(backend, { maxAttempts: 3 });
    const first = await queue.submit('t', 'a');
    const foreign = runInNewContext('new Error("from a sandbox")') as Error;
    expect(foreign instanceof Error).toBe(false);
    await queue.fail(first, (await queue.poll('w', 10_000))!.token, foreign);
    expect((await queue.view(first)).lastError).toBe('from a sandbox');
    const second = await queue.submit('t', 'b');
    const lease = (await queue.poll('w', 10_000))!;
    expect(lease.jobId).toBe(second);
    await queue.fail(second, lease.token, new PermanentError('not an image'), { permanent: true });
    expect(await queue.view(second)).toMatchObject({ status: 'DEAD', attempts: 1, lastError: 'not an image' });
  });

  it('refuses an error that is neither a string nor an Error (InvalidArgumentError), the job still RUNNING', async () => {
    const { queue } = await setup(backend);
    const id = await queue.submit('t', 'p');
    const lease = (await queue.poll('w', 10_000))!;
    for (const value of [{ message: 'looks like one' }, 42, ['x']]) {
      const error = await expectNoChange(queue, [id], () => queue.fail(id, lease.token, bad(value)), InvalidArgumentError, 'ERR_INVALID_ARGUMENT');
      expect(error.message).toContain('Expected `error` to be a string, an Error, null or undefined');
    }
    expect((await queue.view(id)).status).toBe('RUNNING');
  });
});
