/**
 * The code blocks of the README and the guides, as the docs-snippets and the
 * pack tests run them. A block's info string says what it is:
 *
 * - ```js / ```ts — a program, run as it is written (ts under `node --import tsx`);
 * - ```js file=handlers.js — a file the programs of its document use, written
 *   beside them and not run itself;
 * - ```js redis — a program that needs Redis: it gets a private redis-server,
 *   whose URL replaces `redis://127.0.0.1:6379` in the text;
 * - ```js skip-test — shown only (an excerpt that cannot run alone); the test
 *   lists it as skipped, by name.
 *
 * Blocks of other languages (sh, json) are not run.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';

export interface Snippet {
  /** Where it is: `docs/pool.md:42`. */
  where: string;
  language: string;
  /** The file name it is written to (`file=`), or a generated one for a program. */
  file: string;
  /** Written beside the programs, not run. */
  isFile: boolean;
  needsRedis: boolean;
  skipped: boolean;
  code: string;
}

const FENCE = /^```(\w*)(.*)$/;

/** The js and ts blocks of a Markdown file, in order. `name` is how messages name the file. */
export function snippetsOf(path: string, name: string): Snippet[] {
  const lines = readFileSync(path, 'utf8').split('\n');
  const snippets: Snippet[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE.exec(lines[i]!);
    if (open === null) continue;
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && lines[i] !== '```'; i++) body.push(lines[i]!);
    const language = open[1]!;
    if (language !== 'js' && language !== 'ts') continue;
    const words = open[2]!.trim().split(/\s+/);
    const named = words.find((word) => word.startsWith('file='))?.slice('file='.length);
    snippets.push({
      where: `${name}:${start + 1}`,
      language,
      file: named ?? `snippet-${start + 1}.${language === 'ts' ? 'ts' : 'mjs'}`,
      isFile: named !== undefined,
      needsRedis: words.includes('redis'),
      skipped: words.includes('skip-test'),
      code: body.join('\n') + '\n',
    });
  }
  return snippets;
}

/** The blocks of one `## title` section (up to the next `## `). */
export function sectionSnippets(path: string, name: string, title: string): Snippet[] {
  const text = readFileSync(path, 'utf8');
  const start = text.indexOf(`\n## ${title}\n`);
  if (start < 0) throw new Error(`${name} has no section "## ${title}"`);
  const end = text.indexOf('\n## ', start + 1);
  const first = text.slice(0, start).split('\n').length;
  const last = end < 0 ? Infinity : text.slice(0, end).split('\n').length;
  return snippetsOf(path, name).filter((snippet) => {
    const line = Number(snippet.where.slice(snippet.where.lastIndexOf(':') + 1));
    return line > first && line < last;
  });
}

export interface SnippetRun {
  status: number | null;
  stdout: string;
  stderr: string;
}

function textOf(snippet: Snippet, redisUrl: string | undefined): string {
  return redisUrl === undefined ? snippet.code : snippet.code.replaceAll(DEFAULT_REDIS_URL, redisUrl);
}

/** Writes the `file=` blocks of a document into `dir`, where its programs will run. */
export function writeFiles(dir: string, snippets: readonly Snippet[], redisUrl?: string): void {
  for (const snippet of snippets) if (snippet.isFile) writeFileSync(join(dir, snippet.file), textOf(snippet, redisUrl));
}

/** Writes a program into `dir` and runs it there. */
export function runProgram(dir: string, snippet: Snippet, redisUrl?: string): SnippetRun {
  writeFileSync(join(dir, snippet.file), textOf(snippet, redisUrl));
  const loader = snippet.language === 'ts' ? ['--import', 'tsx'] : [];
  const run = spawnSync(process.execPath, [...loader, snippet.file], { cwd: dir, encoding: 'utf8', timeout: 60_000 });
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}
