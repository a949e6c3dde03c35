/**
 * Why a TLS connection to Redis was reset. Under TLS 1.3 a server refuses a
 * client certificate (or its absence) only after the client has finished its
 * half of the handshake, so a client that writes at once (ioredis sends
 * HELLO) often sees ECONNRESET instead of the server's alert. The probe shakes
 * hands again, writes nothing, and reads what the server says.
 */
import { connect, type ConnectionOptions } from 'node:tls';
import { errorOf } from './socket-probe.js';

/** The TLS error the server's refusal is, or undefined if it accepts a handshake (or says nothing in time). */
export function probeTls(options: ConnectionOptions): Promise<Error | undefined> {
  // A close with no error is no refusal; a server that accepted the handshake and the certificate just waits for a command.
  return errorOf(connect(options), 'close');
}
