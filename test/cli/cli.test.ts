/**
 * The `leasehold` command itself, run as a user runs it (the built bin in a
 * child process): its version, its help, and bad usage.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const CLI = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));
const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };

function leasehold(...args: string[]): { status: number | null; stdout: string; stderr: string } {
  const run = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', timeout: 30_000 });
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}

describe('leasehold', () => {
  it('prints the package version with --version and -V, and exits 0', () => {
    expect(leasehold('--version')).toEqual({ status: 0, stdout: `${version}\n`, stderr: '' });
    expect(leasehold('-V').stdout).toBe(`${version}\n`);
  });

  it('lists its commands with --help, each read command offering --json', () => {
    const help = leasehold('--help');
    expect(help.status).toBe(0);
    for (const command of ['demo', 'bench', 'stats', 'dlq']) expect(help.stdout).toMatch(new RegExp(`^  ${command}\\b`, 'm'));
    expect(leasehold('stats', '--help').stdout).toContain('--json');
    expect(leasehold('dlq', 'list', '--help').stdout).toContain('--json');
  });

  it('exits 2 on an unknown command or option, saying which', () => {
    const command = leasehold('frobnicate');
    expect(command.status).toBe(2);
    expect(command.stderr).toContain("unknown command 'frobnicate'");
    const option = leasehold('stats', 'x.db', '--yaml');
    expect(option.status).toBe(2);
    expect(option.stderr).toContain("unknown option '--yaml'");
  });
});
