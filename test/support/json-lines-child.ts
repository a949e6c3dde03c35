/**
 * A Node child process that reports on stdout in JSON lines (`{ "ev": … }`),
 * as the racer fixtures of the process tests do: `said(ev)` resolves with
 * the first line of that kind, or rejects, with the child's stderr, if it
 * exits without saying it. Every child spawned here is killed after each
 * test of the file that calls `killChildrenAfterEach`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { afterEach } from 'vitest';

export interface JsonLinesChild {
  child: ChildProcess;
  /** The first line of kind `ev` it said, once it says it. */
  said(ev: string): Promise<Record<string, unknown>>;
}

const children: ChildProcess[] = [];

/** Kills, after each test, the children it left running (a failed test leaves its racers waiting for `go`). */
export function killChildrenAfterEach(): void {
  afterEach(() => {
    for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
  });
}

/** Runs `script` with `args` in a new Node process; `label` names it in errors. */
export function spawnJsonLines(script: string, args: readonly string[], label: string): JsonLinesChild {
  const child = spawn(process.execPath, [script, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
  children.push(child);
  let stderr = '';
  child.stderr!.on('data', (data: Buffer) => (stderr += data.toString()));
  const lines: Record<string, unknown>[] = [];
  const waiters: (() => void)[] = [];
  createInterface({ input: child.stdout! }).on('line', (line) => {
    lines.push(JSON.parse(line) as Record<string, unknown>);
    for (const wake of waiters.splice(0)) wake();
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const said = async (ev: string): Promise<Record<string, unknown>> => {
    for (;;) {
      const found = lines.find((line) => line['ev'] === ev);
      if (found !== undefined) return found;
      const next = new Promise<void>((resolve) => waiters.push(resolve));
      await Promise.race([next, exited.then(() => {
        if (!lines.some((line) => line['ev'] === ev)) throw new Error(`${label} exited before saying ${ev}: ${stderr}`);
      })]);
    }
  };
  return { child, said };
}
