export type { FailError } from './validate/outcome.js';
export { JobQueue, LEASE_LOST, type FailOptions, type FinishedOptions, type JournalOptions, type NewJob, type ReleaseOptions, type SharedQueueHandle, type SubmitOptions } from './queue.js';
export type { Synchronous } from './journal/journal.js';
export {
  RedisJobQueue, type BatchOutcome, type Completion, type RedisClusterTarget, type RedisQueueHandle, type RedisQueueOptions, type RedisServerTarget,
  type RedisTarget,
} from './redis/queue.js';
export { PartitionedRedisQueue, type PartitionedQueueHandle, type PartitionedQueueOptions } from './redis/partitioned.js';
export type { MissedTicks, ScheduleOptions, ScheduleView } from './schedule/spec.js';
export type { Scheduler, SchedulerOptions } from './schedule/timer.js';
export { PROCESS_GONE } from './redis/liveness.js';
export { RetryPolicy, type Jitter, type RetryPolicyOptions } from './policy.js';
export { ManualClock, systemClock, type TimeSource } from './clock.js';
export { JobStatus, type Payload, type JobLogs, type JobPage, type JobQuery, type JobView, type Lease, type QueueStats, type RateLimit, type TypeRateLimit, type TypeRetryPolicy, type ConcurrencyCaps, type TypeConcurrency, type GroupConcurrencyCap, type FlowJob, type FlowJobOptions, type ChildFailurePolicy } from './types.js';
export type { JobQueueOptions, TracingOptions } from './options.js';
export { MAX_HEADERS_BYTES } from './validate/job-input.js';
export { traceProcess } from './tracing/consumer.js';
export {
  JobQueueError, InvalidArgumentError, JobNotFoundError, IllegalStateError, StaleLeaseError, QueueFullError,
  JournalBusyError, JournalCorruptError, JournalWriteError, JournalFullError, JournalReadOnlyError, JournalIOError,
  BackendUnavailableError, BackendAuthError, BackendTlsError, MissingDependencyError, QueueNotFoundError, HandlerModuleError, JobFailedError, TimeoutError, AbortedError,
  UnsupportedOperationError, JobCancelledError, ReservationLostError,
  type ErrorCode,
} from './errors.js';
export { WorkerPool, type PoolStats, type PoolStatsOf, type RunOptions } from './pool/pool.js';
export type { TimeoutsByType, UnknownTypePolicy, WorkerPoolOptions } from './pool/options.js';
export {
  QUEUE_EVENT_NAMES, QueueEvents, type MissedEvent, type QueueEventMap, type QueueEventName, type QueueEventsError, type QueueEventsOptions, type QueueJobEventName,
} from './events/queue-events.js';
export type { JobEvent, PoolErrorEvent, PoolEventName, PoolEvents, PoolLogger, ProgressEvent } from './pool/events.js';
export type { PoolQueue, QueueHandle, WorkerQueue } from './pool/backend.js';
export type { Handler, HandlerContext } from './pool/handlers.js';
export { snooze, type Snooze } from './pool/snooze.js';
export { PermanentError } from './errors.js';
export { collectMetrics, MAX_TYPE_LABELS, OTHER_TYPE, QueueMetrics, type MetricsPool, type MetricsQueue, type MetricsTarget } from './metrics/prometheus.js';
export { JsonJobs, jsonHandlers, type JsonHandlers, type JsonJob, type PayloadsOf } from './typed.js';
