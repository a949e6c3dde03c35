import type { Payload } from './types.js';

/**
 * How a tool (the CLI, the dashboard) shows a payload: a string as it is,
 * bytes by their length (`<binary: 1048576 bytes>`), never decoded as text:
 * arbitrary bytes are not UTF-8, and a megabyte of them is no help on a screen.
 */
export function payloadText(payload: Payload): string {
  return typeof payload === 'string' ? payload : `<binary: ${payload.length} bytes>`;
}
