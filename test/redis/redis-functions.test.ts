/**
 * The queue's Lua as a Redis Functions library (src/redis/scripts.ts,
 * src/redis/commands.ts): loaded once into a server and called by FCALL, so
 * no call defines the helpers again; loaded again when a server lost it (a
 * server started empty, a promoted replica), into every master of a
 * Cluster; and on a server without Functions, each command runs as a script
 * of its own by EVALSHA. The .lua files ship with the package and are found
 * from dist/ as installed.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { afterAll, afterEach, expect, it } from 'vitest';
import { RedisJobQueue, RetryPolicy } from '../../dist/index.js';
import { library } from '../../dist/redis/scripts.js';
import { useRedisCluster } from '../support/redis-cluster-harness.js';
import { describeRedis, onePerFile, startRedis } from '../support/redis-harness.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const policy = new RetryPolicy(3, 0, 0);
let names = 0;
const fresh = () => `functions-${process.pid}-${++names}`;

/** Calls of each command since the last CONFIG RESETSTAT, from INFO commandstats. */
async function commandCalls(admin: Redis): Promise<Record<string, number>> {
  const calls: Record<string, number> = {};
  for (const [, command, count] of (await admin.info('commandstats')).matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) calls[command!] = Number(count);
  return calls;
}

/** A few calls of every kind a worker makes: submit, poll, complete, stats. */
async function work(queue: RedisJobQueue): Promise<void> {
  const { succeeded } = await queue.stats();
  await queue.submitMany([{ type: 't', payload: 'a' }, { type: 't', payload: 'b' }]);
  for (let i = 0; i < 2; i++) {
    const lease = (await queue.poll('w', 60_000))!;
    await queue.complete(lease.jobId, lease.token);
  }
  expect(await queue.stats()).toMatchObject({ pending: 0, running: 0, succeeded: succeeded + 2 });
}

describeRedis('The queue\'s Lua as a Redis Functions library', () => {
  const server = onePerFile(() => startRedis());
  const opened: Array<{ close(): Promise<void> } | Redis> = [];
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((item) => (item instanceof Redis ? item.quit() : item.close())));
  });
  const open = async (url: string) => {
    const queue = await RedisJobQueue.connect({ redis: url, name: fresh(), policy });
    opened.push(queue);
    return queue;
  };
  const adminOf = (url: string) => {
    const admin = new Redis(url);
    opened.push(admin);
    return admin;
  };

  it('loads the library once, then runs every call by FCALL: no EVAL, no EVALSHA', async () => {
    const { url } = await server();
    const admin = adminOf(url);
    await admin.function('FLUSH');
    await admin.config('RESETSTAT');
    await work(await open(url));
    await work(await open(url));
    const calls = await commandCalls(admin);
    expect(calls['function|load']).toBe(1);
    expect(calls['fcall']).toBeGreaterThanOrEqual(2 * 7);
    expect(calls['eval']).toBeUndefined();
    expect(calls['evalsha']).toBeUndefined();
    const libraries = (await admin.function('LIST')) as unknown[][];
    expect(libraries.map((entry) => entry[1])).toEqual([library().name]);
  });

  it('loads the library again when the server lost it, and runs the call that found it missing once', async () => {
    const { url } = await server();
    const admin = adminOf(url);
    const queue = await open(url);
    expect(await queue.submit('t', 'first')).toBe('J1');
    // What a server started empty, or a replica promoted before the library reached it, holds.
    await admin.function('FLUSH');
    await admin.config('RESETSTAT');
    expect(await queue.submit('t', 'second')).toBe('J2');
    expect(await queue.stats()).toMatchObject({ pending: 2 });
    const calls = await commandCalls(admin);
    expect(calls['function|load']).toBe(1);
    // The FCALL that found nothing (it did not run), the same call again, and stats.
    expect(calls['fcall']).toBe(3);
  });

  it('runs every command as a script of its own (EVALSHA) on a server without Functions', async () => {
    const bare = await startRedis({ args: ['--rename-command', 'FCALL', '', '--rename-command', 'FUNCTION', ''] });
    try {
      const admin = adminOf(bare.url);
      await work(await open(bare.url));
      const calls = await commandCalls(admin);
      expect(calls['fcall']).toBeUndefined();
      expect(calls['evalsha']).toBeGreaterThanOrEqual(6);
      // Each command's script was sent once, when EVALSHA found it missing.
      expect(calls['eval']).toBeLessThanOrEqual(4);
    } finally {
      await Promise.all(opened.splice(0).map((item) => (item instanceof Redis ? item.quit() : item.close())));
      await bare.stop();
    }
  });

  it('ships the .lua files in the package, and the installed package finds them from dist/', async () => {
    const [pack] = JSON.parse(execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: ROOT, encoding: 'utf8' })) as [{ files: { path: string }[] }];
    const shipped = pack.files.map((file) => file.path);
    expect(shipped).toEqual(expect.arrayContaining(['src/redis/lua/submit.lua', 'src/redis/lua/includes/call.lua', 'dist/redis/scripts.js']));
    // The package as installed: only what it ships, under node_modules/leasehold, with ioredis beside it.
    const app = mkdtempSync(join(tmpdir(), 'leasehold-installed-'));
    try {
      const installed = join(app, 'node_modules', 'leasehold');
      for (const path of shipped) {
        mkdirSync(join(installed, path, '..'), { recursive: true });
        cpSync(join(ROOT, path), join(installed, path));
      }
      // Its dependencies, and ioredis, as npm would install them (from this repository's node_modules).
      const { dependencies } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
      for (const name of [...Object.keys(dependencies), 'ioredis']) symlinkSync(join(ROOT, 'node_modules', name), join(app, 'node_modules', name));
      writeFileSync(join(app, 'package.json'), JSON.stringify({ type: 'module', private: true }));
      writeFileSync(join(app, 'main.js'), `
        import { RedisJobQueue, RetryPolicy } from 'leasehold';
        const queue = await RedisJobQueue.connect({ redis: process.argv[2], name: 'installed', policy: new RetryPolicy(3, 0, 0) });
        const id = await queue.submit('t', 'p');
        const lease = await queue.poll('w', 1000);
        await queue.complete(lease.jobId, lease.token);
        console.log(id, (await queue.view(id)).status);
        await queue.close();
      `);
      const run = spawnSync(process.execPath, ['main.js', (await server()).url], { cwd: app, encoding: 'utf8' });
      expect(run.stderr).toBe('');
      expect(run.stdout).toBe('J1 SUCCEEDED\n');
    } finally {
      rmSync(app, { recursive: true, force: true });
    }
  });
});

describeRedis('The library on a Redis Cluster', () => {
  const { cluster: clusterOf, track } = useRedisCluster();
  const admins: Redis[] = [];
  afterAll(() => admins.forEach((admin) => admin.disconnect()));

  it('is loaded into every master, and again into one that lost it', async () => {
    const cluster = clusterOf();
    const masters = cluster.nodes.map(({ port }) => {
      const admin = new Redis(port, '127.0.0.1');
      admins.push(admin);
      return admin;
    });
    const loaded = async () => Promise.all(masters.map(async (admin) => ((await admin.function('LIST')) as unknown[][]).map((entry) => entry[1])));
    const queue = track(await RedisJobQueue.connect({ redis: { cluster: cluster.nodes }, name: fresh(), policy }));
    await work(queue);
    expect(await loaded()).toEqual(masters.map(() => [library().name]));
    // The master of this queue's slot loses it (a replica promoted before the load reached it): loaded again.
    const port = await cluster.masterOf(`{${(queue.share() as { name: string }).name}}`);
    const own = masters[cluster.nodes.findIndex((node) => node.port === port)]!;
    await own.function('FLUSH');
    await work(queue);
    expect(await loaded()).toEqual(masters.map(() => [library().name]));
  });
});
