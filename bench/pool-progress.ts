/**
 * Suite "pool-progress": what `ctx.progress(value)` costs a handler's tight
 * loop. A loop of LOOP iterations calls it once per iteration, against the
 * same loop storing the value in a local array (the baseline: what the loop
 * costs without a report). The context is the pool thread's own (JobContext
 * over a place of a pool's control block, built code), so a call is the check
 * of its value and two Atomics stores. No target: the row says what a report
 * costs, so that a handler can tell how often to make one.
 */
import { Bench } from 'tinybench';
import { QUICK } from './conditions.js';
import { JobContext, LazyAbort, ProgressPlace } from '../dist/pool/job-context.js';
import { allocateControl, progressAt } from '../dist/pool/layout.js';
import { type Row, type Suite, formatRate, formatRatio, latencyOf } from './report.js';

const LOOP = 1_000;
const BENCH_TIME = QUICK ? { time: 200, warmupTime: 50 } : { time: 1_000, warmupTime: 200 };

export const poolProgress: Suite = {
  id: 'pool-progress',
  title: `ctx.progress(value) in a tight loop of ${LOOP.toLocaleString('en-US')} iterations, against the loop alone`,
  config: {
    'pool-progress: loop': `${LOOP} iterations per task run`,
    'pool-progress: bench time': `${BENCH_TIME.time} ms per case, ${BENCH_TIME.warmupTime} ms warmup`,
  },
  async run() {
    const control = allocateControl(1, 1);
    const ctx = new JobContext('J1', 'bench', 1, () => undefined, new LazyAbort(), new ProgressPlace(new Int32Array(control.progress), progressAt(0, 1, 0)));
    const sink = new Float64Array(1);
    const bench = new Bench({ ...BENCH_TIME, throws: true });
    bench.add('loop alone (baseline)', () => {
      for (let i = 0; i < LOOP; i++) sink[0] = i;
    });
    bench.add('loop with ctx.progress(i)', () => {
      for (let i = 0; i < LOOP; i++) ctx.progress(i);
    });
    await bench.run();
    const perIteration = bench.tasks.map((task) => latencyOf(task).mean / LOOP);
    const [baseline, progress] = perIteration as [number, number];
    const rows: Row[] = bench.tasks.map((task, i) => ({
      case: task.name,
      'ns per iteration': (perIteration[i]! * 1e6).toFixed(1),
      'iterations/s': formatRate(1000 / perIteration[i]!),
      'vs baseline': formatRatio(baseline / perIteration[i]!),
    }));
    return {
      tables: [{ title: 'ctx.progress() per call (ns = mean task latency / iterations)', rows }],
      unit: 'iterations/s',
      bars: bench.tasks.map((task, i) => ({ label: task.name, value: 1000 / perIteration[i]!, baseline: i === 0 })),
      ratios: { 'loop with progress / loop alone (time)': progress / baseline },
      notes: [],
      targets: [],
    };
  },
};
