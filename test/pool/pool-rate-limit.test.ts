/**
 * A WorkerPool on a queue with a rate limit: its threads hand out no more
 * jobs of the limited type per window than the limit, other types run
 * meanwhile, and idle threads wake as the window opens.
 */
import { describe, expect, it } from 'vitest';
import { JobQueue, RetryPolicy, WorkerPool, systemClock } from '../../dist/index.js';
import { HANDLERS, scratch, track, trackQueue } from '../support/pool-harness.js';

const MAX = 2;
const WINDOW = 250;
const LIMITED = 8;

describe('WorkerPool with a rate-limited type', () => {
  it('starts at most max jobs of the type per window, and drains the rest as the windows open', async () => {
    const s = scratch();
    const queue = trackQueue(new JobQueue(systemClock, new RetryPolicy(3, 0, 0)));
    queue.setRateLimit('noop', { max: MAX, windowMillis: WINDOW });
    const firstWindow = Math.floor(Date.now() / WINDOW);
    const limited = Array.from({ length: LIMITED }, (_, n) => queue.submit('noop', s.payload({ n })));
    const others = Array.from({ length: 4 }, () => queue.submit('echo', s.payload()));
    const pool = track(new WorkerPool(queue, { handlers: HANDLERS, threads: 2, concurrency: 2, leaseMillis: 10_000 }));
    await pool.start();
    await pool.drain();
    expect([...limited, ...others].map((id) => queue.view(id).status)).toEqual([...limited, ...others].map(() => 'SUCCEEDED'));
    // A handler starts after its lease, in the lease's window or later: so by the end of window k at most
    // MAX × (k - firstWindow + 1) of them can have started.
    const windows = s.events('ok').filter((line) => line.type === 'noop').map((line) => Math.floor(line.t / WINDOW)).sort((a, b) => a - b);
    expect(windows).toHaveLength(LIMITED);
    windows.forEach((window, i) => expect(i + 1, `start ${i + 1}, window ${window - firstWindow}`).toBeLessThanOrEqual(MAX * (window - firstWindow + 1)));
    await pool.close();
  });
});
