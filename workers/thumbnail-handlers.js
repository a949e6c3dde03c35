// @ts-check
/**
 * The demo's handler module (`leasehold demo`): job type → handler. Each pool
 * thread imports it and runs `thumbnail` for every job of that type.
 *
 * A `thumbnail` job decodes a source PNG, shrinks it with jimp (pure
 * JavaScript: CPU work on this pool thread) and writes the thumbnail; then it appends its job id to the success log, which
 * the demo reads to prove that no job succeeded twice. The payload also
 * carries the job's planned fault (see src/cli/faults.ts), acted out here.
 */
import { appendFileSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { basename } from 'node:path';
import { threadId } from 'node:worker_threads';
import { setTimeout as sleep } from 'node:timers/promises';
import { Jimp } from 'jimp';
import { PermanentError } from '../dist/index.js';
import { fitWithin } from '../dist/cli/resize.js';

/**
 * @param {string} payload JSON of a ThumbnailPayload (src/cli/thumbnail-job.ts)
 * @param {import('../dist/index.js').HandlerContext} ctx
 */
export async function thumbnail(payload, ctx) {
  const started = Date.now();
  /** @type {import('../dist/cli/thumbnail-job.js').ThumbnailPayload} */
  const job = JSON.parse(payload);
  if (job.fault === 'transient' && ctx.attempt <= job.failAttempts) {
    throw new Error(`transient: simulated I/O hiccup (attempt ${ctx.attempt} of ${job.failAttempts} planned to fail)`);
  }

  const bytes = readFileSync(job.source); // an I/O error is worth a retry: let it throw as it is
  let image;
  try {
    image = await Jimp.read(bytes);
  } catch (error) {
    // A poison job: no retry will make this file decodable.
    throw new PermanentError(`${basename(job.source)}: corrupt or truncated PNG (${/** @type {Error} */ (error).message})`);
  }

  if (job.fault === 'crash' && ctx.attempt === 1) {
    process.exit(70); // in a worker thread this ends the thread, mid-job, with its lease held
  }
  if (job.fault === 'hang' && ctx.attempt === 1) {
    // Never yields (for 10 leases): no heartbeat, no tick. The lease expires and the job retries on another
    // thread; the pool's watchdog terminates and replaces this one (or close() does, if the queue drains first).
    busyUntil(started + 10 * job.leaseMillis);
  }
  if (job.fault === 'stall' && ctx.attempt === 1) {
    // The pool heartbeats every lease/3 and presumes a thread hung once its event loop has been silent
    // for a lease or more (two, at present). Yield until 0.5 lease (one heartbeat done: the lease runs to
    // 1.33 leases), then block until 1.42 leases: the lease expires and the job retries elsewhere, but the
    // watchdog, which last saw the loop turn at 0.5 lease, acts at 1.5 leases at the earliest. This thread
    // lives on as a zombie, and the fence below refuses its late success.
    await sleep(started + 0.5 * job.leaseMillis - Date.now());
    busyUntil(started + 1.42 * job.leaseMillis);
  }

  const size = fitWithin(image.width, image.height, job.maxSide);
  image.resize({ w: size.width, h: size.height });
  // Write then rename, so a reader (or a crash) never sees half a thumbnail.
  const partial = `${job.target}.${ctx.jobId}-${ctx.attempt}.part`;
  writeFileSync(partial, await image.getBuffer('image/png'));
  renameSync(partial, job.target);

  // Fence: throws if this attempt lost its lease (a zombie), so only the lease holder logs a success.
  ctx.heartbeat();
  // One line per success: the id first (what the demo counts), then what tells two runs apart.
  appendFileSync(job.successLog, `${ctx.jobId} attempt ${ctx.attempt} thread ${threadId} at ${Date.now()}\n`);
}

/** @param {number} until epoch milliseconds */
function busyUntil(until) {
  while (Date.now() < until);
}
