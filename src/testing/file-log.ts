/**
 * A history log in a file, for a recorder in a process of its own: each
 * record is one line of JSON appended with a synchronous write, so a process
 * killed at any instant leaves every record it finished (the operating
 * system keeps what was written; a crash of the machine is another matter),
 * and at most one cut-off last line, which reading skips. Stamps must come
 * from a clock every process shares (`connectRedisStamps`); the histories of
 * the processes are then joined with `mergeHistories`.
 *
 *   {"k":"i","s":<seq>,"t":<stamp>,"b":<call's arguments>}   invoked
 *   {"k":"r","s":<seq>,"t":<stamp>,"b":<its result>}          returned
 */
import { closeSync, openSync, readFileSync, writeSync } from 'node:fs';
import { NO_RESPONSE, type Call, type CallArgs, type Result } from './history.js';
import { CallRecorder } from './recorder.js';
import type { StampSource } from './stamps.js';

export class HistoryFile {
  readonly #fd: number;
  readonly recorder: CallRecorder;

  private constructor(path: string, thread: number, stamps: StampSource) {
    this.#fd = openSync(path, 'a');
    this.recorder = new CallRecorder(thread, stamps, (kind, seq, stamp, body) => {
      writeSync(this.#fd, `${JSON.stringify({ k: kind === 'invoked' ? 'i' : 'r', s: seq, t: stamp, b: body })}\n`);
    });
  }

  /** Appends to the file at `path` (made if missing): the calls of `recorder` carry thread number `thread`. */
  static open(path: string, thread: number, stamps: StampSource): HistoryFile {
    return new HistoryFile(path, thread, stamps);
  }

  close(): void {
    closeSync(this.#fd);
  }

  /** The calls recorded in the file at `path`, as thread `thread`; a call without its response is pending. */
  static read(path: string, thread = 0): Call[] {
    const bySeq = new Map<number, Call>();
    for (const line of readFileSync(path, 'utf8').split('\n')) {
      let record: { k: string; s: number; t: number; b: unknown };
      try {
        record = JSON.parse(line) as typeof record;
      } catch {
        // An empty line, or the cut-off last one of a process killed mid-write.
        continue;
      }
      if (record.k === 'i') {
        bySeq.set(record.s, { thread, call: record.b as CallArgs, inv: record.t, resp: Number.POSITIVE_INFINITY, result: { ok: false, code: NO_RESPONSE }, pending: true });
      } else {
        const call = bySeq.get(record.s);
        if (call !== undefined) {
          call.resp = record.t;
          call.result = record.b as Result;
          delete call.pending;
        }
      }
    }
    return [...bySeq.values()].sort((a, b) => a.inv - b.inv);
  }
}
