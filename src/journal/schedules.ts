import type Database from 'better-sqlite3';
import type { ScheduleStore } from '../schedule/store.js';
import type { StoredSchedule } from '../schedule/spec.js';
import { JournalCorruptError } from '../errors.js';
import { storedSpec } from '../validate/schedule.js';
import { guarded } from './failures.js';

interface ScheduleRow {
  name: string;
  spec: string;
  next_tick: number | null;
}

/**
 * A journaled queue's schedules: the `schedules` table, through one thread's
 * connection. Each call is one statement, so SQLite makes it atomic across
 * the threads of the owning process; `advance` is an UPDATE conditioned on
 * the next tick it read. A write commits at once (and survives a crash).
 */
export class JournalSchedules implements ScheduleStore {
  readonly #path: string;
  readonly #put: Database.Statement;
  readonly #remove: Database.Statement;
  readonly #all: Database.Statement;
  readonly #due: Database.Statement;
  readonly #advance: Database.Statement;

  constructor(db: Database.Database, path: string) {
    this.#path = path;
    this.#put = db.prepare(
      'INSERT INTO schedules (name, spec, next_tick) VALUES (?, ?, ?) ON CONFLICT (name) DO UPDATE SET spec = excluded.spec, next_tick = excluded.next_tick',
    );
    this.#remove = db.prepare('DELETE FROM schedules WHERE name = ?');
    this.#all = db.prepare('SELECT name, spec, next_tick FROM schedules ORDER BY name');
    this.#due = db.prepare('SELECT name, spec, next_tick FROM schedules WHERE next_tick <= ? ORDER BY name');
    this.#advance = db.prepare('UPDATE schedules SET next_tick = ? WHERE name = ? AND next_tick = ?');
  }

  put(schedule: StoredSchedule): void {
    guarded(this.#path, 'write to', () => this.#put.run(schedule.name, JSON.stringify(schedule.spec), schedule.nextTick));
  }

  remove(name: string): boolean {
    return guarded(this.#path, 'write to', () => this.#remove.run(name).changes === 1);
  }

  all(): StoredSchedule[] {
    return guarded(this.#path, 'read', () => this.#all.all() as ScheduleRow[]).map((row) => this.#fromRow(row));
  }

  due(now: number): StoredSchedule[] {
    return guarded(this.#path, 'read', () => this.#due.all(now) as ScheduleRow[]).map((row) => this.#fromRow(row));
  }

  advance(name: string, from: number, to: number | null): boolean {
    return guarded(this.#path, 'write to', () => this.#advance.run(to, name, from).changes === 1);
  }

  /** A row as a schedule; a row no `schedule` call could have written makes the journal corrupt. */
  #fromRow(row: ScheduleRow): StoredSchedule {
    const spec = storedSpec(row.spec);
    const tick = row.next_tick;
    if (spec === undefined || typeof row.name !== 'string' || !(tick === null || Number.isFinite(tick))) {
      throw new JournalCorruptError(`The journal ${this.#path} has a damaged schedule row ${JSON.stringify(row.name)}: not a schedule that schedule() makes`);
    }
    return { name: row.name, spec, nextTick: tick };
  }
}
