/**
 * Why a handler module did not load, as a HandlerModuleError that says where.
 * Node's SyntaxError from `import()` names neither the file nor the line (it
 * prints them only for an uncaught one), so a syntax error's place is found
 * by `node --check` on the module's source (in a child process, on this
 * failure path only). An error the module threw while it was imported names
 * its place in its stack: the first frame in the module's file.
 */
import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { HandlerModuleError, type SourcePlace } from '../errors.js';

export async function handlerModuleError(moduleUrl: string, error: unknown): Promise<HandlerModuleError> {
  const place = await placeOf(moduleUrl, error).catch(() => null);
  return new HandlerModuleError(moduleUrl, place, { cause: error });
}

async function placeOf(moduleUrl: string, error: unknown): Promise<SourcePlace | null> {
  const url = new URL(moduleUrl);
  if (url.protocol !== 'file:') return null;
  const file = fileURLToPath(url);
  if ((error as Error | null)?.name === 'SyntaxError' && /\.[cm]?js$/.test(file)) return syntaxErrorPlace(file);
  // A throw at import: `at file:///…/handlers.mjs:12:9` (or `at fn (file:///…:12:9)`), the module's own frame.
  const stack = String((error as Error | null)?.stack ?? '');
  const href = url.origin === 'null' ? `file://${url.pathname}` : url.href.split(/[?#]/)[0]!;
  for (const match of stack.matchAll(/(file:\/\/[^\s():]+):(\d+):(\d+)/g)) {
    if (match[1] === href) return { file, line: Number(match[2]), column: Number(match[3]) };
  }
  return null;
}

/** Where `node --check` finds the syntax error of `file`'s source (parsed as its extension says), or null if it finds none. */
async function syntaxErrorPlace(file: string): Promise<SourcePlace | null> {
  const source = await readFile(file, 'utf8');
  const inputType = file.endsWith('.cjs') ? 'commonjs' : 'module';
  const stderr = await new Promise<string>((resolve, reject) => {
    const check = spawn(process.execPath, [`--input-type=${inputType}`, '--check'], { stdio: ['pipe', 'ignore', 'pipe'] });
    let text = '';
    check.stderr.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
    check.once('error', reject);
    check.once('close', () => resolve(text));
    check.stdin.end(source);
  });
  // "[stdin]:4\n  return 1;\n         ^\n\nSyntaxError: ...": the line, then the source line and a caret under the column.
  const [head, , caret] = stderr.split('\n');
  const line = /^\[stdin\]:(\d+)$/.exec(head ?? '')?.[1];
  if (line === undefined) return null;
  const column = (caret ?? '').indexOf('^');
  return { file, line: Number(line), column: column + 1 };
}
