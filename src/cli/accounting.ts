/**
 * The demo's verdict: every submitted job accounted for, nothing done twice.
 * Pure, so that the failing cases can be tested with made-up outcomes.
 */

export interface JobOutcome {
  readonly id: string;
  /** The job's final status, or why it has none (evicted, not found). */
  readonly status: string;
  /** For a SUCCEEDED job: what is wrong with its thumbnail, or null if it is a valid PNG of the right size. */
  readonly thumbnailProblem: string | null;
}

export interface AccountingInput {
  /** How many jobs were submitted. */
  readonly submitted: number;
  /** One outcome per submitted job. */
  readonly jobs: readonly JobOutcome[];
  /** The job ids in the success log, one line per successful handler run. */
  readonly successLog: readonly string[];
}

export interface Accounting {
  readonly ok: boolean;
  readonly succeeded: number;
  readonly dead: number;
  /** Every reason the run is not accounted for; empty when ok. */
  readonly problems: string[];
}

/**
 * Checks that succeeded + dead = submitted, that every succeeded job left a
 * valid thumbnail, and that the success log names each succeeded job exactly
 * once and no other job.
 */
export function account(input: AccountingInput): Accounting {
  const problems: string[] = [];
  const status = new Map<string, string>();
  for (const job of input.jobs) {
    if (status.has(job.id)) problems.push(`${job.id} is listed twice among the outcomes`);
    status.set(job.id, job.status);
  }
  if (status.size !== input.submitted) {
    problems.push(`${input.submitted} jobs were submitted but ${status.size} have an outcome`);
  }
  let succeeded = 0;
  let dead = 0;
  for (const job of input.jobs) {
    if (job.status === 'SUCCEEDED') {
      succeeded++;
      if (job.thumbnailProblem !== null) problems.push(`${job.id} SUCCEEDED but ${job.thumbnailProblem}`);
    } else if (job.status === 'DEAD') {
      dead++;
    } else {
      problems.push(`${job.id} ended ${job.status}, neither SUCCEEDED nor DEAD`);
    }
  }
  if (succeeded + dead !== input.submitted) {
    problems.push(`succeeded ${succeeded} + dead ${dead} = ${succeeded + dead}, not the ${input.submitted} submitted`);
  }
  const logged = new Map<string, number>();
  for (const id of input.successLog) logged.set(id, (logged.get(id) ?? 0) + 1);
  for (const [id, times] of logged) {
    if (times > 1) problems.push(`${id} succeeded ${times} times (success log)`);
    const end = status.get(id);
    if (end === undefined) problems.push(`${id} is in the success log but was never submitted`);
    else if (end !== 'SUCCEEDED') problems.push(`${id} is in the success log but ended ${end}`);
  }
  for (const [id, end] of status) {
    if (end === 'SUCCEEDED' && !logged.has(id)) problems.push(`${id} SUCCEEDED but its handler never logged a success`);
  }
  return { ok: problems.length === 0, succeeded, dead, problems };
}
