// The "pool-bytes" suite's work, for both pools: a 1 MiB binary payload in, a checksum of it out (a sum of one
// byte in every 64, so the handler reads the whole payload's span without the sum costing more than the transport).
// A WorkerPool handler (`checksum`) and piscina's task (default).

function checksum(payload) {
  if (!(payload instanceof Uint8Array)) throw new Error(`expected a Uint8Array payload, got ${typeof payload}`);
  let sum = 0;
  for (let i = 0; i < payload.length; i += 64) sum = (sum + payload[i]) | 0;
  return sum;
}

export { checksum };
export default checksum;
