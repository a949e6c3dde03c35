#!/usr/bin/env node
/**
 * The `leasehold` command.
 *
 *   leasehold demo [options]          thumbnail farm with injected faults (exit 0 if every job is accounted for)
 *   leasehold bench [suites...]       the benchmarks (from a clone of the repository)
 *   leasehold bench poll [options]    poll throughput on this machine, 1..N threads, piscina as the reference
 *   leasehold stats FILE [--json]     counts by status of a journal (also while another process owns it)
 *   leasehold dlq list FILE [--json]  its dead letters
 *   leasehold dlq retry FILE ID…      puts dead jobs back to PENDING (--all: every one); needs the journal to itself
 *   leasehold stress [options]        threads racing on one queue, every history checked (exit 0 if all pass)
 *   leasehold dashboard --journal FILE | --redis URL --name Q
 *                                     bull-board over the queue on 127.0.0.1, behind an access token; read-only unless --allow-writes
 *   leasehold --version
 *
 * Exit codes: 0 success; 1 the command ran and failed (the demo's check, a
 * journal that is busy, damaged or lacks the job); 2 bad usage.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { kDemoDefaults, runDemo, type DemoOptions } from './demo.js';
import { MAX_PARTITIONS } from '../redis/partitioned.js';
import { dashboardUsageProblem, runDashboard, type DashboardCommandOptions } from './dashboard.js';
import { printDeadLetters, printStats, retryDeadLetters } from './journal-commands.js';
import { kStressDefaults, runStress } from './stress/command.js';
import { kBenchPollDefaults, runBenchPoll } from './bench-poll/command.js';

const EXIT_FAILED = 1;
const EXIT_USAGE = 2;
const PACKAGE_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const { version } = JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version: string };
const JOB_ID = /^J[1-9][0-9]*$/;
const JSON_OPTION = 'one JSON document instead of a table';

function integer(name: string, min: number, max = Number.MAX_SAFE_INTEGER) {
  return (text: string): number => {
    const value = Number(text);
    if (text.trim() === '' || !Number.isInteger(value) || !(value >= min && value <= max)) {
      throw new InvalidArgumentError(`Expected ${name} to be an integer from ${min} to ${max}, got \`${text}\``);
    }
    return value;
  };
}

function rate(text: string): number {
  const value = Number(text);
  if (text.trim() === '' || !(value >= 0 && value <= 1)) {
    throw new InvalidArgumentError(`Expected a rate from 0 to 1 (0.05 = 5% of the jobs), got \`${text}\``);
  }
  return value;
}

function program(): Command {
  const d = kDemoDefaults;
  const cli = new Command('leasehold')
    .description('A retrying job queue for Node.js worker threads: demo, benchmarks and journal tools.')
    .version(version, '-V, --version', 'the version of leasehold')
    .showHelpAfterError('(add --help for usage)')
    .exitOverride();

  const demo = cli
    .command('demo')
    .description(
      'Make thumbnails of generated PNGs on a WorkerPool while injecting transient failures, thread crashes, hangs, ' +
        'stalls (zombies) and poison jobs; exit 0 only if every job ends SUCCEEDED (with a valid thumbnail) or DEAD, and none succeeded twice.',
    )
    .addOption(new Option('--jobs <n>', 'jobs to submit (one source image each)').argParser(integer('--jobs', 1, 1_000_000)).default(d.jobs))
    .addOption(new Option('--threads <n>', 'pool threads').argParser(integer('--threads', 1, 256)).default(d.threads))
    .addOption(new Option('--transient <rate>', 'share of jobs that fail their first 1-2 attempts').argParser(rate).default(d.transient))
    .addOption(new Option('--crash <rate>', 'share of jobs whose thread exits mid-job on attempt 1').argParser(rate).default(d.crash))
    .addOption(new Option('--hang <rate>', 'share of jobs that busy-loop on attempt 1').argParser(rate).default(d.hang))
    .addOption(new Option('--stall <rate>', 'share of jobs that outlive their lease on attempt 1 (zombies)').argParser(rate).default(d.stall))
    .addOption(new Option('--poison <rate>', 'share of jobs with a corrupt source (dead-lettered)').argParser(rate).default(d.poison))
    .addOption(new Option('--lease-ms <ms>', 'lease per poll, and the hang detection time').argParser(integer('--lease-ms', 100, 3_600_000)).default(d.leaseMillis))
    .addOption(new Option('--seed <n>', 'seed of the fault plan and the images').argParser(integer('--seed', 0, 2 ** 32 - 1)).default(d.seed))
    .addOption(new Option('--out <dir>', 'output folder, kept; its sources/, thumbs/ and successes.log are replaced (default: a fresh temp folder, removed at the end)'))
    .addOption(new Option('--size <px>', 'side of the source images').argParser(integer('--size', 8, 4096)).default(d.size))
    .addOption(new Option('--thumb <px>', 'thumbnails fit in this square').argParser(integer('--thumb', 1, 4096)).default(d.thumb))
    .addOption(new Option('--timeout <s>', 'give up if the queue has not drained by then').argParser(integer('--timeout', 1, 86_400)).default(d.timeoutSeconds))
    .action(async (opts: Record<string, unknown>) => {
      const rates = {
        transient: opts.transient as number, crash: opts.crash as number, hang: opts.hang as number,
        stall: opts.stall as number, poison: opts.poison as number,
      };
      const sum = Object.values(rates).reduce((a, b) => a + b, 0);
      if (sum > 1) demo.error(`The fault rates add up to ${Number(sum.toFixed(6))}, more than 1`, { exitCode: EXIT_USAGE });
      const options: DemoOptions = {
        ...rates,
        jobs: opts.jobs as number,
        threads: opts.threads as number,
        leaseMillis: opts.leaseMs as number,
        seed: opts.seed as number,
        out: opts.out as string | undefined,
        size: opts.size as number,
        thumb: opts.thumb as number,
        timeoutSeconds: opts.timeout as number,
      };
      process.exitCode = await runDemo(options);
    });

  const bench = cli
    .command('bench')
    .description('Run the benchmarks (`npm run bench`): needs a clone of the repository, with its dev dependencies')
    .argument('[suites...]', 'only these suites (by id or a word of the title)')
    .action(async (suites: string[]) => {
      if (!existsSync(join(PACKAGE_ROOT, 'bench', 'run.ts'))) {
        console.error(`leasehold bench: no bench/ in ${PACKAGE_ROOT}: the benchmarks ship with the repository, not the package`);
        process.exit(EXIT_USAGE);
      }
      const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
      const child = spawn(npm, ['run', 'bench', '--', ...suites], { cwd: PACKAGE_ROOT, stdio: 'inherit' });
      process.exitCode = await new Promise<number>((r) => child.on('close', (code) => r(code ?? EXIT_FAILED)));
    });
  bench
    .command('poll')
    .description(
      'Jobs per second through a queue on this machine, 1 to N threads, handlers that do nothing: poll -> complete and completeAndPoll ' +
        '(and with --redis-url the Redis loops, batched too), beside piscina running no-op tasks on as many threads; prints its conditions',
    )
    .addOption(new Option('--threads <n>', 'the most threads (every count from 1 is measured)').argParser(integer('--threads', 1, 256)).default(kBenchPollDefaults.threads))
    .addOption(new Option('--jobs <n>', 'jobs per measurement').argParser(integer('--jobs', 1, 10_000_000)).default(kBenchPollDefaults.jobs))
    .addOption(new Option('--batch <n>', 'leases per call of the batched Redis form').argParser(integer('--batch', 1, 1_000)).default(kBenchPollDefaults.batch))
    .addOption(new Option('--redis-url <url>', 'also measure a Redis queue on this server'))
    .addOption(new Option('--svg <file>', 'write the chart to this SVG file'))
    .action(async (opts: { threads: number; jobs: number; batch: number; redisUrl?: string; svg?: string }) => {
      process.exitCode = await runBenchPoll({ threads: opts.threads, jobs: opts.jobs, batch: opts.batch, redisUrl: opts.redisUrl, svg: opts.svg });
    });

  cli
    .command('stats')
    .description('Counts by status of a journal, PENDING split into ready and delayed')
    .argument('<file>', 'journal file')
    .option('--json', JSON_OPTION)
    .action(printStats);
  const dlq = cli.command('dlq').description('Dead letters of a journal');
  dlq
    .command('list')
    .description('List the dead letters of a journal')
    .argument('<file>', 'journal file')
    .option('--json', JSON_OPTION)
    .action(printDeadLetters);
  dlq
    .command('retry')
    .description('Put dead jobs back to PENDING, ready now, attempts 0 (needs the journal to itself)')
    .argument('<file>', 'journal file')
    .argument('[ids...]', 'job ids, e.g. J17')
    .option('--all', 'every dead job')
    .action((file: string, ids: string[], options: { all?: boolean }) => {
      if ((options.all === true) === ids.length > 0) {
        console.error('leasehold dlq retry: name the job ids to retry, or --all (not both)');
        process.exitCode = EXIT_USAGE;
        return;
      }
      const malformed = ids.find((id) => !JOB_ID.test(id));
      if (malformed !== undefined) {
        console.error(`leasehold dlq retry: ${malformed} is not a job id (ids look like J17)`);
        process.exitCode = EXIT_USAGE;
        return;
      }
      const retried = retryDeadLetters(file, options.all === true ? 'all' : ids);
      console.log(`Retried ${retried.length} dead job(s)${retried.length > 0 ? `: ${retried.join(', ')}` : ''}`);
    });
  const stress = cli
    .command('stress')
    .description(
      'N threads x M calls on a queue of a chosen backend, history after history, with a moving ManualClock (leases expire mid-call) ' +
        'and optional thread kills; checks that no job is leased twice, every submitted job is accounted for, and each history passes the checker. Exit 0 if all pass.',
    )
    .addOption(new Option('--backend <name>', 'the queue: shared memory, a journaled one, or Redis').choices(['memory', 'journal', 'redis']).default(kStressDefaults.backend))
    .addOption(new Option('--redis-url <url>', 'with --backend redis: the server (redis://127.0.0.1:6379)'))
    .addOption(new Option('--threads <n>', 'threads racing on the queue').argParser(integer('--threads', 1, 64)).default(kStressDefaults.threads))
    .addOption(new Option('--calls <m>', 'most calls each thread makes per history').argParser(integer('--calls', 1, 10_000)).default(kStressDefaults.calls))
    .addOption(new Option('--histories <n>', 'histories to record and check').argParser(integer('--histories', 1, 10_000_000)).default(kStressDefaults.histories))
    .addOption(new Option('--kill-every <k>', 'terminate a thread each time the threads made k more calls (0: never)').argParser(integer('--kill-every', 0)).default(kStressDefaults.killEvery))
    .addOption(new Option('--seed <n>', 'seed of the histories\' plans (default: a random one, printed)').argParser(integer('--seed', 0, 2 ** 32 - 1)))
    .addOption(new Option('--mode <mode>', 'the checker\'s model (default: what the backend promises)').choices(['linearizable', 'relaxed-poll', 'relaxed-order']))
    .addOption(new Option('--wrapper <module>', 'call the queue through this module\'s wrapQueue(queue, { seed, thread }) (docs/testing.md)'))
    .addOption(new Option('--processes', 'with --backend redis: --threads processes race, not threads (no clock moves, stamps from Redis INCR)').default(false))
    .addOption(new Option('--groups', 'submits name one of a few groups, which take turns (checked as relaxed-order: the order across groups is not)').default(false))
    .addOption(new Option('--edits', 'the threads also release leases (snoozes too), remove jobs and edit pending ones (changePriority, changeDelay, promote, updatePayload)').default(false))
    .action(async (opts: Record<string, unknown>) => {
      if ((opts.backend === 'redis') !== (opts.redisUrl !== undefined)) {
        stress.error('leasehold stress: --redis-url goes with --backend redis, and --backend redis needs it', { exitCode: EXIT_USAGE });
      }
      if (opts.processes === true && (opts.backend !== 'redis' || opts.wrapper !== undefined || opts.groups === true)) {
        stress.error('leasehold stress: --processes needs --backend redis (processes share no memory), and takes no --wrapper or --groups', { exitCode: EXIT_USAGE });
      }
      process.exitCode = await runStress({
        backend: opts.backend as 'memory' | 'journal' | 'redis',
        redisUrl: opts.redisUrl as string | undefined,
        threads: opts.threads as number,
        calls: opts.calls as number,
        histories: opts.histories as number,
        killEvery: opts.killEvery as number,
        seed: (opts.seed as number | undefined) ?? Math.floor(Math.random() * 2 ** 32),
        mode: opts.mode as 'linearizable' | 'relaxed-poll' | 'relaxed-order' | undefined,
        wrapper: opts.wrapper as string | undefined,
        processes: opts.processes === true,
        edits: opts.edits === true,
        groups: opts.groups === true,
      });
    });
  const dashboard = cli
    .command('dashboard')
    .description(
      'Serve bull-board over a queue on 127.0.0.1 until Ctrl-C, behind a random access token (in the URL it prints). ' +
        'Read-only unless --allow-writes; a journal is then read as it is on disk, also while an app owns it.',
    )
    .addOption(new Option('--journal <file>', 'a journal (JobQueue.open)'))
    .addOption(new Option('--redis <url>', 'a Redis queue: its server (redis://host:6379/0, rediss:// for TLS)'))
    .addOption(new Option('--name <queue>', 'with --redis: the queue\'s name'))
    .addOption(new Option('--partitions <n>', 'with --redis: a PartitionedRedisQueue of n partitions').argParser(integer('--partitions', 1, MAX_PARTITIONS)))
    .addOption(new Option('--port <n>', 'port on 127.0.0.1 (0: a free one)').argParser(integer('--port', 0, 65_535)).default(0))
    .addOption(new Option('--allow-writes', 'let the board retry, cancel, add, pause and resume').default(false))
    .addOption(new Option('--max-attempts <n>', "your app's RetryPolicy (default 5 with --redis or --allow-writes, which apply it to leases that expire); shown as each job's attempts").argParser(integer('--max-attempts', 1, 2 ** 32 - 1)))
    .addOption(new Option('--backoff-ms <ms>', "the queue's RetryPolicy: base backoff").argParser(integer('--backoff-ms', 0)).default(1_000))
    .addOption(new Option('--max-backoff-ms <ms>', "the queue's RetryPolicy: backoff cap").argParser(integer('--max-backoff-ms', 0)).default(60_000))
    .action(async (options: DashboardCommandOptions) => {
      const problem = dashboardUsageProblem(options);
      if (problem !== null) dashboard.error(`leasehold dashboard: ${problem}`, { exitCode: EXIT_USAGE });
      await runDashboard(options);
    });
  return cli;
}

async function main(argv: string[]): Promise<void> {
  try {
    await program().parseAsync(argv);
  } catch (error) {
    if (error instanceof CommanderError) {
      // Help and --version exit 0; any other parse error is bad usage.
      process.exitCode = error.exitCode === 0 ? 0 : EXIT_USAGE;
      return;
    }
    // A message is enough for the expected failures (a folder that cannot be written, a handler module that
    // does not load); LEASEHOLD_DEBUG=1 shows the stack.
    const detail = error instanceof Error ? (process.env.LEASEHOLD_DEBUG ? error.stack : error.message) : String(error);
    console.error(`leasehold: ${detail}`);
    process.exitCode = EXIT_FAILED;
  }
}

await main(process.argv);
