/**
 * `leasehold/testing`: record what your threads (or processes) do to a queue,
 * and check the history against the queue's contract. docs/testing.md shows
 * how; docs/concurrency.md states the models (`linearizable`,
 * `relaxed-poll`, and `relaxed-order` for histories with groups).
 */
export { HistoryLog, type HistoryLogHandle, type HistoryLogOptions } from './log.js';
export { HistoryFile } from './file-log.js';
export { CallRecorder, RECORDED_METHODS, type RecordedMethod, type RecordedQueue } from './recorder.js';
export { connectRedisStamps, redisStamps, type IncrClient, type StampSource } from './stamps.js';
export { checkHistory, mayRunOutInFlight, responseOf, type Mode, type Step, type Verdict } from './checker.js';
export { explainFailure, findViolation, minimalFailingHistory, type Violation } from './report.js';
export { mergeHistories } from './merge.js';
export { doubleLeases, overlappingCalls } from './properties.js';
export { NO_RESPONSE, formatCall, formatHistory, leaseMade, type Call, type CallArgs, type HistorySetup, type LeaseResult, type Op, type Result } from './history.js';
export {
  QueueModel, comparableView, isBetter, modelView, sameView, type Code, type ModelJob, type ModelLease, type ModelStats, type Outcome, type PolicySpec, type Status,
} from './model.js';
