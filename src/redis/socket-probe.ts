/**
 * Why a Redis Cluster client could not reach its first node. The Cluster
 * client reports a node it cannot reach only as "Connection is closed" and
 * "None of startup nodes is available"; the probe opens a plain socket to the
 * node and returns the system error (ECONNREFUSED, ENOTFOUND...) that is why.
 */
import { connect } from 'node:net';

/** How long the probe waits for the socket to open or fail. */
const PROBE_MILLIS = 2_000;

/** The system error a connect to host:port fails with, or undefined if it opens (or neither happens in time). */
export function probeSocket(host: string, port: number): Promise<Error | undefined> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (error: Error | undefined) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(error);
    };
    const timer = setTimeout(() => done(undefined), PROBE_MILLIS);
    socket.once('error', (error) => done(error));
    socket.once('connect', () => done(undefined));
  });
}
