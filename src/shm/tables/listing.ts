import { JobStatus } from '../../types.js';
import { elementsIn, growDoubling } from '../memory/growth.js';
import {
  INITIAL_LISTING_NODES, SLOT_HIGH_WATER, LISTING_BUILT, LISTING_CLASSES, LISTING_HEADER, LISTING_ROOTS, NODE_CLASS, NODE_FIELDS, NODE_KEY, NODE_LEFT, NODE_RIGHT, isBusy, statusOf, type SlotStatus,
} from '../memory/layout.js';
import type { SlotTable } from './slots.js';

/** The class (tree) of each slot status, by status number: FREE is in none; READY and DELAYED are both PENDING. */
const CLASS_OF_STATUS = [-1, 0, 0, 1, 2, 3, 4] as const;
/** The class of each public status. */
export const CLASS_OF_NAME: Record<JobStatus, number> = { PENDING: 0, RUNNING: 1, SUCCEEDED: 2, DEAD: 3, CANCELLED: 4 };

/** The class a slot status files a job under; -1 for none (FREE). */
export function classOf(status: SlotStatus): number {
  return CLASS_OF_STATUS[status];
}

/**
 * The listing index (see layout.ts): one treap per class, keyed by job
 * number, each node a slot. A node's heap priority is a hash of its slot, so
 * no random state is shared and the trees stay balanced in expectation:
 * O(log n) to file, unfile or find where a page starts.
 *
 * Maintained under the maintenance lock only. Locked moves re-file their slot
 * at once (`sync`); lock-free moves (claim, complete) are re-filed when the
 * lock holder drains the row rings they already append to, so the hot path
 * writes nothing more. Between a lock-free move and that drain a node sits in
 * its old class's tree: a walk checks each slot's word and passes over one
 * that has left the class.
 *
 * Concurrency contract: every method runs under the maintenance lock.
 */
export class ListingIndex {
  readonly #buffer: SharedArrayBuffer;
  /** This thread's view: fixed-length, re-made to cover the nodes met (see #reach). */
  #words: Float64Array;
  readonly #header: Float64Array;
  readonly #slots: SlotTable;
  /** The halves of the last `#split`. */
  #less = 0;
  #more = 0;

  /** `buffer`: growable, it grows with the slots it files once built (see #reach). */
  constructor(buffer: SharedArrayBuffer, header: Float64Array, slots: SlotTable) {
    this.#buffer = buffer;
    this.#header = header;
    this.#slots = slots;
    this.#words = ListingIndex.#view(buffer);
  }

  static #view(buffer: SharedArrayBuffer): Float64Array {
    return new Float64Array(buffer, 0, elementsIn(buffer, Float64Array.BYTES_PER_ELEMENT));
  }

  /**
   * This thread's view, made to cover the nodes of the first `nodes` slots:
   * re-made over the buffer as another holder grew it, or grown (doubling,
   * from INITIAL_LISTING_NODES). Under the lock, as every method is.
   */
  #reach(nodes: number): Float64Array {
    const length = LISTING_HEADER + nodes * NODE_FIELDS;
    if (length <= this.#words.length) return this.#words;
    const f64 = Float64Array.BYTES_PER_ELEMENT;
    growDoubling(this.#buffer, length * f64, (LISTING_HEADER + INITIAL_LISTING_NODES * NODE_FIELDS) * f64);
    return (this.#words = ListingIndex.#view(this.#buffer));
  }

  get built(): boolean {
    return this.#words[LISTING_BUILT] === 1;
  }

  /**
   * Files every job of the first `slotCount` slots (those ever used) afresh:
   * O(slots log slots). `progress(slot)` is called at each slot (a long scan
   * under the lock shows it is alive).
   */
  build(slotCount: number, progress: (slot: number) => void): void {
    const words = this.#reach(slotCount);
    words.fill(0, 0, LISTING_HEADER + slotCount * NODE_FIELDS);
    words[LISTING_BUILT] = 1;
    for (let slot = 0; slot < slotCount; slot++) {
      progress(slot);
      this.sync(slot);
    }
  }

  /**
   * Files the slot under its status now, if the index is built: out of the
   * tree it was in, into its class's (none for FREE). A BUSY slot is left as
   * it is: its lock-free mover appends it to a ring as it finishes, and the
   * drain of that ring syncs it again.
   */
  sync(slot: number): void {
    if (!this.built) return;
    const word = this.#slots.word(slot);
    if (isBusy(word)) return;
    // Every slot ever used may be a node now or later: the tree links any of them.
    const words = this.#reach(Math.max(slot + 1, this.#header[SLOT_HIGH_WATER]!));
    const node = slot + 1;
    const at = slot * NODE_FIELDS + LISTING_HEADER;
    const wanted = classOf(statusOf(word));
    const filed = words[at + NODE_CLASS]! - 1;
    const key = this.#slots.jobNums[slot]!;
    if (filed === wanted && (wanted < 0 || words[at + NODE_KEY] === key)) return;
    if (filed >= 0) words[LISTING_ROOTS + filed] = this.#remove(words[LISTING_ROOTS + filed]!, node, words[at + NODE_KEY]!);
    words[at + NODE_CLASS] = wanted + 1;
    if (wanted < 0) return;
    words[at + NODE_LEFT] = 0;
    words[at + NODE_RIGHT] = 0;
    words[at + NODE_KEY] = key;
    words[LISTING_ROOTS + wanted] = this.#insert(words[LISTING_ROOTS + wanted]!, node);
  }

  /** The nodes of class `cls` with keys above `after`, in key order. */
  walk(cls: number, after: number): TreeWalk {
    // A walk reads nodes of any slot ever used: this thread's view must cover them all.
    this.#reach(this.#header[SLOT_HIGH_WATER]!);
    return new TreeWalk(this, cls, this.#words[LISTING_ROOTS + cls]!, after);
  }

  /** A walk of each class's tree from `after`: all of them, or only `cls`. */
  walks(cls: number | undefined, after: number): TreeWalk[] {
    if (cls !== undefined) return [this.walk(cls, after)];
    return Array.from({ length: LISTING_CLASSES }, (_, each) => this.walk(each, after));
  }

  keyOf(node: number): number {
    return this.#words[(node - 1) * NODE_FIELDS + LISTING_HEADER + NODE_KEY]!;
  }

  left(node: number): number {
    return this.#words[(node - 1) * NODE_FIELDS + LISTING_HEADER + NODE_LEFT]!;
  }

  right(node: number): number {
    return this.#words[(node - 1) * NODE_FIELDS + LISTING_HEADER + NODE_RIGHT]!;
  }

  #setLeft(node: number, child: number): void {
    this.#words[(node - 1) * NODE_FIELDS + LISTING_HEADER + NODE_LEFT] = child;
  }

  #setRight(node: number, child: number): void {
    this.#words[(node - 1) * NODE_FIELDS + LISTING_HEADER + NODE_RIGHT] = child;
  }

  /** `node` (children cleared) into the tree at `root`; the new root. */
  #insert(root: number, node: number): number {
    if (root === 0) return node;
    if (priorityOf(node) > priorityOf(root)) {
      this.#split(root, this.keyOf(node));
      this.#setLeft(node, this.#less);
      this.#setRight(node, this.#more);
      return node;
    }
    if (this.keyOf(node) < this.keyOf(root)) this.#setLeft(root, this.#insert(this.left(root), node));
    else this.#setRight(root, this.#insert(this.right(root), node));
    return root;
  }

  /** Splits the tree at `root` into keys below `key` (#less) and above it (#more); keys are unique, `key` not among them. */
  #split(root: number, key: number): void {
    if (root === 0) {
      this.#less = 0;
      this.#more = 0;
    } else if (this.keyOf(root) < key) {
      this.#split(this.right(root), key);
      this.#setRight(root, this.#less);
      this.#less = root;
    } else {
      this.#split(this.left(root), key);
      this.#setLeft(root, this.#more);
      this.#more = root;
    }
  }

  /** `node`, filed under `key`, out of the tree at `root`; the new root. */
  #remove(root: number, node: number, key: number): number {
    if (root === 0) return 0;
    if (root === node) return this.#merge(this.left(node), this.right(node));
    if (key < this.keyOf(root)) this.#setLeft(root, this.#remove(this.left(root), node, key));
    else this.#setRight(root, this.#remove(this.right(root), node, key));
    return root;
  }

  /** One tree of the trees at `low` and `high`, every key of `low` below every key of `high`. */
  #merge(low: number, high: number): number {
    if (low === 0) return high;
    if (high === 0) return low;
    if (priorityOf(low) > priorityOf(high)) {
      this.#setRight(low, this.#merge(this.right(low), high));
      return low;
    }
    this.#setLeft(high, this.#merge(low, this.left(high)));
    return high;
  }
}

/** A node's treap priority: its slot, well mixed (murmur3's finalizer), so that slot order and key order do not line up. */
function priorityOf(node: number): number {
  let h = node;
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

/**
 * An in-order walk of one tree from the first key above `after`: a stack of
 * the nodes still to visit on the path, O(log n) to start, O(1) amortized a step.
 */
export class TreeWalk {
  readonly #index: ListingIndex;
  readonly #stack: number[] = [];
  /** The class whose tree this walks. */
  readonly cls: number;

  constructor(index: ListingIndex, cls: number, root: number, after: number) {
    this.#index = index;
    this.cls = cls;
    for (let node = root; node !== 0;) {
      if (index.keyOf(node) > after) {
        this.#stack.push(node);
        node = index.left(node);
      } else {
        node = index.right(node);
      }
    }
  }

  /** The next node's key; Infinity when the walk is over. */
  get nextKey(): number {
    const stack = this.#stack;
    return stack.length === 0 ? Infinity : this.#index.keyOf(stack[stack.length - 1]!);
  }

  /** The next node's slot, stepping past it. Only while `nextKey` is finite. */
  take(): number {
    const index = this.#index;
    const node = this.#stack.pop()!;
    for (let child = index.right(node); child !== 0; child = index.left(child)) this.#stack.push(child);
    return node - 1;
  }
}
