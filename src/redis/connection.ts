/**
 * The Redis client a queue talks through — one server or a Redis Cluster —
 * set up so that a broken connection can never repeat a call, and what its
 * failures mean for a caller.
 */
// Types only: ioredis is loaded by the first connect, so that importing leasehold costs nothing for it.
import type { Cluster, ClusterOptions, Redis, RedisOptions } from 'ioredis';
import { BackendAuthError, BackendTlsError, BackendUnavailableError, InvalidArgumentError, describe, thrownText } from '../errors.js';
import { redisClients } from '../optional.js';

/** A Redis Cluster: some of its nodes (the client discovers the rest) and ioredis Cluster options. */
export interface RedisClusterTarget {
  readonly cluster: readonly { readonly host: string; readonly port: number }[];
  readonly options?: ClusterOptions;
}

/** One server: ioredis options, and if given, a URL that fills in the rest (`{ url: 'rediss://...', tls: { ca, cert, key } }`). */
export type RedisServerTarget = RedisOptions & { readonly url?: string };

/**
 * Where the queue's Redis is: a URL (`redis://[[user]:password@]host:port[/db]`,
 * `rediss://` for TLS), ioredis options (with a URL or without), or a cluster.
 */
export type RedisTarget = string | RedisServerTarget | RedisClusterTarget;

/** A connection to one server or to a cluster: the commands the queue sends are the same. */
export type RedisClient = Redis | Cluster;

export function isClusterTarget(target: RedisTarget): target is RedisClusterTarget {
  return typeof target === 'object' && target !== null && 'cluster' in target;
}

/** Refuses a `redis` option that is no target: not a URL or an object, or a cluster without nodes of a host and a port. */
export function checkTarget(target: unknown): asserts target is RedisTarget {
  if (typeof target !== 'string' && (target === null || typeof target !== 'object')) {
    throw new InvalidArgumentError(`Expected \`redis\` to be a URL, ioredis options or { cluster: nodes }, got ${describe(target)}`);
  }
  if (!isClusterTarget(target)) {
    checkScheme(typeof target === 'string' ? target : (target as RedisServerTarget).url);
    return;
  }
  const nodes: unknown = target.cluster;
  const isNode = (node: unknown) =>
    node !== null && typeof node === 'object' && typeof (node as { host: unknown }).host === 'string' && isPort((node as { port: unknown }).port);
  if (!Array.isArray(nodes) || nodes.length === 0 || !nodes.every(isNode)) {
    throw new InvalidArgumentError(`Expected \`redis.cluster\` to be a non-empty array of { host, port }, got ${describe(nodes)}`);
  }
}

/** Redis's own URL schemes: `redis://`, and `rediss://` for TLS. */
const REDIS_SCHEMES = new Set(['redis:', 'rediss:']);

/** Refuses a URL of another scheme (`http://...`), which ioredis would take for a host and report unreachable. */
function checkScheme(url: unknown): void {
  if (typeof url !== 'string') return;
  const scheme = /^([a-z][a-z0-9+.-]*:)\/\//i.exec(url)?.[1]?.toLowerCase();
  if (scheme !== undefined && !REDIS_SCHEMES.has(scheme)) {
    throw new InvalidArgumentError(`Expected \`redis\` to be a redis:// or rediss:// URL, got one of scheme ${JSON.stringify(scheme)}`);
  }
}

function isPort(port: unknown): boolean {
  return Number.isInteger(port) && (port as number) >= 1 && (port as number) <= 65_535;
}

/**
 * Options no caller may change: they are what makes a call run at most once.
 * ioredis by default resends, after reconnecting, a command whose reply was
 * lost — a second submit, or a second poll whose lease nobody holds — and
 * queues calls made while disconnected for a server that may not come back.
 */
const AT_MOST_ONCE: RedisOptions = {
  autoResendUnfulfilledCommands: false,
  // Fails the commands in flight as soon as the connection drops (0 reconnect attempts to wait for).
  maxRetriesPerRequest: 0,
  enableOfflineQueue: false,
  lazyConnect: true,
};

/**
 * The cluster's share of the same rule. A Cluster client resends a command
 * whose node connection closed (`retryDelayOnFailover`): that one may have
 * run, so it is off. MOVED, ASK, TRYAGAIN and CLUSTERDOWN replies stay
 * followed: they say the command did not run on that node.
 */
const CLUSTER_AT_MOST_ONCE: ClusterOptions = { enableOfflineQueue: false, lazyConnect: true, retryDelayOnFailover: 0 };

/** Unless the caller's options say otherwise, reconnects in the background, quickly at first, then every second. */
const retryStrategy = (times: number): number => Math.min(50 * times, 1000);

/** A cluster client's first startup node: where a failed TLS connect is probed (see tlsRefusal). */
const firstNodes = new WeakMap<RedisClient, { readonly host: string; readonly port: number }>();

/** A client that is not yet connected; `connect()` it. */
export async function createClient(target: RedisTarget, commandTimeoutMillis: number): Promise<RedisClient> {
  const { Redis, Cluster } = await redisClients();
  if (isClusterTarget(target)) {
    const { options = {} } = target;
    const redisOptions = { ...options.redisOptions, ...AT_MOST_ONCE, commandTimeout: commandTimeoutMillis };
    const client = quiet(new Cluster([...target.cluster], { ...options, ...CLUSTER_AT_MOST_ONCE, redisOptions }));
    firstNodes.set(client, target.cluster[0]!);
    return client;
  }
  const { url, ...given }: RedisServerTarget = typeof target === 'string' ? { url: target } : target;
  const options: RedisOptions = { retryStrategy, ...given, ...AT_MOST_ONCE, commandTimeout: commandTimeoutMillis };
  try {
    return quiet(url === undefined ? new Redis(options) : new Redis(url, options));
  } catch (error) {
    // ioredis parses the URL as it is made: one it cannot parse (a port past 65535) throws here.
    throw new InvalidArgumentError(`Expected \`redis\` to be a URL ioredis can parse, got ${describe(url)}: ${thrownText(error)}`);
  }
}

/** Another client to the same server or cluster with the same options, not yet connected. */
export function duplicateClient(client: RedisClient): RedisClient {
  const copy = quiet(client.isCluster ? (client as Cluster).duplicate() : (client as Redis).duplicate());
  const first = firstNodes.get(client);
  if (first !== undefined) firstNodes.set(copy, first);
  return copy;
}

/** Connection errors reach callers as rejections; without a listener ioredis would also print each one. */
function quiet<T extends RedisClient>(client: T): T {
  client.on('error', () => undefined);
  return client;
}

/** Server replies that refuse a command before it runs: the server is there but cannot serve now (MOVED, ASK: a Cluster node no longer serves the slot, and the client could not follow it). */
const UNAVAILABLE_REPLIES = /^(LOADING|BUSY|MISCONF|OOM|READONLY|MASTERDOWN|NOREPLICAS|TRYAGAIN|CLUSTERDOWN|MOVED|ASK)\b/;

/**
 * The error a caller gets for a failure of `client` while running a command
 * that was sent. A reply error other than "cannot serve now" is a bug
 * (a script that failed) and is passed on as it is.
 */
export function backendError(error: unknown, where: string): unknown {
  // Ours already (replicas that did not confirm a write): it says what happened.
  if (error instanceof BackendUnavailableError) return error;
  // ioredis's ReplyError: the server answered with an error (matched by name, like every error that crosses a boundary).
  if (error instanceof Error && error.name === 'ReplyError') {
    const { message } = error;
    if (!UNAVAILABLE_REPLIES.test(message)) return error;
    return new BackendUnavailableError(`Redis at ${where} refused the call, which changed nothing: ${message}`, { cause: error });
  }
  const reason = thrownText(error);
  return new BackendUnavailableError(
    `The connection to Redis at ${where} failed while the call was in flight (${reason}): it may or may not have taken effect`,
    { cause: error },
  );
}

/**
 * Connects `client`; if it cannot, closes it and rejects with the reason:
 * BackendAuthError or BackendTlsError when the server refused who connects
 * (ioredis reports that as an 'error' event, then rejects with "Connection is
 * closed"; a Cluster client as a 'node error' event, then rejects with "None
 * of startup nodes is available"), BackendUnavailableError otherwise.
 */
export async function connectClient(client: RedisClient, where: string, user: string | undefined): Promise<void> {
  let refused: Error | undefined;
  // The first system error (ECONNREFUSED, ENOTFOUND...): the reason behind ioredis's own "Connection is closed".
  let systemError: Error | undefined;
  const note = (error: unknown) => {
    if (refused === undefined && error instanceof Error && (isAuthRefusal(error) || isTlsFailure(error))) refused = error;
    if (systemError === undefined && isSystemError(error)) systemError = error;
  };
  client.on('error', note);
  client.on('node error', note);
  const connecting = client.connect();
  // A Cluster client whose nodes never report a usable cluster would wait forever: give up, as one server's connectTimeout does.
  connecting.catch(() => undefined);
  let timer: NodeJS.Timeout | undefined;
  const tooLong = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`not ready within ${READY_TIMEOUT_MILLIS} ms`)), READY_TIMEOUT_MILLIS);
  });
  try {
    await Promise.race([connecting, tooLong]);
  } catch (error) {
    client.disconnect();
    refused ??= await tlsRefusal(client);
    systemError ??= await clusterNodeRefusal(client);
    throw connectError(refused ?? systemError ?? error, where, user);
  } finally {
    clearTimeout(timer);
    client.off('error', note);
    client.off('node error', note);
  }
  await selectDatabase(client, where);
}

/**
 * Makes sure the client is in the database it was given (a URL's `/db`, or
 * `db`): ioredis reports a SELECT the server refused (an index it does not
 * have) only as an 'error' event, and goes on in database 0, where the
 * queue would then share keys with another. Selected again here, where a
 * refusal rejects; on failure the client is closed.
 */
async function selectDatabase(client: RedisClient, where: string): Promise<void> {
  const db = client.isCluster ? 0 : ((client as Redis).options.db ?? 0);
  if (db === 0) return;
  try {
    await (client as Redis).select(db);
  } catch (error) {
    client.disconnect();
    // The server's answer (ERR DB index is out of range): the target names a database that is not there.
    if (error instanceof Error && error.name === 'ReplyError') {
      throw new InvalidArgumentError(`Redis at ${where} has no database ${db} to use: ${error.message}`);
    }
    throw connectError(error, where, userOf(client));
  }
}

/** How long a connect may take before it rejects as an outage. */
const READY_TIMEOUT_MILLIS = 20_000;

/** For a TLS connection that failed (to one server, or a cluster's first node), the server's refusal of this client's certificate, if that is why (see tls-probe.ts). */
async function tlsRefusal(client: RedisClient): Promise<Error | undefined> {
  const { host, port, tls } = client.isCluster
    ? { ...firstNodes.get(client), tls: (client as Cluster).options.redisOptions?.tls }
    : (client as Redis).options;
  if (tls === undefined) return undefined;
  const { probeTls } = await import('./tls-probe.js');
  const error = await probeTls({ host, port, ...tls });
  return error !== undefined && isTlsFailure(error) ? error : undefined;
}

/** For a cluster client that could not connect, why its first node cannot be reached, if it cannot (see socket-probe.ts). */
async function clusterNodeRefusal(client: RedisClient): Promise<Error | undefined> {
  const first = client.isCluster ? firstNodes.get(client) : undefined;
  if (first === undefined) return undefined;
  const { probeSocket } = await import('./socket-probe.js');
  const error = await probeSocket(first.host, first.port);
  return isSystemError(error) ? error : undefined;
}

/** Server replies refusing the credentials (or their absence), before any command runs. */
const AUTH_REPLIES = /^(WRONGPASS|NOAUTH|NOPERM|ERR invalid password|ERR AUTH)/;

function isAuthRefusal(error: Error): boolean {
  return error.name === 'ReplyError' && AUTH_REPLIES.test(error.message);
}

/** Node's TLS errors: OpenSSL alerts (ERR_SSL_...), its own checks (ERR_TLS_...), and certificate verification codes. */
function isTlsFailure(error: Error): boolean {
  const { code } = error as NodeJS.ErrnoException;
  return typeof code === 'string' && /^ERR_(SSL|TLS)_|CERT|SELF_SIGNED|UNABLE_TO_/.test(code);
}

/** An error of the operating system's (a socket's or the resolver's): its `code` is an errno name like ECONNREFUSED or ENOTFOUND. */
function isSystemError(error: unknown): error is NodeJS.ErrnoException {
  if (!(error instanceof Error)) return false;
  const { code, syscall } = error as NodeJS.ErrnoException;
  return typeof code === 'string' && /^E[A-Z0-9_]+$/.test(code) && typeof syscall === 'string';
}

/** The error for a connection that could not be opened (refused, timed out, or the server said no). */
function connectError(error: unknown, where: string, user: string | undefined): Error {
  const reason = thrownText(error);
  if (error instanceof Error && isAuthRefusal(error)) {
    // The reply's first word and text say what was wrong; the command it answered held the password, so it is not kept.
    const who = user === undefined ? 'the default user' : `user ${JSON.stringify(user)}`;
    return new BackendAuthError(`Redis at ${where} refused to let ${who} in: ${reason}`);
  }
  if (error instanceof Error && isTlsFailure(error)) {
    const code = (error as NodeJS.ErrnoException).code;
    return new BackendTlsError(`The TLS handshake with Redis at ${where} failed (${code}): ${reason}`, { cause: error });
  }
  if (isSystemError(error) && !reason.includes(error.code!)) {
    return new BackendUnavailableError(`Could not connect to Redis at ${where} (${error.code}): ${reason}`, { cause: error });
  }
  return new BackendUnavailableError(`Could not connect to Redis at ${where}: ${reason}`, { cause: error });
}

/** The error for a call not sent because the client is not connected. */
export function notConnectedError(client: RedisClient, where: string): BackendUnavailableError {
  return new BackendUnavailableError(`Redis at ${where} is unreachable (the client is ${client.status}): the call was not sent and changed nothing`);
}

/** The user the client logs in as, if not the default one: for messages (a user name is not a secret). */
export function userOf(client: RedisClient): string | undefined {
  const options = client.isCluster ? (client as Cluster).options.redisOptions : (client as Redis).options;
  return options?.username || undefined;
}

/** A readable address of the client's server (or the cluster's first nodes), for messages: never a password. */
export function addressOf(client: RedisClient, target: RedisTarget): string {
  if (isClusterTarget(target)) return `cluster ${target.cluster.map((node) => `${node.host}:${node.port}`).join(',')}`;
  const { host, port, path, sentinels, name } = (client as Redis).options;
  if (sentinels) return `master ${JSON.stringify(name)} of sentinels ${sentinels.map((node) => `${node.host}:${node.port}`).join(',')}`;
  return path ? path : `${host ?? '127.0.0.1'}:${port ?? 6379}`;
}

/** Closes `client`: politely if it is connected, at once otherwise. */
export async function release(client: RedisClient): Promise<void> {
  if (client.status === 'ready') {
    try {
      await client.quit();
      return;
    } catch {
      // The connection broke during QUIT: there is nothing left to close politely.
    }
  }
  client.disconnect();
}
