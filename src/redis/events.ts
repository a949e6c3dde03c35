/**
 * A subscription's reader of one Redis queue's event stream (K.events, written by the
 * scripts: lua/includes/events.lua). It reads on a connection of its own, with
 * XREAD BLOCK, from the last entry it handed on; a connection that drops is
 * made again by ioredis and the reader goes on from there, so a reconnect
 * loses nothing the stream still holds. Each entry carries the queue's event
 * sequence number (`q`): a gap between two entries it reads, or between the
 * position it resumed from and the first entry, is what MAXLEN trimmed before
 * the reader got there, and it reports that count as `missed`.
 *
 * The position it reports is `<stream id>/<sequence number>` of the last entry handed on.
 */
import { jobIdOf } from '../job-id.js';
import type { EventSink, EventSource, MoveKind } from '../events/queue-events.js';
import { MOVE_KINDS } from '../events/queue-events.js';
import { backendError, connectClient, duplicateClient, userOf, type RedisClient } from './connection.js';
import type { QueueKeys } from './keys.js';

/** Entries one XREAD returns at most. */
const READ_BATCH = 512;
/** How long one XREAD blocks at most, in ms (under the connection's command timeout, which a blocked read must not reach). */
const MAX_BLOCK_MILLIS = 5_000;

/**
 * How long the queue's events stay on after a subscriber's last renewal (Redis's clock), and how often a reader
 * renews them: a queue whose subscribers all went away, closed or not, stops writing events that long after.
 */
export const EVENTS_WATCH_MILLIS = 60_000;
const RENEW_MILLIS = 10_000;
/** Turns events on with bound ARGV[1] until Redis's now + ARGV[2] ms; replies 1 if they were on already, else 0. */
const RENEW = `local was = redis.call('HGET', KEYS[1], 'events')
local t = redis.call('TIME')
redis.call('HSET', KEYS[1], 'events', ARGV[1], 'eventsUntil', string.format('%d', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(ARGV[2])))
if was then return 1 end
return 0`;

/** How long a reader waits before it reads again after Redis refused a read on a live connection. */
const RETRY_MILLIS = 1_000;

type StreamReply = Array<[stream: string, entries: Array<[id: string, fields: string[]]>]> | null;

export class RedisEventReader implements EventSource {
  readonly #connection: RedisClient;
  readonly #stream: string;
  readonly #sink: EventSink;
  readonly #partition: number;
  readonly #blockMillis: number;
  readonly #where: string;
  readonly #state: string;
  readonly #maxLen: number;
  #lastId: string;
  #lastSeq: number;
  /** When (this process's monotonic clock) this reader last renewed the queue's events; NaN: never. */
  #renewedAt = NaN;
  /** A renewal found events off: the next read tells the subscription (`missed`, Infinity). */
  #unrecorded = false;
  #closed = false;
  /** Reads failed in a row. */
  #failures = 0;
  /** Wakes a reader waiting for its connection to come back, when closing. */
  #wakeWaiter: (() => void) | undefined;
  #running: Promise<void> = Promise.resolve();

  private constructor(
    connection: RedisClient, keys: QueueKeys, sink: EventSink, partition: number, blockMillis: number, where: string, lastId: string, lastSeq: number, maxLen: number,
  ) {
    this.#connection = connection;
    this.#state = keys.named.state;
    this.#maxLen = maxLen;
    this.#stream = keys.named.events;
    this.#sink = sink;
    this.#partition = partition;
    this.#blockMillis = blockMillis;
    this.#where = where;
    this.#lastId = lastId;
    this.#lastSeq = lastSeq;
  }

  /**
   * Turns events on for the queue (its stream bound `maxLen`) and starts reading: after
   * `after` (a position), or else after the stream's last entry as events are turned on,
   * so that every move made after this resolves is read.
   */
  static async open(
    client: RedisClient, keys: QueueKeys, sink: EventSink,
    { partition, maxLen, after, commandTimeoutMillis, where }: { partition: number; maxLen: number; after: string | undefined; commandTimeoutMillis: number; where: string },
  ): Promise<RedisEventReader> {
    const connection = duplicateClient(client);
    try {
      await connectClient(connection, where, userOf(client));
      let lastId: string;
      let lastSeq: number;
      if (after !== undefined) {
        [lastId, lastSeq] = parsePosition(after);
      } else {
        // One transaction: the stream's last entry and its sequence number as they are when events go on (a script runs
        // before or after it, never between), so that the reader starts exactly there.
        const replies = await connection.multi()
          .hget(keys.named.state, 'eventSeq')
          .xrevrange(keys.named.events, '+', '-', 'COUNT', 1)
          // On, with no lapse until the renewal below sets one (a lapsed one left by earlier subscribers would turn them off).
          .hdel(keys.named.state, 'eventsUntil')
          .hset(keys.named.state, 'events', maxLen)
          .exec();
        const failure = replies?.find(([error]) => error !== null)?.[0];
        if (replies === null || failure) throw failure ?? new Error('transaction aborted');
        const last = replies[1]![1] as Array<[string, string[]]>;
        lastId = last.length === 0 ? '0-0' : last[0]![0];
        lastSeq = Number(replies[0]![1] ?? 0);
      }
      const blockMillis = Math.max(1, Math.min(MAX_BLOCK_MILLIS, Math.floor(commandTimeoutMillis / 2)));
      const reader = new RedisEventReader(connection, keys, sink, partition, blockMillis, where, lastId, lastSeq, maxLen);
      // Resumed from a position while events were off: moves made since it may have gone unrecorded.
      await reader.#renew(after !== undefined);
      reader.#running = reader.#run();
      return reader;
    } catch (error) {
      connection.disconnect();
      throw backendError(error, where);
    }
  }

  position(): string {
    return `${this.#lastId}/${this.#lastSeq}`;
  }

  async close(): Promise<void> {
    if (this.#closed) return this.#running;
    this.#closed = true;
    this.#wakeWaiter?.();
    // A blocked XREAD holds the connection: end it at once (its pending read rejects, and the loop ends).
    this.#connection.disconnect();
    return this.#running;
  }

  async #run(): Promise<void> {
    while (!this.#closed) {
      let reply: StreamReply;
      try {
        reply = (await this.#connection.xread('COUNT', READ_BATCH, 'BLOCK', this.#blockMillis, 'STREAMS', this.#stream, this.#lastId)) as StreamReply;
        this.#failures = 0;
      } catch (error) {
        if (this.#closed) return;
        this.#failures++;
        this.#sink.failed(backendError(error, this.#where));
        await this.#connectionBack();
        continue;
      }
      if (this.#unrecorded && !this.#closed) {
        this.#unrecorded = false;
        this.#sink.missed(Infinity, this.#partition);
      }
      if (reply !== null && !this.#closed) for (const [id, fields] of reply[0]![1]) this.#hand(id, fields);
      if (!this.#closed && !(performance.now() - this.#renewedAt < RENEW_MILLIS)) {
        try {
          await this.#renew();
        } catch (error) {
          if (!this.#closed) this.#sink.failed(backendError(error, this.#where));
        }
      }
    }
  }

  /**
   * Keeps the queue's events on for EVENTS_WATCH_MILLIS more. A renewal that finds them off (not the
   * first, unless it resumes from a position: they lapsed while this reader could not renew, its process
   * stalled, or someone disabled them) tells its subscription that an unknown number of moves went
   * unrecorded: `missed` with count Infinity.
   */
  async #renew(resumed = false): Promise<void> {
    const first = Number.isNaN(this.#renewedAt);
    const wasOn = await this.#connection.eval(RENEW, 1, this.#state, this.#maxLen, EVENTS_WATCH_MILLIS);
    this.#renewedAt = performance.now();
    // Told with the next read's events, not now: the subscription being opened has no listener yet.
    if (wasOn === 0 && (!first || resumed)) this.#unrecorded = true;
  }

  /** Hands one entry on, after the count of any it skipped over. */
  #hand(id: string, fields: string[]): void {
    const entry = new Map<string, string>();
    for (let i = 0; i < fields.length; i += 2) entry.set(fields[i]!, fields[i + 1]!);
    const seq = Number(entry.get('q'));
    this.#lastId = id;
    if (seq <= this.#lastSeq) return;
    if (seq > this.#lastSeq + 1) this.#sink.missed(seq - this.#lastSeq - 1, this.#partition);
    this.#lastSeq = seq;
    const kind = entry.get('k') as MoveKind;
    if (!MOVE_KINDS.includes(kind)) return;
    const error = entry.get('e');
    const jobId = jobIdOf(Number(entry.get('n')));
    const type = entry.get('t') ?? '';
    const attempt = Number(entry.get('a'));
    const waitMillis = Number(entry.get('w'));
    const durationMs = Number(entry.get('d'));
    this.#sink.move(kind, error === undefined ? { jobId, type, attempt, waitMillis, durationMs } : { jobId, type, attempt, waitMillis, durationMs, error }, entry.get('s') === '1');
  }

  /**
   * Resolves once the connection is ready again (ioredis reconnects it), or the reader closes; on a
   * connection that is ready, at once after a first failure, then after RETRY_MILLIS (Redis refuses the
   * read), so a refusal does not spin.
   */
  #connectionBack(): Promise<void> {
    const ready = this.#connection.status === 'ready';
    // Back already (ioredis reconnected before the failed read was reported): read again at once, the first time.
    if (ready && this.#failures === 1) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = ready ? setTimeout(() => done(), RETRY_MILLIS) : undefined;
      const done = () => {
        clearTimeout(timer);
        this.#connection.off('ready', done);
        this.#wakeWaiter = undefined;
        resolve();
      };
      this.#wakeWaiter = done;
      if (!ready) this.#connection.on('ready', done);
    });
  }
}

function parsePosition(position: string): [id: string, seq: number] {
  const [id, seq] = position.split('/');
  return [id!, Number(seq)];
}
