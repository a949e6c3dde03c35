/**
 * A private Redis Cluster of `masters` masters, for the tests and the
 * benchmarks: each node is a private redis-server (redis-server.ts) started
 * with cluster mode on, joined by `redis-cli --cluster create` (which wants 3
 * masters at least); up once every node reports `cluster_state:ok` and every
 * replica is in sync. With `replicasPerMaster`, each master gets that many
 * replicas (`--cluster-replicas`), and a master that dies is replaced by one
 * of them (the Cluster's own failover). `stop()` stops every node and
 * removes every directory, and so does a failed start. With `password`, every
 * node requires it of clients and of each other (`requirepass`, `masterauth`).
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { findBinary, startRedis, type RedisServer, type RedisServerOptions } from './redis-server.js';

const run = promisify(execFile);
const READY_TIMEOUT_MILLIS = 30_000;

export interface RedisCluster {
  /** The nodes, as RedisJobQueue's `{ cluster }` target takes them. */
  readonly nodes: readonly { readonly host: string; readonly port: number }[];
  /** Every node, masters and replicas, in the order they were started (which is master or replica changes with failovers). */
  readonly servers: readonly RedisServer[];
  /** Runs redis-cli against the node on `port` and returns its output, e.g. `cli(port, 'CLUSTER', 'NODES')`. */
  cli(port: number, ...args: string[]): Promise<string>;
  /** The port of the master serving `key`'s slot, from CLUSTER KEYSLOT and CLUSTER NODES (as the node on `askPort` sees them). */
  masterOf(key: string, askPort?: number): Promise<number>;
  /** Stops every node and removes their directories. */
  stop(): Promise<void>;
}

/** Why no cluster can be started here, or null if one can. */
export function redisClusterMissing(): string | null {
  if (findBinary() === undefined) return 'no redis-server binary (apt-get install -y redis-server)';
  if (findBinary('redis-cli') === undefined) return 'no redis-cli binary (apt-get install -y redis-tools)';
  return null;
}

export interface RedisClusterOptions extends RedisServerOptions {
  /** The password every node requires (of clients, and of the other nodes). */
  readonly password?: string;
  /** Replicas of each master (0: none, no failover). */
  readonly replicasPerMaster?: number;
}

export async function startRedisCluster(masters = 3, options: RedisClusterOptions = {}): Promise<RedisCluster> {
  if (masters < 3) throw new Error(`redis-cli --cluster create needs 3 masters at least, not ${masters}`);
  const missing = redisClusterMissing();
  if (missing !== null) throw new Error(`Cannot start a Redis Cluster: ${missing}`);
  const cliBinary = findBinary('redis-cli')!;
  const { password, replicasPerMaster = 0, ...serverOptions } = options;
  const auth = password === undefined ? [] : ['-a', password, '--no-auth-warning'];
  const cli = async (port: number, ...args: string[]) => (await run(cliBinary, ['-h', '127.0.0.1', '-p', String(port), ...auth, ...args])).stdout;
  // The announced address: a node that never met another would otherwise tell clients an empty one.
  const nodeArgs = [
    '--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf', '--cluster-node-timeout', '5000', '--cluster-announce-ip', '127.0.0.1',
    ...(password === undefined ? [] : ['--requirepass', password, '--masterauth', password]),
  ];
  const started = await Promise.allSettled(
    Array.from({ length: masters * (1 + replicasPerMaster) }, () => startRedis({ ...serverOptions, args: [...nodeArgs, ...(serverOptions.args ?? [])] })),
  );
  const servers = started.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
  const stop = async () => {
    await Promise.all(servers.map((server) => server.stop()));
  };
  try {
    const failed = started.find((result) => result.status === 'rejected');
    if (failed !== undefined) throw (failed as PromiseRejectedResult).reason;
    await run(cliBinary, [...auth, '--cluster', 'create', ...servers.map((server) => `127.0.0.1:${server.port}`), '--cluster-replicas', String(replicasPerMaster), '--cluster-yes']);
    await untilEveryNodeIsOk(servers, cli);
    await untilReplicasAreInSync(servers, cli);
  } catch (error) {
    await stop();
    throw error;
  }
  const masterOf = async (key: string, port = servers[0]!.port) => {
    const slot = Number(await cli(port, 'CLUSTER', 'KEYSLOT', key));
    const owner = mastersOf(await cli(port, 'CLUSTER', 'NODES')).find(({ ranges }) => ranges.some(([from, to]) => slot >= from && slot <= to));
    if (owner === undefined) throw new Error(`No master serves slot ${slot} (of ${key})`);
    return owner.port;
  };
  return { nodes: servers.map((server) => ({ host: '127.0.0.1', port: server.port })), servers, cli, masterOf, stop };
}

/** The masters in CLUSTER NODES output, with the slot ranges each serves (a master marked failed serves none). */
export function mastersOf(nodes: string): Array<{ port: number; ranges: Array<readonly [number, number]> }> {
  return nodes.trim().split('\n').map((line) => line.split(' ')).filter((fields) => fields[2]!.includes('master') && !fields[2]!.includes('fail')).map((fields) => ({
    port: Number(/:(\d+)@/.exec(fields[1]!)![1]),
    ranges: fields.slice(8).map((range) => {
      const [from, to = from] = range.split('-').map(Number);
      return [from!, to!] as const;
    }),
  }));
}

/** Waits until every node says the cluster is ok (slots covered, every node agreeing). */
async function untilEveryNodeIsOk(servers: readonly RedisServer[], cli: RedisCluster['cli']): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MILLIS;
  for (;;) {
    const infos = await Promise.all(servers.map((server) => cli(server.port, 'CLUSTER', 'INFO')));
    if (infos.every((info) => info.includes('cluster_state:ok'))) return;
    if (Date.now() > deadline) throw new Error(`The Redis Cluster was not ok within ${READY_TIMEOUT_MILLIS} ms: ${infos.join(' | ')}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Waits until every replica's link to its master is up (the Cluster's failover needs a replica with the master's data). */
async function untilReplicasAreInSync(servers: readonly RedisServer[], cli: RedisCluster['cli']): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MILLIS;
  for (;;) {
    const infos = await Promise.all(servers.map((server) => cli(server.port, 'INFO', 'replication')));
    if (infos.every((info) => info.includes('role:master') || info.includes('master_link_status:up'))) return;
    if (Date.now() > deadline) throw new Error(`The Redis Cluster's replicas were not in sync within ${READY_TIMEOUT_MILLIS} ms: ${infos.join(' | ')}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
