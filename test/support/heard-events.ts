/**
 * What the tests of `queue.events()` share on every backend: the mix of jobs
 * they submit (payload `ok`, `once`, `never`: the mover fixtures complete,
 * fail once, or always fail each; maxAttempts 2, no backoff), the events each
 * kind must be heard of in order, and a recorder of what a subscription hears.
 */
import { expect } from 'vitest';
import type { MissedEvent, QueueEvents } from '../../dist/index.js';

const NAMES = ['completed', 'failed', 'retrying', 'dead', 'stalled', 'cancelled'] as const;

/** What each payload's job must be heard of, in order, as `name:attempt[:error]`. */
export const EXPECTED: Record<string, string[]> = {
  ok: ['completed:1'],
  once: ['failed:1:boom 1', 'retrying:1:boom 1', 'completed:2'],
  never: ['failed:1:boom 1', 'retrying:1:boom 1', 'failed:2:boom 2', 'dead:2:boom 2'],
  // A job cancelled while PENDING, never leased: a test's last move.
  fence: ['cancelled:0'],
};

export interface Heard {
  byJob: Map<string, string[]>;
  total: () => number;
  missed: MissedEvent[];
}

/** Records every job event by job, as `name:attempt[:error]`, and every missed count. */
export function hear(events: QueueEvents): Heard {
  const byJob = new Map<string, string[]>();
  let total = 0;
  for (const name of NAMES) {
    events.on(name, (event) => {
      total++;
      const line = event.error === undefined ? `${name}:${event.attempt}` : `${name}:${event.attempt}:${event.error}`;
      byJob.set(event.jobId, [...(byJob.get(event.jobId) ?? []), line]);
    });
  }
  const missed: MissedEvent[] = [];
  events.on('missed', (event) => missed.push(event));
  return { byJob, total: () => total, missed };
}

/** Submits `count` jobs of type `t`, the kinds in turn: their payloads by id. */
export async function submitMix(queue: { submit(type: string, payload: string): string | Promise<string> }, count: number): Promise<Map<string, string>> {
  const payloads = new Map<string, string>();
  const kinds = ['ok', 'once', 'never'];
  for (let i = 0; i < count; i++) {
    const payload = kinds[i % 3]!;
    payloads.set(await queue.submit('t', payload), payload);
  }
  return payloads;
}

/** How many events the jobs of `payloads` make in all. */
export function expectedTotal(payloads: Map<string, string>): number {
  return [...payloads.values()].reduce((sum, payload) => sum + EXPECTED[payload]!.length, 0);
}

/** Every job heard of exactly as it must be, nothing else heard, nothing missed. */
export function expectEveryJob(heard: { byJob: Map<string, string[]>; missed: unknown[] }, payloads: Map<string, string>): void {
  for (const [id, payload] of payloads) expect(heard.byJob.get(id), `${id} (${payload})`).toEqual(EXPECTED[payload]);
  expect([...heard.byJob.keys()].filter((id) => !payloads.has(id))).toEqual([]);
  expect(heard.missed).toEqual([]);
}
