/**
 * A float64 as the 64 bits of an integer, and back, exactly (fractions,
 * infinities and all): for a time kept in a BigInt64 word of shared memory,
 * which Atomics read and write whole. ECMAScript promises tear-free racing
 * accesses only for integer element types (ECMA-262, IsNoTearConfiguration:
 * BigInt64 ones only through Atomics), never for Float64Array elements.
 */
const scratch = new Float64Array(1);
const scratchBits = new BigInt64Array(scratch.buffer);

/** The bits of `ms`. */
export function toBits(ms: number): bigint {
  scratch[0] = ms;
  return scratchBits[0]!;
}

/** The float64 whose bits are `bits`. */
export function fromBits(bits: bigint): number {
  scratchBits[0] = bits;
  return scratch[0]!;
}
