/**
 * The server's replies that refuse a call before it runs become
 * BackendUnavailableError saying the call changed nothing; among them a
 * Cluster's MOVED and ASK that reach the caller (the client could not follow
 * the slot to its new master, e.g. after a failover). Any other reply error
 * is a bug of a script and passes through as it is.
 */
import { ReplyError } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { BackendUnavailableError } from '../../dist/index.js';
import { backendError } from '../../dist/redis/connection.js';

describe('backendError', () => {
  it.each([
    'MOVED 8815 127.0.0.1:7001', 'ASK 8815 127.0.0.1:7001', 'CLUSTERDOWN The cluster is down', 'TRYAGAIN Multiple keys request during rehashing of slot',
    'READONLY You can\'t write against a read only replica.', 'LOADING Redis is loading the dataset in memory',
  ])('makes the reply %j a BackendUnavailableError that says the call changed nothing', (reply) => {
    const error = backendError(new ReplyError(reply), '127.0.0.1:7000');
    expect(error).toBeInstanceOf(BackendUnavailableError);
    expect((error as BackendUnavailableError).code).toBe('ERR_BACKEND_UNAVAILABLE');
    expect((error as Error).message).toBe(`Redis at 127.0.0.1:7000 refused the call, which changed nothing: ${reply}`);
  });

  it('passes any other reply error through as it is (a script that failed is a bug, not an outage)', () => {
    const reply = new ReplyError('ERR user_script:1: Script attempted to access nonexistent global variable');
    expect(backendError(reply, '127.0.0.1:7000')).toBe(reply);
  });
});
