/**
 * A private redis-server, for the Redis tests and the Redis benchmarks alike:
 * started on a free loopback port with a temporary directory, no RDB
 * snapshots, AOF on with the fsync policy the caller names; stopped, killed
 * and restarted (same port, same directory) at will. Extra arguments make it
 * a cluster node or require a password; `tls` adds a TLS port beside the
 * plain one (which the launcher uses to see that it is up).
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants, mkdtempSync, rmSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';

export interface RedisServer {
  readonly url: string;
  readonly port: number;
  /** Its data directory (the AOF lives here). */
  readonly dir: string;
  /** How it persists, e.g. `appendonly yes, appendfsync always, no RDB snapshots`. */
  readonly persistence: string;
  /** The TLS port, if started with `tls`. */
  readonly tlsPort: number | undefined;
  /** The running process's id, or undefined while it is down. */
  readonly pid: number | undefined;
  /** Shuts it down (SIGTERM) and removes its directory. */
  stop(): Promise<void>;
  /** Kills it at once (SIGKILL), as a crash would; the directory stays for `restart`. */
  kill(): Promise<void>;
  /** Starts it again on the same port and directory, and waits until it answers. */
  restart(): Promise<void>;
}

/**
 * When the AOF is fsynced: `always` before every reply that follows a write
 * (every acknowledged write survives a crash of the machine), `everysec` once a
 * second, `no` when the kernel pleases.
 */
export type AppendFsync = 'always' | 'everysec' | 'no';

export interface RedisServerOptions {
  /**
   * The AOF fsync policy.
   * @default 'always' (what the tests want: an acknowledged call is durable)
   */
  appendfsync?: AppendFsync;
  /** More redis-server arguments, e.g. `['--cluster-enabled', 'yes']` or `['--requirepass', 'pw']`. */
  args?: readonly string[];
  /** Also listen with TLS, with these PEM files, and require a client certificate signed by `caFile`. */
  tls?: { readonly certFile: string; readonly keyFile: string; readonly caFile: string };
}

const INSTALL_HINT = 'install it with `apt-get install -y redis-server` (Debian/Ubuntu; .ci/run does this when it can)';
const START_TIMEOUT_MILLIS = 20_000;

/** A Redis binary (redis-server by default): on PATH, or in /usr/bin or /usr/sbin. */
export function findBinary(name = 'redis-server'): string | undefined {
  const dirs = [...(process.env['PATH'] ?? '').split(delimiter), '/usr/bin', '/usr/sbin'];
  for (const dir of dirs) {
    if (dir === '') continue;
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // Not here; try the next directory.
    }
  }
  return undefined;
}

/** Why no redis-server can be started here, or null if one can. */
export function redisMissing(): string | null {
  return findBinary() === undefined ? `no redis-server binary on PATH, in /usr/bin or in /usr/sbin: ${INSTALL_HINT}` : null;
}

/** What `redis-server --version` says, e.g. `Redis server v=7.0.15 ...`. */
export function redisVersion(): string {
  const binary = findBinary();
  if (binary === undefined) throw new Error(`Cannot run redis-server: ${redisMissing()}`);
  return execFileSync(binary, ['--version'], { encoding: 'utf8' }).trim();
}

/** A port that was free a moment ago on 127.0.0.1. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address !== null ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

/** True once the server answers PING with PONG, or asks for a password (not LOADING). */
function answers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    let reply = '';
    socket.setTimeout(1000, () => socket.destroy());
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.on('data', (data) => {
      reply += data.toString();
      if (reply.includes('\r\n')) socket.end();
    });
    socket.on('error', () => undefined);
    socket.on('close', () => resolve(reply.startsWith('+PONG') || reply.startsWith('-NOAUTH')));
  });
}

/** Starts a private redis-server and waits until it answers. */
export async function startRedis(options: RedisServerOptions = {}): Promise<RedisServer> {
  const binary = findBinary();
  if (binary === undefined) throw new Error(`Cannot start Redis: ${redisMissing()}`);
  const { appendfsync = 'always', args: extra = [], tls } = options;
  const dir = mkdtempSync(join(tmpdir(), 'leasehold-redis-'));
  let port = 0;
  let tlsPort: number | undefined;
  let child: ChildProcess | undefined;

  const exited = (process: ChildProcess): Promise<void> =>
    process.exitCode !== null || process.signalCode !== null ? Promise.resolve() : new Promise((resolve) => process.once('exit', () => resolve()));

  const launch = async (): Promise<void> => {
    const args = ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--appendonly', 'yes', '--appendfsync', appendfsync, '--save', '', ...extra];
    if (tls !== undefined) {
      args.push('--tls-port', String(tlsPort), '--tls-cert-file', tls.certFile, '--tls-key-file', tls.keyFile, '--tls-ca-cert-file', tls.caFile, '--tls-auth-clients', 'yes');
    }
    const started = spawn(binary, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    started.stderr?.on('data', (data) => (stderr += data.toString()));
    child = started;
    const deadline = Date.now() + START_TIMEOUT_MILLIS;
    while (!(await answers(port))) {
      if (started.exitCode !== null || started.signalCode !== null) throw new Error(`redis-server exited at start: ${stderr.trim()}`);
      if (Date.now() > deadline) throw new Error(`redis-server did not answer on port ${port} within ${START_TIMEOUT_MILLIS} ms`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  };

  const signal = async (name: NodeJS.Signals): Promise<void> => {
    if (child === undefined) return;
    const running = child;
    child = undefined;
    running.kill(name);
    await exited(running);
  };

  // If this process exits without stop() (a crashed test run), the server and its directory go with it.
  const cleanUpAtExit = () => {
    child?.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', cleanUpAtExit);

  // Another process may take the free port before redis-server binds it: try a few.
  for (let attempt = 1; ; attempt++) {
    port = await freePort();
    if (tls !== undefined) tlsPort = await freePort();
    try {
      await launch();
      break;
    } catch (error) {
      await signal('SIGKILL');
      if (attempt === 3) {
        process.off('exit', cleanUpAtExit);
        rmSync(dir, { recursive: true, force: true });
        throw error;
      }
    }
  }

  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    dir,
    tlsPort,
    persistence: `appendonly yes, appendfsync ${appendfsync}, no RDB snapshots`,
    get pid() {
      return child?.pid;
    },
    stop: async () => {
      await signal('SIGTERM');
      process.off('exit', cleanUpAtExit);
      rmSync(dir, { recursive: true, force: true });
    },
    kill: () => signal('SIGKILL'),
    restart: async () => {
      await signal('SIGKILL');
      await launch();
    },
  };
}
