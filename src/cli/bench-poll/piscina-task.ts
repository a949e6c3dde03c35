/**
 * The reference of `leasehold bench poll`: a piscina task that does nothing,
 * as a job handler of the benchmark does nothing, so the measure is what it
 * costs piscina to hand one task from the main thread to a thread and back.
 */
export default function task(): number {
  return 0;
}
