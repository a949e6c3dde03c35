/**
 * Every code block of the README and of docs/ runs as written: each js / ts
 * program (test/support/snippets.ts says how blocks are marked) runs in a fresh
 * folder of its document, beside the document's `file=` blocks, with
 * `leasehold` resolving to this package's build — as in an app that
 * installed it. A program that needs Redis gets a private redis-server.
 */
import { mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redisMissing, startRedis, type RedisServer } from '../support/redis-harness.js';
import { runProgram, snippetsOf, writeFiles } from '../support/snippets.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const DOCUMENTS = ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((name) => name.endsWith('.md')).sort().map((name) => `docs/${name}`)];
const scratch = mkdtempSync(join(tmpdir(), 'leasehold-snippets-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** A folder like an app's: ESM, with leasehold (this package), tsx and prom-client (docs/metrics.md) installed. */
function appFolder(name: string): string {
  const dir = join(scratch, name.replaceAll('/', '-'));
  mkdirSync(join(dir, 'node_modules'), { recursive: true });
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'snippets', private: true, type: 'module' }));
  symlinkSync(ROOT, join(dir, 'node_modules', 'leasehold'));
  for (const tool of ['tsx', 'prom-client']) symlinkSync(join(ROOT, 'node_modules', tool), join(dir, 'node_modules', tool));
  return dir;
}

it('finds code blocks to run in the README and the guides', () => {
  const programs = DOCUMENTS.flatMap((doc) => snippetsOf(join(ROOT, doc), doc)).filter((s) => !s.isFile && !s.skipped);
  expect(programs.filter((s) => s.where.startsWith('README.md:'))).not.toHaveLength(0);
  expect(programs.filter((s) => s.where.startsWith('docs/')).length).toBeGreaterThanOrEqual(6);
});

for (const doc of DOCUMENTS) {
  const snippets = snippetsOf(join(ROOT, doc), doc);
  const programs = snippets.filter((snippet) => !snippet.isFile);
  if (programs.length === 0) continue;

  describe(doc, () => {
    const needsRedis = programs.some((snippet) => snippet.needsRedis && !snippet.skipped);
    const noRedis = needsRedis ? redisMissing() : null;
    let dir: string;
    let redis: RedisServer | undefined;
    beforeAll(async () => {
      dir = appFolder(doc);
      if (needsRedis && noRedis === null) redis = await startRedis();
      writeFiles(dir, snippets, redis?.url);
    });
    afterAll(async () => {
      await redis?.stop();
    });

    for (const snippet of programs) {
      if (snippet.skipped) {
        it.skip(`${snippet.where} (marked skip-test)`, () => undefined);
      } else if (snippet.needsRedis && noRedis !== null) {
        it.skip(`${snippet.where} SKIPPED: it needs Redis (${noRedis})`, () => undefined);
      } else {
        it(`runs ${snippet.where} (${snippet.language}) to exit 0 without errors`, () => {
          const run = runProgram(dir, snippet, redis?.url);
          expect(run.stderr, run.stdout).toBe('');
          expect(run.status, run.stdout).toBe(0);
        });
      }
    }
  });
}
