// BullMQ on the same machine as our broker (our yardstick): `add` rate and
// processed/s with empty handlers. Run by bench/bullmq.sh, which installs bullmq from
// npm into a temporary folder and starts redis-server as the broker's embedded Redis.
//   node bullmq-bench.mjs SOCKET JOBS WORKERS CONCURRENCY PRODUCERS
import { Queue, Worker } from 'bullmq';
import IORedis from 'ioredis';

const [socket, jobsArg, workersArg, concArg, producersArg] = process.argv.slice(2);
const jobs = Number(jobsArg), workers = Number(workersArg), concurrency = Number(concArg), producers = Number(producersArg);
// Each Queue and Worker gets its own client (BullMQ 6 in ESM wants constructed clients).
const connect = () => new IORedis({ path: socket, maxRetriesPerRequest: null });
const queue = new Queue('bench', { connection: connect() });
await queue.obliterate({ force: true }).catch(() => {});

// `add` from PRODUCERS concurrent loops, one job per call (as our PUSH phase).
let next = 0;
const addStart = process.hrtime.bigint();
await Promise.all(Array.from({ length: producers }, async () => {
  while (next < jobs) { next += 1; await queue.add('t', { i: next }, { removeOnComplete: true }); }
}));
const addSecs = Number(process.hrtime.bigint() - addStart) / 1e9;

// Processing: WORKERS Worker objects, each with CONCURRENCY, an empty handler.
let done = 0;
let finish;
const finished = new Promise((resolve) => { finish = resolve; });
const start = process.hrtime.bigint();
const pool = Array.from({ length: workers }, () => new Worker('bench', async () => {}, { connection: connect(), concurrency }));
for (const w of pool) w.on('completed', () => { if (++done === jobs) finish(); });
await finished;
const secs = Number(process.hrtime.bigint() - start) / 1e9;
await Promise.all(pool.map((w) => w.close()));
await queue.close();
console.log(JSON.stringify({ jobs, workers, concurrency, producers, add_per_s: Math.round(jobs / addSecs),
                             processed_per_s: Math.round(jobs / secs), add_secs: addSecs, process_secs: secs }));
process.exit(0);
