/**
 * A Redis master, two replicas of it and a redis-sentinel watching them, on
 * free loopback ports, for the failover tests. The sentinel alone decides
 * (quorum 1) and takes a master for down after DOWN_AFTER_MILLIS without an
 * answer; `kill()` of the master (SIGKILL) then makes it promote a replica,
 * and the other replica follows the promoted one (so that a queue asking for
 * one replica still has one after the failover).
 *
 * Without a redis-sentinel binary the suite is skipped, loudly, or failed
 * when LEASEHOLD_REQUIRE_REDIS=1 (CI: .ci/run installs it).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { describe, it } from 'vitest';
import { findBinary, freePort, redisMissing, startRedis, type RedisServer } from '../../bench/redis-server.js';
import { pause } from '../support/helpers.js';

/** The name the sentinel knows the master by. */
export const MASTER_NAME = 'leasehold';
/** How long the master must be silent before the sentinel takes it for down. */
const DOWN_AFTER_MILLIS = 1_000;
/** How long a wait for the servers to reach a state may take before the test fails: a hang, not a pace. */
const WAIT_MILLIS = 60_000;

export function sentinelMissing(): string | null {
  return redisMissing() ?? (findBinary('redis-sentinel') === undefined
    ? 'no redis-sentinel binary on PATH, in /usr/bin or in /usr/sbin: install it with `apt-get install -y redis-sentinel` (.ci/run does this when it can)'
    : null);
}

/** `describe` for a suite that needs redis-server and redis-sentinel: runs, fails (LEASEHOLD_REQUIRE_REDIS=1) or skips loudly. */
export function describeSentinel(name: string, body: () => void): void {
  const missing = sentinelMissing();
  if (missing === null) {
    describe(name, body);
  } else if (process.env['LEASEHOLD_REQUIRE_REDIS'] === '1') {
    describe(name, () => {
      it('needs redis-server and redis-sentinel (LEASEHOLD_REQUIRE_REDIS=1)', () => {
        throw new Error(`Failover tests cannot run: ${missing}`);
      });
    });
  } else {
    console.warn(`\n*** Failover tests were SKIPPED (${name}): ${missing} ***\n`);
    describe.skip(name, body);
  }
}

export interface SentinelSetup {
  readonly master: RedisServer;
  readonly replicas: readonly RedisServer[];
  /** The sentinel's port. */
  readonly sentinelPort: number;
  /** The queue's `redis` target: ioredis follows the sentinel to the master, whichever it is. */
  readonly target: { sentinels: { host: string; port: number }[]; name: string };
  /** The port of the master the sentinel names now. */
  masterPort(): Promise<number>;
  /** Resolves once the sentinel names a master other than `port`, that master takes writes, and a replica follows it. */
  failedOverFrom(port: number): Promise<number>;
  stop(): Promise<void>;
}

/** Polls `condition` until it holds; fails after WAIT_MILLIS, saying what it waited for. */
async function until(what: string, condition: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + WAIT_MILLIS;
  while (!(await condition().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`timed out after ${WAIT_MILLIS} ms waiting for ${what}`);
    await pause(50);
  }
}

export async function startSentinel(): Promise<SentinelSetup> {
  const master = await startRedis();
  const replicas = await Promise.all([1, 2].map(() => startRedis({ args: ['--replicaof', '127.0.0.1', String(master.port)] })));
  const dir = mkdtempSync(join(tmpdir(), 'leasehold-sentinel-'));
  const sentinelPort = await freePort();
  const config = join(dir, 'sentinel.conf');
  writeFileSync(config, [
    `port ${sentinelPort}`, 'bind 127.0.0.1', `dir ${dir}`,
    `sentinel monitor ${MASTER_NAME} 127.0.0.1 ${master.port} 1`,
    `sentinel down-after-milliseconds ${MASTER_NAME} ${DOWN_AFTER_MILLIS}`,
    `sentinel failover-timeout ${MASTER_NAME} 10000`,
    '',
  ].join('\n'));
  const sentinel: ChildProcess = spawn(findBinary('redis-sentinel')!, [config], { stdio: 'ignore' });
  const ask = new Redis(sentinelPort, '127.0.0.1', { lazyConnect: true, retryStrategy: () => 50 });
  ask.on('error', () => undefined);
  const adminOf = (port: number) => {
    const admin = new Redis(port, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    admin.on('error', () => undefined);
    return admin;
  };
  const masterPort = async () => Number(((await ask.call('SENTINEL', 'get-master-addr-by-name', MASTER_NAME)) as string[])[1]);
  const replicasKnown = async () => ((await ask.call('SENTINEL', 'replicas', MASTER_NAME)) as unknown[]).length === replicas.length;
  const inSync = async (replica: RedisServer) => {
    const admin = adminOf(replica.port);
    try {
      return (await admin.info('replication')).includes('master_link_status:up');
    } finally {
      admin.disconnect();
    }
  };
  for (const replica of replicas) await until(`replica ${replica.port} to sync with the master`, () => inSync(replica));
  await until('the sentinel to know the master and its replicas', replicasKnown);
  return {
    master,
    replicas,
    sentinelPort,
    target: { sentinels: [{ host: '127.0.0.1', port: sentinelPort }], name: MASTER_NAME },
    masterPort,
    failedOverFrom: async (port) => {
      await until(`the sentinel to promote a replica of ${port}`, async () => (await masterPort()) !== port);
      const promoted = await masterPort();
      await until(`port ${promoted} to be a master`, async () => {
        const admin = adminOf(promoted);
        try {
          const replication = await admin.info('replication');
          return replication.includes('role:master') && /connected_slaves:[1-9]/.test(replication);
        } finally {
          admin.disconnect();
        }
      });
      return promoted;
    },
    stop: async () => {
      ask.disconnect();
      sentinel.kill('SIGKILL');
      await Promise.all([master, ...replicas].map((server) => server.stop()));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
