/** The longest delay one Node.js timer takes: a longer one fires after 1 ms instead, with a TimeoutOverflowWarning. */
export const MAX_TIMER_MILLIS = 2 ** 31 - 1;

/** A timer from `startTimer`. */
export interface LongTimer {
  clear(): void;
}

/**
 * Calls `fire` after `delayMillis`, any number >= 0, or never for Infinity
 * (the timer still keeps the event loop alive, as any timer does, until
 * cleared). A delay longer than MAX_TIMER_MILLIS (about 24.8 days) is waited
 * out as a chain of timers that each fit, rather than firing at once.
 */
export function startTimer(fire: () => void, delayMillis: number): LongTimer {
  let timer: NodeJS.Timeout | undefined;
  const wait = (left: number): void => {
    const step = Math.min(left, MAX_TIMER_MILLIS);
    timer = setTimeout(() => (left > step ? wait(left - step) : fire()), step);
  };
  wait(delayMillis);
  return { clear: () => clearTimeout(timer) };
}
