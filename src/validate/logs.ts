/** What a job's log takes: a line of text, cut to the queue's limit. */
import { InvalidArgumentError, describe } from '../errors.js';

/** A queue's bounds on each job's log (JobQueueOptions' maxLogLines, maxLogLineBytes). */
export interface LogLimits {
  readonly maxLogLines: number;
  readonly maxLogLineBytes: number;
}

export function checkLogLine(line: unknown): asserts line is string {
  if (typeof line !== 'string') throw new InvalidArgumentError(`Expected \`line\` to be a string, got ${describe(line)}`);
}

/** `line` cut to at most `maxBytes` UTF-8 bytes, at a character's boundary (never half a character). */
export function cutLine(line: string, maxBytes: number): string {
  // Each UTF-16 unit is at most 3 UTF-8 bytes: a line this short fits without counting.
  if (line.length * 3 <= maxBytes) return line;
  const bytes = Buffer.from(line, 'utf8');
  if (bytes.length <= maxBytes) return line;
  let end = maxBytes;
  // Back off continuation bytes (10xxxxxx) to the start of the character the cut fell in.
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--;
  return bytes.subarray(0, end).toString('utf8');
}
