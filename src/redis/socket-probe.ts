/**
 * Why a Redis Cluster client could not reach its first node. The Cluster
 * client reports a node it cannot reach only as "Connection is closed" and
 * "None of startup nodes is available"; the probe opens a plain socket to the
 * node and returns the system error (ECONNREFUSED, ENOTFOUND...) that is why.
 */
import { connect, type Socket } from 'node:net';

/** How long a probe waits for its socket to fail or settle. */
const PROBE_MILLIS = 2_000;

/** The system error a connect to host:port fails with, or undefined if it opens (or neither happens in time). */
export function probeSocket(host: string, port: number): Promise<Error | undefined> {
  return errorOf(connect({ host, port }), 'connect');
}

/**
 * The error `socket` fails with, or undefined once it emits `settled` (or
 * neither happens within the probe's time); the socket is destroyed either
 * way. The probes of this module and of tls-probe.ts.
 */
export function errorOf(socket: Socket, settled: 'connect' | 'close'): Promise<Error | undefined> {
  return new Promise((resolve) => {
    const done = (error: Error | undefined) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(error);
    };
    const timer = setTimeout(() => done(undefined), PROBE_MILLIS);
    socket.once('error', (error) => done(error));
    socket.once(settled, () => done(undefined));
  });
}
