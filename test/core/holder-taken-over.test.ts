/**
 * A lock holder taken for dead after its own move was decided (stalled past
 * lockTimeoutMillis between the move's CAS and filing the job) has made that
 * move: its call reports it, rather than starting again and being refused by
 * its own move (a fail refused as stale; a completeAndPoll taken over in its
 * poll, refused by its own complete) or making it twice (a submit; the jobs
 * of a submitMany placed before the takeover). The
 * job is filed by the rebuild its release asks for. threads.test.ts "stays
 * correct when a live thread stalls" found the fail case, rarely.
 *
 * Here the takeover is made to happen at that very point: the holder's first
 * filing after its move first lets another instance take the lock over (it
 * waits out the queue's patience, as any waiter does, and then holds it).
 */
import { describe, expect, it } from 'vitest';
import { JobQueue, ManualClock, RetryPolicy } from '../../dist/index.js';
import { ATTENTION, GATE, HINTS_STALE, QueueMemory, REBUILDS, beforeFilings, beforeReadyFilings, maintenanceOf, type FilingStep } from '../../dist/testing/core-internals.js';

const START = 1_767_225_600_000;
const BACKOFF = 1_000;

/** A queue shared (so that its lock is a real word), and a second instance on its memory to take the lock over. */
function sharedQueue(options: { retain?: { maxFinished: number } } = {}, backoff = BACKOFF) {
  const clock = new ManualClock(START);
  const queue = new JobQueue(clock, new RetryPolicy(3, backoff, backoff), { lockTimeoutMillis: 20, ...options });
  const taker = new QueueMemory(queue.share().buffers, 20);
  return { clock, queue, taker };
}

/**
 * During `call`, the holder's first filing step `step` after its move (`file`:
 * a job filed; `push`: an entry pushed onto a heap) is preceded by `taker`
 * taking the lock over; true if it was. Then `taker` lets it go.
 */
function takenOverAtFirst(step: FilingStep, taker: QueueMemory, call: () => unknown): boolean {
  let takenOver = false;
  try {
    beforeFilings(step, () => {
      if (!takenOver) takenOver = taker.lock.acquire();
    }, call);
  } finally {
    if (takenOver) taker.lock.release();
  }
  return takenOver;
}

describe('a holder taken for dead after its move was decided', () => {
  it('reports its fail, and the job retries after its backoff, once', () => {
    const { clock, queue, taker } = sharedQueue();
    const id = queue.submit('t', 'p');
    const lease = queue.poll('w', 60_000)!;
    expect(takenOverAtFirst('file', taker, () => queue.fail(id, lease.token, 'boom'))).toBe(true);
    expect(queue.view(id)).toMatchObject({ status: 'PENDING', attempts: 1, lastError: 'boom', nextRunAt: START + BACKOFF });
    expect(queue.poll('w', 60_000)).toBeUndefined();
    clock.advance(BACKOFF);
    const again = queue.poll('w', 60_000)!;
    expect(again).toMatchObject({ jobId: id, attempt: 2 });
    expect(again.token).toBeGreaterThan(lease.token);
    queue.complete(id, again.token);
    expect(queue.stats()).toMatchObject({ pending: 0, running: 0, succeeded: 1 });
    queue.close();
  });

  it('returns the id of its submit, and the queue holds that one job', () => {
    const { clock, queue, taker } = sharedQueue();
    let id = '';
    // A delayed job: filing it pushes onto the delayed heap, which looks at the lock.
    expect(takenOverAtFirst('file', taker, () => (id = queue.submit('t', 'p', { delayMillis: 500 })))).toBe(true);
    expect(id).toBe('J1');
    expect(queue.stats()).toMatchObject({ pending: 1, delayed: 1 });
    clock.advance(500);
    expect(queue.poll('w', 60_000)).toMatchObject({ jobId: 'J1', attempt: 1, payload: 'p' });
    expect(queue.poll('w', 60_000)).toBeUndefined();
    expect(queue.stats()).toMatchObject({ pending: 0, running: 1 });
    queue.close();
  });

  it('places each job of its submitMany once, going on after the takeover from the job it had not placed', () => {
    const { queue, taker } = sharedQueue();
    let ids: string[] = [];
    const jobs = ['a', 'b', 'c'].map((payload) => ({ type: 't', payload }));
    expect(takenOverAtFirst('file', taker, () => (ids = queue.submitMany(jobs)))).toBe(true);
    expect(ids).toEqual(['J1', 'J2', 'J3']);
    expect(queue.stats()).toMatchObject({ pending: 3, ready: 3 });
    const leased = [queue.poll('w', 60_000), queue.poll('w', 60_000), queue.poll('w', 60_000)].map((l) => [l?.jobId, l?.payload]);
    expect(leased).toEqual([['J1', 'a'], ['J2', 'b'], ['J3', 'c']]);
    expect(queue.poll('w', 60_000)).toBeUndefined();
    queue.close();
  });

  it('gives a key repeated in its submitMany the id of the first job with it, placed after the takeover', () => {
    const { queue, taker } = sharedQueue();
    let ids: string[] = [];
    const jobs = [{ type: 't', payload: 'a' }, { type: 't', payload: 'b', key: 'k' }, { type: 't', payload: 'c', key: 'k' }];
    expect(takenOverAtFirst('file', taker, () => (ids = queue.submitMany(jobs)))).toBe(true);
    expect(ids).toEqual(['J1', 'J2', 'J2']);
    expect(queue.stats()).toMatchObject({ pending: 2 });
    queue.close();
  });

  it("reports its completeAndPoll's complete, and polls anew, when taken over in the poll after it", () => {
    const { queue, taker } = sharedQueue();
    queue.setRateLimit('t', { max: 1, windowMillis: 60_000 });
    const first = queue.submit('t', 'a');
    const second = queue.submit('t', 'b');
    const lease = queue.poll('w', 60_000)!;
    let next: unknown = 'not returned';
    // The poll after the complete holds the second job, its type's window used up: that pushes it onto the held heap.
    expect(takenOverAtFirst('push', taker, () => (next = queue.completeAndPoll(first, lease.token, 'w', 60_000)))).toBe(true);
    expect(next).toBeUndefined();
    expect(queue.view(first)).toMatchObject({ status: 'SUCCEEDED' });
    expect(queue.view(second)).toMatchObject({ status: 'PENDING', attempts: 0 });
    expect(queue.stats()).toMatchObject({ succeeded: 1, pending: 1, running: 0 });
    queue.close();
  });

  it('shuts the gate as it lets go, so that the next call, lock-free as it would be, first rebuilds the hints it may have written over', () => {
    const { clock, queue, taker } = sharedQueue();
    const [a, b] = [queue.submit('t', 'a'), queue.submit('t', 'b')];
    const lease = queue.poll('w', 60_000)!;
    expect(takenOverAtFirst('file', taker, () => queue.fail(a, lease.token, 'boom'))).toBe(true);
    const gateShut = () => (Atomics.load(taker.lockWords, ATTENTION) & GATE) !== 0;
    expect(gateShut()).toBe(true);
    const rebuilds = taker.header[REBUILDS]!;
    // A poll on this instance's own row, nothing due: lock-free, but for the gate.
    expect(queue.poll('w', 60_000)).toMatchObject({ jobId: b, attempt: 1 });
    expect(taker.header[REBUILDS]).toBe(rebuilds + 1);
    expect(gateShut()).toBe(false);
    clock.advance(BACKOFF);
    expect(queue.poll('w', 60_000)).toMatchObject({ jobId: a, attempt: 2 });
    queue.close();
  });

  it('keeps the gate shut past a rebuild its taker made before it let go: the next holder rebuilds again, then opens it', () => {
    const { clock, queue, taker } = sharedQueue();
    const [a, b] = [queue.submit('t', 'a'), queue.submit('t', 'b')];
    const lease = queue.poll('w', 60_000)!;
    const attention = () => Atomics.load(taker.lockWords, ATTENTION) & (GATE | HINTS_STALE);
    let rebuilds = 0;
    // The taker holds the lock while the stalled holder lets go, and rebuilds after it (its scan may predate
    // writes of the stalled holder's, in a real race): the mark of the late release outlives that rebuild.
    const taken = takenOverAtFirst('file', taker, () => {
      queue.fail(a, lease.token, 'boom');
      expect(attention()).toBe(GATE | HINTS_STALE);
      rebuilds = taker.header[REBUILDS]!;
      maintenanceOf(taker, new RetryPolicy(3, BACKOFF, BACKOFF), clock).rebuild(clock.now());
      expect(taker.header[REBUILDS]).toBe(rebuilds + 1);
      expect(attention(), 'the gate stays shut, the mark set, for the next holder').toBe(GATE | HINTS_STALE);
    });
    expect(taken).toBe(true);
    expect(queue.poll('w', 60_000)).toMatchObject({ jobId: b, attempt: 1 });
    expect(taker.header[REBUILDS]).toBe(rebuilds + 2);
    expect(attention()).toBe(0);
    queue.close();
  });

  it('leaves the rebuild it was asked for to the next holder when its clock throws before it could make it', () => {
    let broken = false;
    const time = {
      now: () => {
        if (broken) throw new Error('the clock broke');
        return START;
      },
    };
    const queue = new JobQueue(time, new RetryPolicy(3, BACKOFF, BACKOFF), { lockTimeoutMillis: 20 });
    const taker = new QueueMemory(queue.share().buffers, 20);
    const id = queue.submit('t', 'a');
    const attention = () => Atomics.load(taker.lockWords, ATTENTION) & (GATE | HINTS_STALE);
    // As a stalled holder leaves it on release: the next holder must rebuild, and only then opens the gate.
    Atomics.or(taker.lockWords, ATTENTION, GATE | HINTS_STALE);
    const rebuilds = taker.header[REBUILDS]!;
    broken = true;
    expect(() => queue.submit('t', 'b')).toThrow(/TimeSource .*threw: the clock broke/);
    expect(attention(), 'still owed').toBe(GATE | HINTS_STALE);
    expect(taker.header[REBUILDS]).toBe(rebuilds);
    broken = false;
    expect(queue.poll('w', 60_000)).toMatchObject({ jobId: id, attempt: 1 });
    expect(taker.header[REBUILDS]).toBe(rebuilds + 1);
    expect(attention()).toBe(0);
    expect(queue.stats()).toMatchObject({ pending: 0, running: 1 });
    queue.close();
  });

  it('files no ready job once its lock is gone, and the next holder rebuilds and finds it', () => {
    // No backoff: the failed job is READY at once, and filing it appends to a ready ring.
    const { queue, taker } = sharedQueue({}, 0);
    const id = queue.submit('t', 'p');
    const lease = queue.poll('w', 60_000)!;
    const appended: number[] = [];
    const takenOver = beforeReadyFilings((slot) => appended.push(slot), () => takenOverAtFirst('file', taker, () => queue.fail(id, lease.token, 'boom')));
    expect(takenOver).toBe(true);
    expect(appended, 'ring appends by the holder taken over').toEqual([]);
    const rebuilds = taker.header[REBUILDS]!;
    expect(queue.poll('w', 60_000)).toMatchObject({ jobId: id, attempt: 2 });
    expect(taker.header[REBUILDS]).toBe(rebuilds + 1);
    queue.close();
  });

  it('reports its cancel, and the job stays cancelled', () => {
    // With a retention limit the finished jobs are kept in eviction order: filing one pushes onto a heap.
    const { queue, taker } = sharedQueue({ retain: { maxFinished: 10 } });
    const id = queue.submit('t', 'p', { delayMillis: 500 });
    expect(takenOverAtFirst('file', taker, () => queue.cancel(id))).toBe(true);
    expect(queue.view(id)).toMatchObject({ status: 'CANCELLED' });
    expect(queue.stats()).toMatchObject({ pending: 0, cancelled: 1 });
    queue.close();
  });
});
