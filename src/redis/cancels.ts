/**
 * What tells a worker loop on Redis that a RUNNING job was cancelled, from
 * any client in any process: cancel.lua publishes the job's number on the
 * queue's `cancels` channel, and the client's subscribed connection
 * (subscriber.ts) hands it to every watch of this client. Only cancels of
 * RUNNING jobs publish there, so a loop with nothing cancelled hears nothing.
 */
import { jobIdOf } from '../job-id.js';
import type { Subscriber } from './subscriber.js';

export class CancelNotices {
  readonly #subscriber: Subscriber;
  readonly #channel: string;
  readonly #watches = new Set<(jobId?: string) => void>();

  constructor(subscriber: Subscriber, channel: string) {
    this.#subscriber = subscriber;
    this.#channel = channel;
    // A cancel published while the connection was down is lost: every watch is told to look at its jobs.
    subscriber.onReconnect(() => {
      for (const heard of this.#watches) heard();
    });
  }

  /**
   * Calls `heard` with the id of each RUNNING job cancelled from the moment
   * this resolves (subscribed) until the returned function is called; with no
   * id after a reconnect, when some may have been missed.
   */
  async watch(heard: (jobId?: string) => void): Promise<() => void> {
    this.#watches.add(heard);
    try {
      await this.#subscriber.listen(this.#channel, (message) => {
        const jobId = jobIdOf(Number(message));
        for (const watch of this.#watches) watch(jobId);
      });
    } catch (error) {
      this.#watches.delete(heard);
      throw error;
    }
    return () => {
      this.#watches.delete(heard);
    };
  }

  /** No more notices, as the queue closes. */
  close(): void {
    this.#watches.clear();
  }
}
