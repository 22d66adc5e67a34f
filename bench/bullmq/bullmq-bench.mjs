// BullMQ on the same machine as our broker (our yardstick): `add` rate and
// processed/s with empty handlers, and for each phase the CPU each process spent per
// job (this node process, Redis's main thread) and Redis commandstats per job (every
// command's usec summed: a script and the commands inside it both counted, as
// loadgen counts ours). Run by bench/bullmq.sh, which installs bullmq from npm into
// a temporary folder and starts redis-server as the broker's embedded Redis.
//   node bullmq-bench.mjs SOCKET JOBS WORKERS CONCURRENCY PRODUCERS
import { Queue, Worker } from 'bullmq';
import IORedis from 'ioredis';

const [socket, jobsArg, workersArg, concArg, producersArg] = process.argv.slice(2);
const jobs = Number(jobsArg), workers = Number(workersArg), concurrency = Number(concArg), producers = Number(producersArg);
// Each Queue and Worker gets its own client (BullMQ 6 in ESM wants constructed clients).
const connect = () => new IORedis({ path: socket, maxRetriesPerRequest: null });
const queue = new Queue('bench', { connection: connect() });
await queue.obliterate({ force: true }).catch(() => {});
const admin = connect();

// Redis's INFO as numbers: `field:value` lines, and commandstats' usec summed.
const info = async (section) => {
  const out = {};
  for (const line of (await admin.info(section)).split('\r\n')) {
    const [k, v] = line.split(':');
    if (v !== undefined) out[k] = v;
  }
  return out;
};
const redisCpuS = async () => {
  const c = await info('cpu');  // Redis 7: the main thread's own; older: the process's
  const user = c.used_cpu_user_main_thread ?? c.used_cpu_user, sys = c.used_cpu_sys_main_thread ?? c.used_cpu_sys;
  return Number(user) + Number(sys);
};
const commandUsec = async () => {
  let sum = 0;
  for (const [k, v] of Object.entries(await info('commandstats')))
    if (k.startsWith('cmdstat_')) sum += Number(/usec=(\d+)/.exec(v)[1]);
  return sum;
};
// What one phase cost per job: this process's CPU, Redis main-thread CPU, commandstats.
const begin = async () => {
  await admin.config('RESETSTAT');
  return { node: process.cpuUsage(), redis: await redisCpuS() };
};
const perJob = async (from) => {
  const node = process.cpuUsage(from.node);
  const r = (x) => Math.round(x * 10) / 10;
  return { node_cpu_us: r((node.user + node.system) / jobs), redis_cpu_us: r((await redisCpuS() - from.redis) * 1e6 / jobs),
           commandstats_us: r((await commandUsec()) / jobs) };
};

// `add` from PRODUCERS concurrent loops, one job per call (as our PUSH phase).
let next = 0;
const addCost = await begin();
const addStart = process.hrtime.bigint();
await Promise.all(Array.from({ length: producers }, async () => {
  while (next < jobs) { next += 1; await queue.add('t', { i: next }, { removeOnComplete: true }); }
}));
const addSecs = Number(process.hrtime.bigint() - addStart) / 1e9;
const addPerJob = await perJob(addCost);

// Processing: WORKERS Worker objects, each with CONCURRENCY, an empty handler.
let done = 0;
let finish;
const finished = new Promise((resolve) => { finish = resolve; });
const processCost = await begin();
const start = process.hrtime.bigint();
const pool = Array.from({ length: workers }, () => new Worker('bench', async () => {}, { connection: connect(), concurrency }));
for (const w of pool) w.on('completed', () => { if (++done === jobs) finish(); });
await finished;
const secs = Number(process.hrtime.bigint() - start) / 1e9;
const processPerJob = await perJob(processCost);  // before the workers close: their closing is not the jobs' cost
await Promise.all(pool.map((w) => w.close()));
await queue.close();
await admin.quit();
console.log(JSON.stringify({ jobs, workers, concurrency, producers, add_per_s: Math.round(jobs / addSecs),
                             processed_per_s: Math.round(jobs / secs), add_secs: addSecs, process_secs: secs,
                             add_per_job: addPerJob, process_per_job: processPerJob }));
process.exit(0);
