'use strict';
// Benchmark (issue 35): 1,000 emulated Quake III servers on loopback queried from one Node
// process, fragstat's binding against node-gamedig, side by side in one run.
//
//   node bench/scan.js [--runs N] [--warmup N] [--servers N] [--players K]
//                      [--clients none,binding,gamedig,gamedig-pool] [--pool N] [--gamedig-timeout MS]
//
// One standing farm (`fragstat serve q3 --count N --players K --no-rate-limit`, the release
// CLI when built: a debug emulator would time itself, not the clients). Every measured run is
// a fresh `node bench/one.js` (clean RSS; Node's start-up counted for every client alike),
// the clients taking turns (A B C A B C …) so that a change in the machine's load falls on
// all of them. `none` is Node alone (started with the addresses, no client loaded): the
// floor of wall, CPU and RSS that every other column includes. A run that does not read
// every server and every player is invalid: it is printed and left out of the table, and
// the exit status is 1.
// `cargo xtask bench node` builds the release CLI and runs this.

const { spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const { root, serve, fragstatBin } = require('../test/support.js');

function option(name, fallback) {
  const i = process.argv.indexOf(name);
  return i === -1 ? fallback : process.argv[i + 1];
}

const opts = {
  runs: Number(option('--runs', 5)),
  warmup: Number(option('--warmup', 1)),
  servers: Number(option('--servers', 1000)),
  players: Number(option('--players', 5)),
  clients: option('--clients', 'none,binding,gamedig,gamedig-pool').split(','),
  pool: Number(option('--pool', 50)),
  // The cross-check's 1,500 ms (shared/reviews/cross-check-2026-11-b.md §1).
  gamedigTimeout: Number(option('--gamedig-timeout', 1500)),
};

// The release emulator unless told otherwise: support.js's fragstatBin() prefers the debug
// build (what the tests run), which costs the farm several times the CPU per reply.
if (!process.env.FRAGSTAT_BIN) {
  const release = path.join(process.env.CARGO_TARGET_DIR || path.join(root, 'target'), 'release', 'fragstat');
  if (fs.existsSync(release)) process.env.FRAGSTAT_BIN = release;
}

const LABELS = {
  none: 'Node alone',
  binding: 'fragstat binding: `client.scan`',
  gamedig: 'gamedig: all at once',
  'gamedig-pool': `gamedig: pool of ${opts.pool}`,
};
/** A usage error: said in one line (no stack), exit status 2. */
function usage(message) {
  console.error(`bench/scan.js: ${message}`);
  console.error('usage: node bench/scan.js [--runs N] [--warmup N] [--servers N] [--players N] [--clients LIST] [--pool N] [--gamedig-timeout MS]');
  process.exit(2);
}
for (const c of opts.clients) {
  if (!Object.hasOwn(LABELS, c)) usage(`--clients: no client ${c} (${Object.keys(LABELS).join(', ')})`);
}
const whole = (n, min) => Number.isInteger(n) && n >= min;
if (!whole(opts.runs, 1) || !whole(opts.warmup, 0) || !whole(opts.servers, 1) || !whole(opts.players, 0)) {
  usage('--runs and --servers are whole numbers ≥ 1, --warmup and --players ≥ 0');
}
if (!whole(opts.pool, 1) || !(opts.gamedigTimeout > 0)) usage('--pool ≥ 1, --gamedig-timeout > 0 ms');

/** The farm process's CPU so far, ms (/proc: clock ticks of 10 ms). */
function procCpuMs(pid) {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const tick = 1000 / 100; // USER_HZ is 100 on Linux
  return (Number(fields[11]) + Number(fields[12])) * tick;
}

/** Runs one client in its own process; resolves to its report plus the wall time. */
function runOnce(client, addrs, farmPid) {
  return new Promise((resolve, reject) => {
    const farm0 = procCpuMs(farmPid);
    const t0 = process.hrtime.bigint();
    const child = spawn(process.execPath, [
      path.join(__dirname, 'one.js'), client, String(opts.pool), String(opts.gamedigTimeout), ...addrs,
    ], { stdio: ['ignore', 'pipe', 'pipe'] });
    let wallMs = null;
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => {
      out += d;
    });
    child.stderr.on('data', (d) => {
      err += d;
    });
    // A client that never finishes (gamedig's timers are 1.5 s; the binding's scan gives up
    // well within a minute) is a failed run, not a hung bench.
    const guard = setTimeout(() => child.kill('SIGKILL'), 120_000);
    child.on('exit', () => {
      wallMs = Number(process.hrtime.bigint() - t0) / 1e6;
      clearTimeout(guard);
    });
    child.on('error', reject);
    child.on('close', (code) => {
      const farmCpuMs = procCpuMs(farmPid) - farm0;
      if (code !== 0) {
        reject(new Error(`${client} exited ${code}: ${err}`));
        return;
      }
      resolve({ ...JSON.parse(out), wall_ms: wallMs, farm_cpu_ms: farmCpuMs, stderr: err });
    });
  });
}

/** min, median and max of the finite values (`null` when none: no CPU per server for `none`). */
function quantiles(values) {
  const s = values.filter(Number.isFinite).sort((a, b) => a - b);
  if (s.length === 0) return null;
  const mid = s.length >> 1;
  const median = s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
  return { min: s[0], median, max: s[s.length - 1] };
}

const METRICS = [
  ['wall, the child process (spawn to exit), ms', (r) => r.wall_ms, 0],
  ['in the script: the queries, ms', (r) => r.query_ms, 0],
  ['in the script: loading the client module, ms', (r) => r.load_ms, 1],
  ['after the script: exit (wall − the script\'s end), ms', (r) => r.wall_ms - r.end_ms, 0],
  ['CPU user + system, the whole process until the script\'s end, ms', (r) => r.cpu_us / 1000, 0],
  ['CPU loading the client module, ms', (r) => r.load_cpu_us / 1000, 1],
  ['CPU during the queries, ms', (r) => r.query_cpu_us / 1000, 0],
  ['CPU during the queries per server, µs', (r) => r.query_cpu_us / r.answered, 0],
  ['peak RSS, MiB', (r) => r.max_rss_kib / 1024, 1],
  ['the farm\'s CPU during the run, ms (10 ms ticks)', (r) => r.farm_cpu_ms, 0],
];

function cell(q, digits) {
  if (q === null) return '–';
  const f = (v) => v.toFixed(digits);
  return `${f(q.median)} (${f(q.min)}–${f(q.max)})`;
}

function table(results) {
  const cols = opts.clients.filter((c) => results[c].length > 0);
  const lines = [];
  const ratioCols = cols.filter((c) => c.startsWith('gamedig') && cols.includes('binding'));
  lines.push(`| median (min–max) of ${opts.runs} | ${cols.map((c) => LABELS[c]).join(' | ')} |${ratioCols.map((c) => ` ${LABELS[c].split(':')[1].trim()} ÷ binding |`).join('')}`);
  lines.push(`| --- |${' --- |'.repeat(cols.length + ratioCols.length)}`);
  for (const [name, get, digits] of METRICS) {
    const q = Object.fromEntries(cols.map((c) => [c, quantiles(results[c].map(get))]));
    const ratios = ratioCols.map((c) => {
      const b = q.binding?.median;
      return b > 0 && q[c] ? ` ${(q[c].median / b).toFixed(1)} |` : ' – |';
    });
    lines.push(`| ${name} | ${cols.map((c) => cell(q[c], digits)).join(' | ')} |${ratios.join('')}`);
  }
  const answered = cols.map((c) => c === 'none' ? '–' : `${Math.min(...results[c].map((r) => r.answered))} / ${Math.min(...results[c].map((r) => r.players))}`);
  lines.push(`| answered / players read (min) | ${answered.join(' | ')} |${' |'.repeat(ratioCols.length)}`);
  return lines.join('\n');
}

/** The addon's modification time: the lead may rebuild it (atomically) during a run. */
function addonTime() {
  return fs.statSync(path.join(__dirname, '..', 'fragstat.node')).mtime.toISOString();
}

function loadavg() {
  return os.loadavg().map((l) => l.toFixed(2)).join(', ');
}

async function main() {
  const gamedigVersion = JSON.parse(fs.readFileSync(path.join(__dirname, '..', 'node_modules', 'gamedig', 'package.json'), 'utf8')).version;
  const cpu = os.cpus();
  console.log(`# fragstat binding vs node-gamedig ${gamedigVersion}: ${opts.servers} servers × ${opts.players} players, loopback`);
  console.log(`# node ${process.version}, ${cpu.length} × ${cpu[0]?.model ?? '?'}, emulator ${fragstatBin()}`);
  console.log(`# ${opts.runs} runs each after ${opts.warmup} warm-up round(s), clients in turn: ${opts.clients.join(', ')}; gamedig socketTimeout ${opts.gamedigTimeout} ms, maxRetries 1`);
  const addon = addonTime();
  console.log(`# addon fragstat.node of ${addon}`);
  console.log(`# ${new Date().toISOString()} load average at start: ${loadavg()}`);

  const farm = await serve(null, 'q3', [
    '--count', String(opts.servers), '--players', String(opts.players), '--no-rate-limit',
  ]);
  const results = Object.fromEntries(opts.clients.map((c) => [c, []]));
  let invalid = 0;
  try {
    for (let round = 0; round < opts.warmup + opts.runs; round++) {
      const measured = round >= opts.warmup;
      for (const client of opts.clients) {
        const r = await runOnce(client, farm.servers, farm.proc.pid);
        const ok = client === 'none' || r.answered === opts.servers && r.players === opts.servers * opts.players;
        const tag = measured ? `run ${round - opts.warmup + 1}` : 'warm-up';
        console.log(`${tag.padEnd(7)} ${client.padEnd(12)} answered ${r.answered}, players ${r.players}, wall ${r.wall_ms.toFixed(0)} ms, queries ${r.query_ms.toFixed(0)} ms, CPU ${(r.cpu_us / 1000).toFixed(0)} ms (queries ${(r.query_cpu_us / 1000).toFixed(0)}), peak RSS ${(r.max_rss_kib / 1024).toFixed(1)} MiB, farm CPU ${r.farm_cpu_ms} ms${ok ? '' : `  INVALID (first failure: ${r.first_error})`}`);
        if (!measured) continue;
        if (ok) results[client].push(r);
        else invalid += 1;
      }
    }
  } finally {
    farm.stop();
  }
  console.log(`# ${new Date().toISOString()} load average at end: ${loadavg()}`);
  if (addonTime() !== addon) {
    console.log(`# the addon was replaced during the run (now of ${addonTime()}): the binding's runs mix two builds`);
  }
  console.log();
  console.log(table(results));
  if (invalid > 0) {
    console.log(`\n${invalid} run(s) INVALID (not every server or player read): left out of the table`);
    process.exitCode = 1;
  }
}

main().catch((e) => {
  console.error(e);
  process.exitCode = 1;
});
