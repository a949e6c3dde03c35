// Handlers for the "pool-wake" suite: the job's handler says when it started running, as a time
// every thread reads alike (performance.timeOrigin + performance.now(), in ms); the queue keeps it as the job's result.
export function stamp() {
  return performance.timeOrigin + performance.now();
}
