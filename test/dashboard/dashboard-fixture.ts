/**
 * A queue with one job in every status the dashboard shows (and a
 * cancelled one, which it has no tab for), made through the public calls.
 */
import type { ManualClock } from '../../dist/index.js';
import type { ContractQueue } from '../support/backends.js';
import { mustPoll } from '../support/helpers.js';

export interface EveryStatus {
  succeeded: string;
  dead: string;
  running: string;
  cancelled: string;
  delayed: string;
  ready: string;
}

/** How far in the future the delayed job runs. */
export const DELAY_MILLIS = 60_000;

/** One job per status, each leased (when it is) while it is the only ready job, so the poll takes it. */
export async function fillEveryStatus(queue: ContractQueue, clock: ManualClock): Promise<EveryStatus> {
  const succeeded = await queue.submit('resize', JSON.stringify({ file: 'a.png', width: 64 }));
  const done = await mustPoll(queue, succeeded, 60_000, 'worker-1');
  await queue.complete(done.jobId, done.token, { thumbnail: 'a-64.png', bytes: 1234 });
  const dead = await queue.submit('parse', '{oops', { maxAttempts: 1 });
  const failed = await mustPoll(queue, dead, 60_000, 'worker-2');
  await queue.fail(failed.jobId, failed.token, 'cannot parse {oops: unexpected end of input');
  const running = await queue.submit('upload', JSON.stringify({ file: 'c.png' }), { priority: 5 });
  await mustPoll(queue, running, 60_000, 'worker-3');
  const cancelled = await queue.submit('email', 'to: ops@example.com');
  await queue.cancel(cancelled);
  const delayed = await queue.submit('email', 'to: dev@example.com', { runAt: clock.now() + DELAY_MILLIS });
  const ready = await queue.submit('resize', JSON.stringify({ file: 'b.png', width: 32 }));
  return { succeeded, dead, running, cancelled, delayed, ready };
}
