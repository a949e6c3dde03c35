import { expect, it } from 'vitest';
import { describeEachBackend } from '../support/backends.js';
import { expectIllegalState, mustPoll, setup } from '../support/helpers.js';

describeEachBackend('pause and resume', (backend) => {
  it('leases nothing while paused, and the same jobs once resumed', async () => {
    const { queue } = await setup(backend);
    const first = await queue.submit('t', 'a');
    expect([await queue.isPaused(), (await queue.stats()).paused]).toEqual([false, false]);
    await queue.pause();
    expect([await queue.isPaused(), (await queue.stats()).paused]).toEqual([true, true]);
    expect(await queue.poll('w1', 1_000)).toBeUndefined();
    // Submits are accepted while paused; the jobs wait.
    const second = await queue.submit('t', 'b');
    expect(await queue.poll('w1', 1_000)).toBeUndefined();
    const stats = await queue.stats();
    expect([stats.pending, stats.ready, stats.running]).toEqual([2, 2, 0]);
    expect((await queue.view(first)).status).toBe('PENDING');
    await queue.resume();
    expect([await queue.isPaused(), (await queue.stats()).paused]).toEqual([false, false]);
    expect((await mustPoll(queue)).jobId).toBe(first);
    expect((await mustPoll(queue)).jobId).toBe(second);
  });

  it('lets RUNNING jobs finish: complete, fail, extend and release work while paused', async () => {
    const { queue } = await setup(backend, { baseBackoffMillis: 0, maxBackoffMillis: 0 });
    const ids = [await queue.submit('t', 'a'), await queue.submit('t', 'b'), await queue.submit('t', 'c'), await queue.submit('t', 'd')];
    const leases = [];
    for (const id of ids) leases.push(await mustPoll(queue, id));
    await queue.pause();
    const [a, b, c, d] = leases;
    await queue.complete(a!.jobId, a!.token);
    await queue.fail(b!.jobId, b!.token, 'boom');
    expect(await queue.extend(c!.jobId, c!.token, 5_000)).toBeGreaterThan(c!.leaseUntil);
    await queue.release(d!.jobId, d!.token);
    const statuses = [];
    for (const id of ids) statuses.push((await queue.view(id)).status);
    expect(statuses).toEqual(['SUCCEEDED', 'PENDING', 'RUNNING', 'PENDING']);
    // The failed and the released job are ready again, but not handed out while paused.
    expect(await queue.poll('w1', 1_000)).toBeUndefined();
  });

  it('completes in completeAndPoll while paused, and leases nothing there', async () => {
    const { queue } = await setup(backend);
    const first = await queue.submit('t', 'a');
    await queue.submit('t', 'b');
    const lease = await mustPoll(queue, first);
    await queue.pause();
    expect(await queue.completeAndPoll(first, lease.token, 'w1', 1_000)).toBeUndefined();
    expect((await queue.view(first)).status).toBe('SUCCEEDED');
    expect((await queue.stats()).ready).toBe(1);
  });

  it('changes nothing when paused twice or resumed while not paused', async () => {
    const { queue } = await setup(backend);
    const id = await queue.submit('t');
    await queue.resume();
    expect(await queue.isPaused()).toBe(false);
    await queue.pause();
    await queue.pause();
    expect(await queue.isPaused()).toBe(true);
    await queue.resume();
    expect(await queue.isPaused()).toBe(false);
    expect((await mustPoll(queue)).jobId).toBe(id);
  });

  it('refuses pause, resume and isPaused on a closed queue', async () => {
    const { queue } = await setup(backend);
    await queue.close();
    await expectIllegalState(() => queue.pause());
    await expectIllegalState(() => queue.resume());
    await expectIllegalState(() => queue.isPaused());
  });
});
