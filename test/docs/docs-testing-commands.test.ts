/**
 * The commands docs/testing.md shows (`npx leasehold ...` lines of its sh
 * blocks) run as written against the built CLI, each to exit 0, in a
 * scratch folder (where `--svg` writes its chart). Its js blocks are run by
 * test/docs/docs-snippets.test.ts.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const CLI = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));
const DOC = fileURLToPath(new URL('../../docs/testing.md', import.meta.url));
const scratch = mkdtempSync(join(tmpdir(), 'leasehold-docs-testing-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** The `npx leasehold` lines of the document's sh blocks. */
function commands(): string[] {
  const blocks = [...readFileSync(DOC, 'utf8').matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((m) => m[1]!);
  return blocks.flatMap((block) => block.split('\n')).filter((line) => line.startsWith('npx leasehold '));
}

function run(args: string[]): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args], { cwd: scratch, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}

describe('the commands of docs/testing.md', () => {
  it('shows stress and bench poll commands', () => {
    expect(commands().filter((c) => c.startsWith('npx leasehold stress')).length).toBeGreaterThanOrEqual(3);
    expect(commands().filter((c) => c.startsWith('npx leasehold bench poll'))).toHaveLength(1);
  });

  it.each(commands())('%s exits 0', async (command) => {
    const args = command.slice('npx leasehold '.length).split(/\s+/);
    const result = await run(args);
    expect(result.status, `${result.stdout}\n${result.stderr}`).toBe(0);
    if (args[0] === 'stress') expect(result.stdout).toContain('verdict: PASS');
    const svg = args[args.indexOf('--svg') + 1];
    if (args.includes('--svg')) expect(existsSync(join(scratch, svg!)), 'the chart was written where asked').toBe(true);
  });
});
