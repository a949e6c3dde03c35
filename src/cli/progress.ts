/**
 * Progress of long demo work: a live cli-progress bar on a terminal, or a
 * plain line every second when stdout is not one (a log, a pipe, CI).
 */
import cliProgress from 'cli-progress';

export interface ProgressReading {
  /** Units of work done so far, out of the total. */
  done: number;
  /** Counts shown beside the bar, by name, in this order. */
  fields: Record<string, number>;
}

const LINE_EVERY_MILLIS = 1000;

export class Progress {
  readonly #title: string;
  readonly #total: number;
  readonly #read: () => ProgressReading;
  readonly #stream: NodeJS.WriteStream;
  readonly #started = performance.now();
  #bar: cliProgress.SingleBar | undefined;
  #lastLine = -Infinity;
  #lastPrinted: string | undefined;
  #timer: NodeJS.Timeout | undefined;

  constructor(title: string, total: number, read: () => ProgressReading, stream: NodeJS.WriteStream = process.stdout) {
    this.#title = title;
    this.#total = total;
    this.#read = read;
    this.#stream = stream;
    if (stream.isTTY) {
      const first = read();
      const fields = Object.keys(first.fields).map((name) => `${name} {${name}}`).join(' | ');
      this.#bar = new cliProgress.SingleBar(
        {
          format: `${title} {bar} {value}/{total} | ${fields} | {duration}s`,
          stream,
          hideCursor: true,
          barsize: 24,
        },
        cliProgress.Presets.shades_classic,
      );
      this.#bar.start(total, first.done, first.fields);
    }
  }

  /** Reads the counts again now and every `millis` until `stop()`. */
  every(millis: number): this {
    this.update();
    this.#timer = setInterval(() => this.update(), millis);
    return this;
  }

  update(): void {
    const reading = this.#read();
    if (this.#bar !== undefined) {
      this.#bar.update(reading.done, reading.fields);
    } else if (performance.now() - this.#lastLine >= LINE_EVERY_MILLIS) {
      this.#line(reading);
    }
  }

  /** Shows the final counts and ends the bar (or prints the last line). */
  stop(): void {
    clearInterval(this.#timer);
    const reading = this.#read();
    if (this.#bar !== undefined) {
      this.#bar.update(reading.done, reading.fields);
      this.#bar.stop();
    } else if (JSON.stringify(reading) !== this.#lastPrinted) {
      this.#line(reading);
    }
  }

  #line(reading: ProgressReading): void {
    this.#lastLine = performance.now();
    this.#lastPrinted = JSON.stringify(reading);
    const seconds = ((this.#lastLine - this.#started) / 1000).toFixed(1).padStart(5);
    const fields = Object.entries(reading.fields).map(([name, value]) => `${name} ${value}`).join(' | ');
    this.#stream.write(`[${seconds}s] ${this.#title} ${reading.done}/${this.#total} | ${fields}\n`);
  }
}
