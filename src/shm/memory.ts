import { Arena } from './arena.js';
import { SharedHeap } from './heap.js';
import { JobMap } from './jobmap.js';
import {
  HEAP_SIZE_DELAYED, HEAP_SIZE_LEASES, HEAP_SIZE_READY, LAST_NOW, allocateBuffers, type QueueBuffers,
} from './layout.js';
import { CommitRing } from './commits.js';
import { QueueLock } from './lock.js';
import { WorkSignal } from './signal.js';
import { SlotTable } from './slots.js';
import { WorkerNames } from './workers.js';

/**
 * One thread's typed views of a queue's shared buffers. Creating the buffers
 * (`create`) happens once; every thread, the creator included, then builds its
 * own views over them (`new QueueMemory`).
 */
export class QueueMemory {
  readonly buffers: QueueBuffers;
  readonly header: Float64Array;
  readonly lock: QueueLock;
  readonly signal: WorkSignal;
  readonly slots: SlotTable;
  readonly ready: SharedHeap;
  readonly delayed: SharedHeap;
  readonly leases: SharedHeap;
  readonly jobMap: JobMap;
  readonly freeSlots: Int32Array;
  readonly finished: Float64Array;
  readonly arena: Arena;
  readonly workerNames: WorkerNames;
  readonly commits: CommitRing;

  constructor(buffers: QueueBuffers, lockTimeoutMillis: number) {
    this.buffers = buffers;
    const header = (this.header = new Float64Array(buffers.header));
    const lockWords = new Int32Array(buffers.lockWords);
    this.lock = new QueueLock(lockWords, lockTimeoutMillis);
    this.signal = new WorkSignal(lockWords);
    this.slots = new SlotTable(new Int32Array(buffers.slotWords), new Float64Array(buffers.records), header);
    this.ready = new SharedHeap(new Float64Array(buffers.ready), header, HEAP_SIZE_READY);
    this.delayed = new SharedHeap(new Float64Array(buffers.delayed), header, HEAP_SIZE_DELAYED);
    this.leases = new SharedHeap(new Float64Array(buffers.leases), header, HEAP_SIZE_LEASES);
    this.jobMap = new JobMap(new Float64Array(buffers.jobMap));
    this.freeSlots = new Int32Array(buffers.freeSlots);
    this.finished = new Float64Array(buffers.finished);
    this.arena = new Arena(buffers.arena, header);
    this.workerNames = new WorkerNames(buffers.workerNames, header);
    this.commits = new CommitRing(lockWords, new Float64Array(buffers.commitRing), lockTimeoutMillis);
  }

  /** New, all-zero buffers: an empty queue. */
  static create(capacity: number, arenaBytes: number): QueueBuffers {
    const buffers = allocateBuffers(capacity, arenaBytes);
    // All zero is an empty queue, except that no time has been seen yet.
    new Float64Array(buffers.header)[LAST_NOW] = -Infinity;
    return buffers;
  }
}
