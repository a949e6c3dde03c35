// Types of ./plan.mjs, the random calls of one recording thread.
/** A submit's four log arguments: type index, payload number, priority and runAt (NaN: default). */
export declare function submitArgs(random: () => number, now: number): number[];

