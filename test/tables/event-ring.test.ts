import { describe, expect, it } from 'vitest';
import { WordAccess } from '../../dist/shm/memory/access.js';
import { EventRing, ReadOutcome, type RingEvent } from '../../dist/shm/tables/event-ring.js';
import {
  EVENT_CLAIM, EVENT_ENTRIES, EVENT_ENTRY_WORDS, EVENT_HEADER_WORDS, EVENT_OPEN, EVENT_SUBSCRIBERS, EVENT_TEXT_BYTES, bufferBytes, initialBytes,
} from '../../dist/shm/memory/layout.js';

/**
 * The event ring (src/shm/tables/event-ring.ts), through its own API, with two views of one
 * buffer as two threads hold them: round trips, text cut to fit, a writer that claimed and has
 * not published, a reader lapped, an entry overwritten under a reader, a dead writer's entry taken
 * over a ring later. Imports the built table from dist/shm, the core's internal seam for its tests.
 */
function ringBuffer(): SharedArrayBuffer {
  const full = bufferBytes(1, 0).eventRing;
  return new SharedArrayBuffer(initialBytes(1, 0, false).eventRing, { maxByteLength: full });
}

function blank(): RingEvent {
  return { kind: -1, jobNum: 0, type: '', attempt: 0, waitMillis: 0, durationMs: 0, error: undefined, stalled: false };
}

function publishJob(ring: EventRing, jobNum: number, error?: string): void {
  ring.publish(1, jobNum, 'email', 2, 1.5, 2 ** 40 + 0.25, error, error !== undefined);
}

describe('event ring', () => {
  it('writes nothing and stays at its header while no one subscribes', () => {
    const buffer = ringBuffer();
    const ring = new EventRing(buffer, new WordAccess());
    const before = buffer.byteLength;
    expect(ring.subscribed()).toBe(false);
    expect(before).toBe(EVENT_HEADER_WORDS * 4);
  });

  it('hands a reader on another view each event whole, numbers exact', () => {
    const buffer = ringBuffer();
    const writer = new EventRing(buffer, new WordAccess());
    const reader = new EventRing(buffer, new WordAccess());
    const start = reader.subscribe();
    expect(writer.subscribed()).toBe(true);
    publishJob(writer, 2 ** 53 - 1, 'boom ✓');
    publishJob(writer, 7);
    const out = blank();
    expect(reader.read(start, out)).toBe(ReadOutcome.Read);
    expect(out).toEqual({ kind: 1, jobNum: 2 ** 53 - 1, type: 'email', attempt: 2, waitMillis: 1.5, durationMs: 2 ** 40 + 0.25, error: 'boom ✓', stalled: true });
    expect(reader.read(start + 1, out)).toBe(ReadOutcome.Read);
    expect(out).toMatchObject({ jobNum: 7, error: undefined, stalled: false });
    expect(reader.read(start + 2, out)).toBe(ReadOutcome.Unpublished);
  });

  it('cuts a long error between two characters to fit the entry, the type whole', () => {
    const buffer = ringBuffer();
    const ring = new EventRing(buffer, new WordAccess());
    const start = ring.subscribe();
    ring.publish(2, 1, 'email', 1, 0, 0, '✓'.repeat(200), false);
    const out = blank();
    expect(ring.read(start, out)).toBe(ReadOutcome.Read);
    expect(out.type).toBe('email');
    // 3 bytes a character: as many whole ones as fit after the type.
    expect(out.error).toBe('✓'.repeat(Math.floor((EVENT_TEXT_BYTES - 5) / 3)));
  });

  it('holds a reader at an event claimed and not yet published', () => {
    const buffer = ringBuffer();
    const ring = new EventRing(buffer, new WordAccess());
    const start = ring.subscribe();
    // A writer that has claimed the next number (and not yet written): CLAIM counts it, the entry does not.
    Atomics.add(new Int32Array(buffer), EVENT_CLAIM, 1);
    expect(ring.claimed()).toBe(start + 1);
    expect(ring.read(start, blank())).toBe(ReadOutcome.Unpublished);
  });

  it('reports an entry a later event overwrote as overwritten, never as the later event', () => {
    const buffer = ringBuffer();
    const ring = new EventRing(buffer, new WordAccess());
    const start = ring.subscribe();
    for (let i = 0; i <= EVENT_ENTRIES; i++) publishJob(ring, i + 1);
    // Event `start` and event `start + EVENT_ENTRIES` share an entry: the later one is there now.
    expect(ring.read(start, blank())).toBe(ReadOutcome.Overwritten);
    const out = blank();
    expect(ring.read(start + EVENT_ENTRIES, out)).toBe(ReadOutcome.Read);
    expect(out.jobNum).toBe(EVENT_ENTRIES + 1);
  });

  it('leaves an entry a writer is still at to it, and takes it over a whole ring later (a dead writer)', () => {
    const buffer = ringBuffer();
    const ring = new EventRing(buffer, new WordAccess());
    const start = ring.subscribe();
    const words = new Int32Array(buffer);
    // A writer that opened the entry of event `start` and died before DONE.
    Atomics.add(words, EVENT_CLAIM, 1);
    Atomics.store(words, EVENT_HEADER_WORDS + (start % EVENT_ENTRIES) * EVENT_ENTRY_WORDS + EVENT_OPEN, start + 1);
    for (let i = 1; i <= EVENT_ENTRIES; i++) publishJob(ring, i);
    // One ring later: the entry is still the dead writer's, so that event was left (lost).
    expect(ring.read(start + EVENT_ENTRIES, blank())).toBe(ReadOutcome.Unpublished);
    for (let i = 1; i <= EVENT_ENTRIES; i++) publishJob(ring, EVENT_ENTRIES + i);
    const out = blank();
    expect(ring.read(start + 2 * EVENT_ENTRIES, out)).toBe(ReadOutcome.Read);
    expect(out.jobNum).toBe(2 * EVENT_ENTRIES);
  });

  it('counts subscribers in and out', () => {
    const buffer = ringBuffer();
    const ring = new EventRing(buffer, new WordAccess());
    ring.subscribe();
    ring.subscribe();
    ring.unsubscribe();
    expect(Atomics.load(new Int32Array(buffer), EVENT_SUBSCRIBERS)).toBe(1);
    ring.unsubscribe();
    expect(ring.subscribed()).toBe(false);
  });
});
