// piscina task for the "pool-wake" suite: when it started running (see wake-handlers.mjs).
export default function stamp() {
  return performance.timeOrigin + performance.now();
}
