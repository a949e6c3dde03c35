/**
 * startTimer: a delay past the longest Node.js timer (2^31 - 1 ms) is waited
 * out in full, where setTimeout would fire after 1 ms with a warning.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { MAX_TIMER_MILLIS, startTimer } from '../../dist/long-timer.js';

describe('startTimer', () => {
  const warnings: Error[] = [];
  const onWarning = (warning: Error) => warnings.push(warning);

  beforeEach(() => {
    vi.useFakeTimers();
    warnings.length = 0;
    process.on('warning', onWarning);
  });
  afterEach(() => {
    process.off('warning', onWarning);
    vi.useRealTimers();
  });

  it('fires after a delay longer than one timer takes, not before', () => {
    const fire = vi.fn();
    startTimer(fire, 3 * MAX_TIMER_MILLIS + 5);
    vi.advanceTimersByTime(3 * MAX_TIMER_MILLIS + 4);
    expect(fire).not.toHaveBeenCalled();
    vi.advanceTimersByTime(1);
    expect(fire).toHaveBeenCalledOnce();
    expect(warnings).toEqual([]);
  });

  it('fires a short delay once, at its time', () => {
    const fire = vi.fn();
    startTimer(fire, 20);
    vi.advanceTimersByTime(19);
    expect(fire).not.toHaveBeenCalled();
    vi.advanceTimersByTime(100);
    expect(fire).toHaveBeenCalledOnce();
  });

  it('never fires for Infinity, yet stays armed (a timer keeps the event loop alive) until cleared', () => {
    const fire = vi.fn();
    const timer = startTimer(fire, Infinity);
    vi.advanceTimersByTime(10 * MAX_TIMER_MILLIS);
    expect(fire).not.toHaveBeenCalled();
    expect(vi.getTimerCount()).toBe(1);
    timer.clear();
    expect(vi.getTimerCount()).toBe(0);
  });

  it('is stopped by clear, also midway through a chain', () => {
    const fire = vi.fn();
    const timer = startTimer(fire, 2 * MAX_TIMER_MILLIS);
    vi.advanceTimersByTime(MAX_TIMER_MILLIS + 1);
    timer.clear();
    vi.advanceTimersByTime(4 * MAX_TIMER_MILLIS);
    expect(fire).not.toHaveBeenCalled();
    expect(vi.getTimerCount()).toBe(0);
  });
});
