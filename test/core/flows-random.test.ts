/**
 * Flows under random operations: seeded random trees (up to three levels,
 * each parent 'fail' or 'ignore') and random steps (complete with or without
 * a result, fail for good, cancel, remove, retryDead), checked after every
 * step against what the children's own views say: a waiting parent's count is
 * its children not yet ended by its policy, a parent under 'fail' with a
 * failed child is DEAD, and a parent is leased only once each child ended.
 */
import { describe, expect, it } from 'vitest';
import { JobQueue, ManualClock, RetryPolicy, type FlowJob, type JobView } from '../../dist/index.js';
import { T0, prng, testSeed } from '../support/helpers.js';
import { closeJournal, openJournal, tempJournal } from '../support/journal-harness.js';

const STEPS = 300;
const LEASE = 600_000;

interface Node {
  id: string;
  policy: 'fail' | 'ignore';
  children: Node[];
}

/** A random tree of jobs (the root has at least one child). */
function randomFlow(random: () => number, depth = 0): FlowJob {
  const count = depth === 0 ? 1 + Math.floor(random() * 3) : depth < 3 && random() < 0.4 ? Math.floor(random() * 3) : 0;
  const children = Array.from({ length: count }, () => randomFlow(random, depth + 1));
  return { type: count > 0 ? 'parent' : 'leaf', onChildFailure: random() < 0.5 ? 'fail' : 'ignore', children };
}

/** The flow's nodes, with the ids submitFlow gave (depth first, as it numbers them). */
function nodesOf(flow: FlowJob, ids: string[]): Node {
  const node: Node = { id: ids.shift()!, policy: flow.onChildFailure ?? 'fail', children: [] };
  for (const child of flow.children ?? []) node.children.push(nodesOf(child, ids));
  return node;
}

const VARIANTS = [
  { name: 'memory', open: (clock: ManualClock) => new JobQueue(clock, new RetryPolicy(2, 0, 0), { capacity: 4096 }), close: (queue: JobQueue) => void queue.close() },
  { name: 'journal', open: (clock: ManualClock) => openJournal(tempJournal(), clock, new RetryPolicy(2, 0, 0), { capacity: 4096 }), close: closeJournal },
];

for (const variant of VARIANTS) {
  describe(`flows under random operations [${variant.name}]`, () => {
    it(`keep every parent's count and state true to its children's, over ${STEPS} random steps`, () => {
      const seed = testSeed(`flows-random-${variant.name}`);
      const random = prng(seed);
      const queue = variant.open(new ManualClock(T0));
      const parents: Node[] = [];
      const parentOf = new Map<string, string>();
      const removed = new Set<string>();
      const all: string[] = [];
      const addFlow = () => {
        const flow = randomFlow(random);
        const ids = queue.submitFlow(flow);
        all.push(...ids);
        const walk = (node: Node) => {
          if (node.children.length > 0) parents.push(node);
          for (const child of node.children) parentOf.set(child.id, node.id);
          node.children.forEach(walk);
        };
        walk(nodesOf(flow, [...ids]));
      };
      const view = (id: string): JobView | undefined => (removed.has(id) ? undefined : queue.view(id));
      // Ended, for a waiting parent: SUCCEEDED, CANCELLED or removed; DEAD too under 'ignore'. (Under 'fail' a
      // waiting parent has a DEAD child only once it was itself retried from DEAD: it waits for that child's retry.)
      const ended = (parent: Node, child: Node): boolean => {
        const status = view(child.id)?.status;
        return status === undefined || status === 'SUCCEEDED' || status === 'CANCELLED' || (parent.policy === 'ignore' && status === 'DEAD');
      };
      /** The parents that waited at the last check: none of them may be leased by the next step. */
      let waited = new Set<string>();
      const check = (step: string) => {
        const waiting = new Set<string>();
        for (const parent of parents) {
          const own = view(parent.id);
          if (own === undefined) continue;
          const open = parent.children.filter((child) => !ended(parent, child)).length;
          if (own.waitingChildren !== undefined) {
            expect(own.status, `${step}: ${parent.id}`).toBe('PENDING');
            expect(own.waitingChildren, `${step}: ${parent.id} waits for its children not ended`).toBe(open);
            waiting.add(parent.id);
          } else if (own.status === 'PENDING' && !retried.has(parent.id)) {
            // Ready (not waiting, never retried from DEAD): each child ended.
            expect(open, `${step}: ${parent.id} is ready with children not ended`).toBe(0);
          }
        }
        waited = waiting;
      };
      /**
       * Parents retried from DEAD, and parents of a child retried from DEAD once they no longer waited: they may
       * be ready with children not ended (those were counted, or ended, before).
       */
      const retried = new Set<string>();
      for (let n = 0; n < 4; n++) addFlow();
      check('submit');
      for (let step = 0; step < STEPS; step++) {
        const r = random();
        let what: string;
        if (r < 0.05) {
          addFlow();
          what = 'submitFlow';
        } else if (r < 0.6) {
          const lease = queue.poll('w', LEASE);
          what = `poll ${lease?.jobId}`;
          if (lease !== undefined) {
            expect(waited.has(lease.jobId), `${lease.jobId} leased while it waited for its children`).toBe(false);
            const how = random();
            if (how < 0.15) queue.fail(lease.jobId, lease.token, 'boom', { permanent: true });
            else if (how < 0.5) queue.complete(lease.jobId, lease.token);
            else queue.complete(lease.jobId, lease.token, { by: lease.jobId });
          }
        } else {
          const id = all[Math.floor(random() * all.length)]!;
          const status = view(id)?.status;
          what = `${id} (${status})`;
          if (status === 'PENDING' && r < 0.7) queue.cancel(id);
          else if (status === 'PENDING' && r < 0.75) {
            queue.remove(id);
            removed.add(id);
          } else if (status === 'DEAD') {
            queue.retryDead(id);
            retried.add(id);
            const parent = parentOf.get(id);
            if (parent !== undefined && !waited.has(parent)) retried.add(parent);
          }
        }
        check(`step ${step}, ${what} (seed ${seed})`);
      }
      variant.close(queue);
    });
  });
}
