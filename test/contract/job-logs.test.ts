import { expect, it } from 'vitest';
import { InvalidArgumentError, JobNotFoundError } from '../../dist/index.js';
import { describeEachBackendAnd } from '../support/backends.js';
import { T0, bad, expectError, expectNoChange, mustPoll, setup } from '../support/helpers.js';

describeEachBackendAnd('job logs', (backend) => {
  it('has no lines until one is logged, then the lines in order', async () => {
    const { queue } = await setup(backend);
    const id = await queue.submit('t', 'p');
    expect(await queue.logs(id)).toEqual({ lines: [], dropped: 0 });
    await queue.log(id, 'first');
    await queue.log(id, '');
    await queue.log(id, 'third: ünïcødé ✓');
    expect(await queue.logs(id)).toEqual({ lines: ['first', '', 'third: ünïcødé ✓'], dropped: 0 });
  });

  it('keeps each job\'s lines apart, and through a retry and to the finish', async () => {
    const s = await setup(backend);
    const { queue, clock } = s;
    const a = await queue.submit('t', 'a');
    const b = await queue.submit('t', 'b', 0, T0 + 1e9); // delayed: never the one polled here
    const first = await mustPoll(queue, a);
    await queue.log(a, 'attempt 1');
    await queue.log(b, 'b line');
    await queue.fail(a, first.token, 'boom');
    clock.advance(s.policy.maxBackoffMillis + 1);
    const second = await mustPoll(queue, a);
    await queue.log(a, 'attempt 2');
    await queue.complete(a, second.token);
    expect(await queue.logs(a)).toEqual({ lines: ['attempt 1', 'attempt 2'], dropped: 0 });
    expect(await queue.logs(b)).toEqual({ lines: ['b line'], dropped: 0 });
  });

  it('drops the oldest lines past maxLogLines and counts them', async () => {
    const { queue } = await setup(backend, { options: { maxLogLines: 3 } });
    const id = await queue.submit('t', 'p');
    for (let n = 1; n <= 7; n++) await queue.log(id, `line ${n}`);
    expect(await queue.logs(id)).toEqual({ lines: ['line 5', 'line 6', 'line 7'], dropped: 4 });
  });

  it('cuts a line to maxLogLineBytes of UTF-8, never inside a character', async () => {
    const { queue } = await setup(backend, { options: { maxLogLineBytes: 8 } });
    const id = await queue.submit('t', 'p');
    await queue.log(id, 'abcdefghijkl');
    await queue.log(id, 'abcdefgé'); // é is 2 bytes: it would end at byte 9
    await queue.log(id, 'ab€€'); // € is 3 bytes: exactly 8
    expect((await queue.logs(id)).lines).toEqual(['abcdefgh', 'abcdefg', 'ab€€']);
  });

  it('refuses a line that is not a string, and changes nothing', async () => {
    const { queue } = await setup(backend);
    const id = await queue.submit('t', 'p');
    await queue.log(id, 'kept');
    for (const line of [undefined, null, 5, { text: 'x' }]) {
      await expectNoChange(queue, [id], () => queue.log(id, bad(line)), InvalidArgumentError, 'ERR_INVALID_ARGUMENT');
    }
    expect(await queue.logs(id)).toEqual({ lines: ['kept'], dropped: 0 });
  });

  it('refuses an unknown job, to log and to read', async () => {
    const { queue } = await setup(backend);
    const id = await queue.submit('t', 'p');
    await expectNoChange(queue, [id], () => queue.log('J99', 'x'), JobNotFoundError, 'ERR_JOB_NOT_FOUND');
    await expectError(() => queue.logs('J99'), JobNotFoundError, 'ERR_JOB_NOT_FOUND');
    await expectError(() => queue.logs('nope'), JobNotFoundError, 'ERR_JOB_NOT_FOUND');
  });

  it('lets a removed job\'s log go with it', async () => {
    const { queue } = await setup(backend);
    const id = await queue.submit('t', 'p');
    await queue.log(id, 'x');
    await queue.remove(id);
    await expectError(() => queue.logs(id), JobNotFoundError, 'ERR_JOB_NOT_FOUND');
  });

  it('refuses log limits that are not integers in range', async () => {
    for (const options of [{ maxLogLines: 0 }, { maxLogLines: 1.5 }, { maxLogLineBytes: 0 }, { maxLogLineBytes: bad('8') }]) {
      await expectError(() => setup(backend, { options }), InvalidArgumentError, 'ERR_INVALID_ARGUMENT');
    }
  });
});
