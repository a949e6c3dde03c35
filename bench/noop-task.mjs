// piscina task for the "drain" suite's baseline: a no-op, like the queue's jobs.
export default function noop() {
  return 0;
}
