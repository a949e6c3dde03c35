/**
 * Who may connect: a password, ACL users and TLS with client certificates,
 * against private redis-servers (a CA and certificates made by openssl as the
 * file starts). A refused password or certificate rejects with its own typed
 * error that says what failed, never holds the password, and is not an
 * outage: the client does not try again. The same for a Redis Cluster client
 * (a private 3-master cluster with requirepass and masterauth).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import {
  BackendAuthError, BackendTlsError, BackendUnavailableError, JobQueueError, RedisJobQueue, RetryPolicy, type RedisTarget,
} from '../../dist/index.js';
import { withTimeout } from '../support/helpers.js';
import { redisClusterMissing, startRedisCluster, type RedisCluster } from '../support/redis-cluster-harness.js';
import { describeRedis, startRedis, type RedisServer } from '../support/redis-harness.js';

const PASSWORD = 'default-Pa55-secret';
const ALICE_PASSWORD = 'alice-Pa55-secret';

/** A CA, a server certificate for 127.0.0.1 and a client certificate it signed, plus a client certificate of another CA. */
interface Certificates {
  readonly dir: string;
  readonly ca: Buffer;
  readonly cert: Buffer;
  readonly key: Buffer;
  readonly strangerCert: Buffer;
  readonly strangerKey: Buffer;
  file(name: string): string;
}

function makeCertificates(): Certificates {
  const dir = mkdtempSync(join(tmpdir(), 'leasehold-tls-'));
  const file = (name: string) => join(dir, name);
  const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  const ca = (name: string) => openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.crt`, '-days', '1', '-subj', `/CN=${name}`);
  const signed = (name: string, by: string, extensions?: string) => {
    openssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${name}`);
    const extra = extensions === undefined ? [] : ['-extfile', extensions];
    openssl('x509', '-req', '-in', `${name}.csr`, '-CA', `${by}.crt`, '-CAkey', `${by}.key`, '-CAcreateserial', '-out', `${name}.crt`, '-days', '1', ...extra);
  };
  ca('ca');
  ca('stranger-ca');
  writeFileSync(file('server.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n');
  signed('server', 'ca', 'server.ext');
  signed('client', 'ca');
  signed('stranger', 'stranger-ca');
  const read = (name: string) => readFileSync(file(name));
  return {
    dir, file, ca: read('ca.crt'), cert: read('client.crt'), key: read('client.key'), strangerCert: read('stranger.crt'), strangerKey: read('stranger.key'),
  };
}

/** Whether openssl is here to make the certificates. */
function opensslMissing(): boolean {
  try {
    execFileSync('openssl', ['version'], { stdio: 'pipe' });
    return false;
  } catch {
    return true;
  }
}

describeRedis('RedisJobQueue: who may connect', () => {
  let certificates: Certificates;
  let server: RedisServer;
  const opened: RedisJobQueue[] = [];
  const policy = new RetryPolicy(1, 0, 0);
  let names = 0;
  const connect = async (redis: RedisTarget) => {
    const queue = await RedisJobQueue.connect({ redis, name: `auth-${++names}`, policy });
    opened.push(queue);
    return queue;
  };
  /** Connects with `redis`, expecting the connect to reject, and returns its error. */
  const refused = async (redis: RedisTarget): Promise<JobQueueError> => {
    const error = await withTimeout(connect(redis).then(() => 'connected', (e: unknown) => e), 15_000, 'the connect');
    expect(error).toBeInstanceOf(JobQueueError);
    expect(error).not.toBeInstanceOf(BackendUnavailableError);
    const text = `${(error as Error).message} ${inspect(error, { depth: 10 })} ${JSON.stringify(error)}`;
    expect(text).not.toContain(PASSWORD);
    expect(text).not.toContain(ALICE_PASSWORD);
    return error as JobQueueError;
  };
  /** The connections the server accepted so far, this one's own included. */
  const connections = async () => {
    const admin = new Redis(server.port, '127.0.0.1', { password: PASSWORD, maxRetriesPerRequest: 0 });
    try {
      return Number(/total_connections_received:(\d+)/.exec(await admin.info('stats'))![1]);
    } finally {
      admin.disconnect();
    }
  };

  beforeAll(async () => {
    if (opensslMissing()) throw new Error('These tests need openssl on PATH (apt-get install -y openssl)');
    certificates = makeCertificates();
    const file = certificates.file;
    server = await startRedis({
      args: ['--requirepass', PASSWORD, '--user', 'alice', 'on', `>${ALICE_PASSWORD}`, '~*', '&*', '+@all'],
      tls: { certFile: file('server.crt'), keyFile: file('server.key'), caFile: file('ca.crt') },
    });
  });
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((queue) => queue.close()));
  });
  afterAll(async () => {
    await server?.stop();
    if (certificates !== undefined) rmSync(certificates.dir, { recursive: true, force: true });
  });

  it('works with the password in the URL (redis://:password@host)', async () => {
    const queue = await connect(`redis://:${PASSWORD}@127.0.0.1:${server.port}`);
    const id = await queue.submit('t', 'p');
    expect((await queue.poll('w', 1000))!.jobId).toBe(id);
  });

  it('rejects a wrong password with BackendAuthError, without the password, and does not try again', async () => {
    const before = await connections();
    const error = await refused(`redis://:wrong-${PASSWORD}@127.0.0.1:${server.port}`);
    expect(error).toBeInstanceOf(BackendAuthError);
    expect(error.code).toBe('ERR_BACKEND_AUTH');
    expect(error.message).toMatch(/refused to let the default user in: WRONGPASS/);
    expect(error.cause).toBeUndefined();
    // A client that retried would have reconnected within 50 ms; give it ten times that, then count.
    await new Promise((resolve) => setTimeout(resolve, 500));
    // Since the count before: the refused connection, and the connection that counts again.
    expect((await connections()) - before).toBe(2);
  });

  it('rejects a missing password with BackendAuthError saying one is needed', async () => {
    const error = await refused(`redis://127.0.0.1:${server.port}`);
    expect(error).toBeInstanceOf(BackendAuthError);
    expect(error.message).toMatch(/NOAUTH/);
  });

  it('works as an ACL user (redis://user:password@host), and refuses a wrong password or an unknown user, naming the user', async () => {
    const queue = await connect(`redis://alice:${ALICE_PASSWORD}@127.0.0.1:${server.port}`);
    expect(await queue.submit('t')).toBe('J1');
    const wrong = await refused(`redis://alice:${PASSWORD}@127.0.0.1:${server.port}`);
    expect(wrong).toBeInstanceOf(BackendAuthError);
    expect(wrong.message).toMatch(/user "alice".*WRONGPASS/);
    const unknown = await refused(`redis://bob:${ALICE_PASSWORD}@127.0.0.1:${server.port}`);
    expect(unknown).toBeInstanceOf(BackendAuthError);
    expect(unknown.message).toMatch(/user "bob"/);
  });

  it('works over TLS (rediss://) with the CA and a client certificate, password included', async () => {
    const { ca, cert, key } = certificates;
    const queue = await connect({ url: `rediss://:${PASSWORD}@127.0.0.1:${server.tlsPort}`, tls: { ca, cert, key } });
    const id = await queue.submit('t', 'over tls');
    expect(await queue.poll('w', 1000)).toMatchObject({ jobId: id, payload: 'over tls' });
    // The wake-up connection is opened with the same options.
    expect(await queue.waitForWork(10)).toBe(false);
  });

  it.each([
    ['no client certificate', () => ({ ca: certificates.ca }), /ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED|ERR_SSL/],
    ['a client certificate of another CA', () => ({ ca: certificates.ca, cert: certificates.strangerCert, key: certificates.strangerKey }), /ERR_SSL/],
    ['a server certificate it does not trust', () => ({ cert: certificates.cert, key: certificates.key }), /SELF_SIGNED_CERT_IN_CHAIN/],
  ])('rejects a TLS connection with %s with BackendTlsError saying what failed', async (_what, tls, reason) => {
    const error = await refused({ url: `rediss://:${PASSWORD}@127.0.0.1:${server.tlsPort}`, tls: tls() });
    expect(error).toBeInstanceOf(BackendTlsError);
    expect(error.code).toBe('ERR_BACKEND_TLS');
    expect(error.message).toMatch(/TLS handshake with Redis at 127\.0\.0\.1:\d+ failed/);
    expect(error.message).toMatch(reason);
    // The TLS layer's own error (the alert, or the failed verification) is the cause, and its code is in the message.
    expect(error.cause).toMatchObject({ code: expect.stringMatching(reason) });
    expect(error.message).toContain((error.cause as NodeJS.ErrnoException).code);
  });

  it('rejects a cluster client whose TLS handshake fails with BackendTlsError too', async () => {
    const error = await refused({ cluster: [{ host: '127.0.0.1', port: server.tlsPort! }], options: { redisOptions: { password: PASSWORD, tls: { ca: certificates.ca } } } });
    expect(error).toBeInstanceOf(BackendTlsError);
    expect(error.message).toMatch(/TLS handshake with Redis at cluster 127\.0\.0\.1:\d+ failed \(ERR_SSL/);
  });
});

describeRedis('RedisJobQueue on a Redis Cluster: who may connect', () => {
  let cluster: RedisCluster;
  const opened: RedisJobQueue[] = [];
  let names = 0;
  const target = (password?: string, username?: string): RedisTarget => ({ cluster: cluster.nodes, options: { redisOptions: { password, username } } });
  const connect = async (redis: RedisTarget) => {
    const queue = await RedisJobQueue.connect({ redis, name: `cluster-auth-${++names}`, policy: new RetryPolicy(1, 0, 0) });
    opened.push(queue);
    return queue;
  };
  const refused = async (redis: RedisTarget): Promise<JobQueueError> => {
    const error = await withTimeout(connect(redis).then(() => 'connected', (e: unknown) => e), 15_000, 'the connect');
    expect(error).toBeInstanceOf(BackendAuthError);
    expect((error as JobQueueError).code).toBe('ERR_BACKEND_AUTH');
    const text = `${(error as Error).message} ${inspect(error, { depth: 10 })} ${JSON.stringify(error)}`;
    expect(text).not.toContain(PASSWORD);
    return error as JobQueueError;
  };
  /** Connections every node accepted so far, the counting ones included (one per node). */
  const connections = async () => {
    let total = 0;
    for (const { port } of cluster.nodes) total += Number(/total_connections_received:(\d+)/.exec(await cluster.cli(port, 'INFO', 'stats'))![1]);
    return total;
  };

  beforeAll(async () => {
    const missing = redisClusterMissing();
    if (missing !== null) throw new Error(`These tests need a Redis Cluster: ${missing}`);
    cluster = await startRedisCluster(3, { password: PASSWORD });
  }, 60_000);
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((queue) => queue.close()));
  });
  afterAll(async () => {
    await cluster?.stop();
  });

  it('works with the password: a queue on the cluster runs its jobs', async () => {
    const queue = await connect(target(PASSWORD));
    const id = await queue.submit('t', 'p');
    expect((await queue.poll('w', 1000))!.jobId).toBe(id);
  });

  it('rejects a wrong password with BackendAuthError, without the password, and does not try again', async () => {
    const error = await refused(target(`wrong-${PASSWORD}`));
    expect(error.message).toMatch(/^Redis at cluster 127\.0\.0\.1:\d+.* refused to let the default user in: WRONGPASS/);
    const after = await connections();
    // A client that retried would have reconnected within 50 ms; give it ten times that, then count.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect((await connections()) - after, 'connections since the refusal, besides the counting ones').toBe(cluster.nodes.length);
  });

  it('rejects a missing password (NOAUTH) and an unknown user, naming the user, with BackendAuthError', async () => {
    expect((await refused(target())).message).toMatch(/NOAUTH/);
    expect((await refused(target(PASSWORD, 'bob'))).message).toMatch(/user "bob".*WRONGPASS/);
  });
});
