/**
 * Connection errors that keep their cause: a connect that fails says why, in
 * its message and as `cause` (the system error: ECONNREFUSED, ENOTFOUND), for
 * one server and for a cluster; a URL of another scheme is a bad argument,
 * refused before any connection is opened. (TLS failures keep theirs too:
 * redis-auth.test.ts.)
 */
import { Redis } from 'ioredis';
import { afterAll, expect, it } from 'vitest';
import { BackendUnavailableError, InvalidArgumentError, RedisJobQueue, RetryPolicy } from '../../dist/index.js';
import { thrownBy } from '../support/helpers.js';
import { describeRedis, fileRedis, startRedis } from '../support/redis-harness.js';

type Target = Parameters<typeof RedisJobQueue.connect>[0]['redis'];

const connect = (redis: Target) => RedisJobQueue.connect({ redis, name: `errors-${process.pid}`, policy: new RetryPolicy(1, 0, 0) });

describeRedis('Connection errors that keep their cause', () => {
  const admins: Redis[] = [];
  afterAll(() => admins.forEach((admin) => admin.disconnect()));

  /** A port where no Redis listens (one was there a moment ago). */
  const deadPort = async () => {
    const gone = await startRedis();
    await gone.stop();
    return gone.port;
  };

  it('says ECONNREFUSED, in the message and as the cause, for a port where nothing listens', async () => {
    const port = await deadPort();
    for (const target of [`redis://127.0.0.1:${port}`, { cluster: [{ host: '127.0.0.1', port }] }]) {
      const error = await thrownBy(() => connect(target));
      expect(error).toBeInstanceOf(BackendUnavailableError);
      expect((error as Error).message).toMatch(new RegExp(`^Could not connect to Redis at (cluster )?127\\.0\\.0\\.1:${port}: connect ECONNREFUSED 127\\.0\\.0\\.1:${port}$`));
      expect((error as Error).cause).toMatchObject({ code: 'ECONNREFUSED', syscall: 'connect' });
    }
  });

  it('says the resolver\'s error (ENOTFOUND), in the message and as the cause, for a host that does not exist', async () => {
    // `.invalid` never resolves (RFC 2606); a machine without DNS says EAI_AGAIN instead.
    for (const target of ['redis://no-such-host.invalid:6379', { host: 'no-such-host.invalid', port: 6379 }]) {
      const error = await thrownBy(() => connect(target));
      expect(error).toBeInstanceOf(BackendUnavailableError);
      expect((error as Error).message).toMatch(/^Could not connect to Redis at no-such-host\.invalid:6379: getaddrinfo (ENOTFOUND|EAI_AGAIN) no-such-host\.invalid$/);
      expect((error as Error).cause).toMatchObject({ code: expect.stringMatching(/^(ENOTFOUND|EAI_AGAIN)$/), syscall: 'getaddrinfo' });
    }
  });

  it('refuses a URL of another scheme as a bad argument, without connecting to the server it names', async () => {
    const server = await fileRedis();
    const admin = new Redis(server.url);
    admins.push(admin);
    const clients = async () => Number(/connected_clients:(\d+)/.exec(await admin.info('clients'))![1]);
    const before = await clients();
    const at = `//127.0.0.1:${server.port}`;
    for (const [target, scheme] of [[`http:${at}`, 'http:'], [{ url: `HTTPS:${at}` }, 'https:'], [`tcp:${at}`, 'tcp:']] as const) {
      const error = await thrownBy(() => connect(target));
      expect(error).toBeInstanceOf(InvalidArgumentError);
      expect((error as Error).message).toBe(`Expected \`redis\` to be a redis:// or rediss:// URL, got one of scheme "${scheme}"`);
    }
    expect(await clients()).toBe(before);
    expect(await admin.dbsize()).toBe(0);
    // The schemes Redis has are taken, in any case.
    const queue = await connect(`REDIS:${at}`);
    await queue.close();
  });
});
