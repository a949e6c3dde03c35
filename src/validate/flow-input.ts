/**
 * A flow as `submitFlow` takes it: a parent job and its children, each
 * child maybe a parent itself. Validation at the edge, before anything is
 * submitted: a bad node anywhere refuses the whole flow with
 * InvalidArgumentError naming where it is (`flow.children[1].children[0]`).
 */
import { InvalidArgumentError, describe } from '../errors.js';
import { readOptions } from '../options.js';
import type { ChildFailurePolicy, FlowJob } from '../types.js';
import { checkSubmit, type CheckedJob } from './job-input.js';

/** One job of a checked flow, in the order the flow is submitted (a parent before its children: depth first). */
export interface CheckedFlowJob {
  job: CheckedJob;
  /** The index of its parent in the list; -1 for the flow's root. */
  parent: number;
  /** Its children (direct ones): what it waits for. */
  children: number;
  /** Its `onChildFailure` is 'ignore': a child DEAD or CANCELLED counts as ended. */
  ignoresChildFailure: boolean;
}

/** How deep a flow may nest: deeper is surely a mistake (and each level is a frame of this check). */
export const MAX_FLOW_DEPTH = 100;

const FLOW_JOB_FIELDS: ReadonlySet<string> = new Set(['type', 'payload', 'options', 'onChildFailure', 'children']);
/** submit's options a flow's job takes: not the idempotent key and its windows, whose "give back the holder's id" means nothing in a tree. */
const FLOW_JOB_OPTIONS: ReadonlySet<string> = new Set(['priority', 'runAt', 'delayMillis', 'maxAttempts', 'timeoutMillis', 'headers', 'group']);
const POLICIES: ReadonlySet<string> = new Set<ChildFailurePolicy>(['fail', 'ignore']);

/** The flow's jobs, the root first, each parent before its children (depth first). */
export function checkFlow(flow: unknown, maxPayloadBytes: number): CheckedFlowJob[] {
  const jobs: CheckedFlowJob[] = [];
  checkNode('flow', flow, -1, new Set(), jobs, maxPayloadBytes);
  if (jobs[0]!.children === 0) throw new InvalidArgumentError('Expected `flow.children` to be a non-empty array (a flow is a parent with children; submit a lone job with submit)');
  return jobs;
}

function checkNode(name: string, node: unknown, parent: number, ancestors: Set<unknown>, jobs: CheckedFlowJob[], maxPayloadBytes: number): void {
  const fields = readOptions<FlowJob>(name, node, FLOW_JOB_FIELDS);
  if (ancestors.has(node)) throw new InvalidArgumentError(`Expected \`${name}\` to be a new job, got one of its own ancestors (a flow is a tree)`);
  if (ancestors.size >= MAX_FLOW_DEPTH) throw new InvalidArgumentError(`Expected a flow at most ${MAX_FLOW_DEPTH} levels deep, got more at \`${name}\``);
  const options = fields.options === undefined ? {} : readOptions(`${name}.options`, fields.options, FLOW_JOB_OPTIONS);
  let job: CheckedJob;
  try {
    job = checkSubmit(fields.type, fields.payload, options, undefined, maxPayloadBytes);
  } catch (error) {
    if (error instanceof InvalidArgumentError) throw new InvalidArgumentError(`In \`${name}\`: ${error.message}`);
    throw error;
  }
  const policy = fields.onChildFailure ?? 'fail';
  if (typeof policy !== 'string' || !POLICIES.has(policy)) {
    throw new InvalidArgumentError(`Expected \`${name}.onChildFailure\` to be 'fail' or 'ignore', got ${describe(policy)}`);
  }
  const children = fields.children ?? [];
  if (!Array.isArray(children)) throw new InvalidArgumentError(`Expected \`${name}.children\` to be an array, got ${describe(children)}`);
  const index = jobs.length;
  const entry: CheckedFlowJob = { job, parent, children: children.length, ignoresChildFailure: policy === 'ignore' };
  jobs.push(entry);
  ancestors.add(node);
  for (let i = 0; i < children.length; i++) checkNode(`${name}.children[${i}]`, children[i], index, ancestors, jobs, maxPayloadBytes);
  ancestors.delete(node);
}
