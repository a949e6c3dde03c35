/** How an attempt ends: the error `fail` keeps, the result `complete` stores, and what a view shows of them. */
import { InvalidArgumentError, describe, thrownText } from '../errors.js';
import { given, readOptions } from '../options.js';

/** What `fail` takes as the attempt's error: its text, an Error (whose message is kept), or none. */
export type FailError = string | Error | null;

export interface FailOptions {
  /**
   * Dead-letter the job now, whatever attempts it has left.
   * @default false
   */
  permanent?: boolean;
}

const FAIL_OPTIONS: ReadonlySet<string> = new Set(['permanent']);

/** Whether `value` is an Error, of this realm or another (a `vm` context's): what `fail` takes the message of. */
function isError(value: unknown): value is Error {
  return value instanceof Error || Object.prototype.toString.call(value) === '[object Error]';
}

/** An Error's text for lastError: its message, or its name when the message is empty (or cannot be read). */
function errorText(error: Error): string {
  const read = (field: 'message' | 'name'): string => {
    try {
      const value: unknown = error[field];
      return typeof value === 'string' ? value : '';
    } catch {
      return '';
    }
  };
  return read('message') || read('name') || thrownText(error);
}

/** The arguments of `fail`, checked: the error text (an Error's message) cut to `maxErrorBytes` (null: none given). */
export function checkFailure(error: unknown, options: FailOptions | undefined, maxErrorBytes: number): { text: string | null; permanent: boolean } {
  const reason = isError(error) ? errorText(error) : error;
  if (reason !== undefined && reason !== null && typeof reason !== 'string') {
    throw new InvalidArgumentError(`Expected \`error\` to be a string, an Error, null or undefined, got ${describe(error)}`);
  }
  const permanent = options === undefined ? false : given(readOptions<FailOptions>('options', options, FAIL_OPTIONS).permanent, false);
  if (typeof permanent !== 'boolean') {
    throw new InvalidArgumentError(`Expected \`permanent\` to be a boolean, got ${describe(permanent)}`);
  }
  return { text: reason === undefined || reason === null ? null : truncate(reason, maxErrorBytes), permanent };
}

/**
 * A complete's result as JSON text (storedResult's for anything but bytes), or null for
 * none (`undefined`). Refused with InvalidArgumentError when JSON.stringify
 * throws (a cycle, a BigInt) or gives no text (a function, a symbol), or the
 * text is over `maxResultBytes` UTF-8 bytes.
 */
export function resultText(result: unknown, maxResultBytes: number): string | null {
  if (result === undefined) return null;
  let text: string | undefined;
  try {
    text = JSON.stringify(result);
  } catch (error) {
    throw new InvalidArgumentError(`Expected \`result\` to be a JSON-serializable value, got ${describe(result)}: ${thrownText(error)}`);
  }
  if (text === undefined) throw new InvalidArgumentError(`Expected \`result\` to be a JSON-serializable value, got ${describe(result)}`);
  const bytes = text.length * 3 <= maxResultBytes ? text.length : Buffer.byteLength(text);
  if (bytes > maxResultBytes) {
    throw new InvalidArgumentError(`Expected \`result\` to be at most ${maxResultBytes} bytes of JSON (maxResultBytes), got ${Buffer.byteLength(text)}`);
  }
  return text;
}

/** A result as an in-memory or journaled queue stores it: its JSON text, or the bytes a Uint8Array result holds. */
export type StoredResult = string | Uint8Array;

/**
 * A complete's result as an in-memory or journaled queue stores it: a
 * Uint8Array as it is (at most `maxPayloadBytes`: bytes out are limited as
 * bytes in are), anything else as resultText's JSON; null for none.
 */
export function storedResult(result: unknown, maxResultBytes: number, maxPayloadBytes: number): StoredResult | null {
  if (!(result instanceof Uint8Array)) return resultText(result, maxResultBytes);
  if (result.length > maxPayloadBytes) {
    throw new InvalidArgumentError(`Expected a binary \`result\` to be at most ${maxPayloadBytes} bytes (maxPayloadBytes), got a Uint8Array of ${result.length}`);
  }
  return result;
}

/** The parsed result a view shows: the JSON text's value, a binary result's bytes, or undefined for none. */
export function parsedResult(text: StoredResult | null | undefined): unknown {
  if (text instanceof Uint8Array) return text;
  return text === null || text === undefined || text === '' ? undefined : JSON.parse(text);
}

/** Cuts `text` to at most `maxBytes` UTF-8 bytes, at a character boundary. */
function truncate(text: string, maxBytes: number): string {
  if (text.length * 3 <= maxBytes || Buffer.byteLength(text) <= maxBytes) return text;
  const bytes = Buffer.from(text);
  let end = maxBytes;
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--;
  return bytes.toString('utf8', 0, end);
}
