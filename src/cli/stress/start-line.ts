/**
 * A start line for a fixed set of threads: a barrier whose waiters spin
 * before they sleep, and whose leavers spin until every party has left too,
 * so that the threads leave together, all running at once, rather than one by
 * one as each is woken: what makes their next calls overlap. The spinning is
 * bounded; past it a thread goes on.
 *
 * Words of its shared buffer (all zero at first):
 */
/** Threads at the line now. */
const ARRIVED = 0;
/** Openings of the line so far: a waiter leaves when it moves. */
const GENERATION = 1;
/** Departures from the line since it was made: `parties` per opening. */
const LEFT = 2;
export const START_LINE_WORDS = 3;
/** About 50 µs of spinning before a thread sleeps or goes on alone: on a loaded machine a peer may not run for a while. */
const SPINS = 20_000;

export class StartLine {
  readonly #line: Int32Array;
  readonly #parties: number;

  /** Every party's view of one buffer of START_LINE_WORDS int32s; no party may die while the line is used. */
  constructor(buffer: SharedArrayBuffer, parties: number) {
    this.#line = new Int32Array(buffer);
    this.#parties = parties;
  }

  arrive(): void {
    const line = this.#line;
    const parties = this.#parties;
    // Read before arriving: the opening this thread waits for is the next one.
    const generation = Atomics.load(line, GENERATION);
    // Arrives; the last to arrive learns it from the count and opens the line.
    if (Atomics.add(line, ARRIVED, 1) === parties - 1) {
      // Resets the count before opening: nobody can arrive again before the line opens.
      Atomics.store(line, ARRIVED, 0);
      // Opens the line: spinners see the new generation, sleepers are woken (pairs with the wait below).
      Atomics.add(line, GENERATION, 1);
      Atomics.notify(line, GENERATION);
    } else {
      // Spins on the generation word: it moves when the last thread opens the line.
      for (let spin = 0; Atomics.load(line, GENERATION) === generation; spin++) {
        // Past the spin budget, sleep until the line opens (the notify above, or a look every millisecond).
        if (spin > SPINS) Atomics.wait(line, GENERATION, generation, 1);
      }
    }
    // Every party leaves each opening once, so after this opening `everyoneOut` departures have been counted.
    const everyoneOut = (generation + 1) * parties;
    Atomics.add(line, LEFT, 1);
    // Spins (bounded) until the others are out and running too.
    for (let spin = 0; spin < 2 * SPINS && Atomics.load(line, LEFT) < everyoneOut; spin++);
  }
}
