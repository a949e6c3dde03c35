/**
 * The hash of an idempotent key: FNV-1a over its UTF-16 code units, as a
 * signed 32-bit integer. The same in every thread and process, and cheap for
 * short keys: the shared-memory key map probes by it, and a partitioned
 * Redis queue picks a keyed job's partition by it.
 */
export function keyHash(key: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  return h | 0;
}
