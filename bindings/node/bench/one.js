'use strict';
// One measured run of bench/scan.js, in a Node process of its own so that its peak RSS
// and CPU are this client's alone (a process's maxRSS never goes down: a second client in
// the same process would inherit the first one's peak).
//
//   node bench/one.js CLIENT POOL SOCKET_TIMEOUT_MS ADDR…
//
// CLIENT: `binding` (fragstat's Client.scan), `gamedig` (every query at once),
// `gamedig-pool` (POOL queries in flight) or `none` (Node alone: the floor under the others). Prints one JSON line: servers answered, players
// read, the times and the process's resourceUsage().

const { performance } = require('node:perf_hooks');
const path = require('node:path');

// Node's own start-up, before this script ran (ms since the process began).
const bootMs = performance.now();

const [client, poolText, timeoutText, ...addrs] = process.argv.slice(2);
const pool = Number(poolText);
const socketTimeout = Number(timeoutText);

/** `127.0.0.1:PORT` → PORT (gamedig takes host and port apart). */
function port(addr) {
  return Number(addr.slice(addr.lastIndexOf(':') + 1));
}

/** fragstat's binding: one scan of every address, players asked for. */
async function binding() {
  const { Client } = require(path.join(__dirname, '..'));
  const loaded = measure();
  const c = new Client();
  let answered = 0;
  let players = 0;
  let firstError = null;
  for await (const r of c.scan('q3', addrs, { players: true })) {
    if (r.status === 'online' && Array.isArray(r.players)) {
      answered += 1;
      players += r.players.length;
    } else if (firstError === null) {
      firstError = `${r.address}: ${r.status} ${r.error ?? ''}`;
    }
  }
  c.close();
  return { loaded, answered, players, firstError };
}

/** No client: what Node's start-up and exit cost by themselves. */
async function none() {
  return { loaded: measure(), answered: 0, players: 0, firstError: null };
}

/** One gamedig query as the cross-check made it (shared/reviews/cross-check-2026-11-b.md §1). */
function gamedigQuery(GameDig, addr) {
  return GameDig.query({
    type: 'q3a',
    host: '127.0.0.1',
    port: port(addr),
    givenPortOnly: true,
    maxRetries: 1,
    socketTimeout,
  });
}

/** gamedig's state: quake2.js puts ping-0 players under `bots`, the others under `players`. */
function countPlayers(state) {
  return state.players.length + state.bots.length;
}

/** gamedig: every query started at once, `Promise.allSettled` over them. */
async function gamedigAll() {
  const { GameDig } = require('gamedig');
  const loaded = measure();
  const settled = await Promise.allSettled(addrs.map((a) => gamedigQuery(GameDig, a)));
  let answered = 0;
  let players = 0;
  let firstError = null;
  settled.forEach((s, i) => {
    if (s.status === 'fulfilled') {
      answered += 1;
      players += countPlayers(s.value);
    } else if (firstError === null) {
      firstError = `${addrs[i]}: ${String(s.reason?.message ?? s.reason).split('\n')[0]}`;
    }
  });
  return { loaded, answered, players, firstError };
}

/** gamedig with at most `pool` queries in flight: `pool` workers taking the next address. */
async function gamedigPool() {
  const { GameDig } = require('gamedig');
  const loaded = measure();
  let next = 0;
  let answered = 0;
  let players = 0;
  let firstError = null;
  async function worker() {
    while (next < addrs.length) {
      const addr = addrs[next++];
      try {
        const state = await gamedigQuery(GameDig, addr);
        answered += 1;
        players += countPlayers(state);
      } catch (e) {
        if (firstError === null) firstError = `${addr}: ${String(e.message).split('\n')[0]}`;
      }
    }
  }
  await Promise.all(Array.from({ length: Math.min(pool, addrs.length) }, worker));
  return { loaded, answered, players, firstError };
}

/** The clock and the process's CPU now (µs). */
function measure() {
  const u = process.resourceUsage();
  return { ms: performance.now(), cpuUs: u.userCPUTime + u.systemCPUTime };
}

async function main() {
  const run = { binding, gamedig: gamedigAll, 'gamedig-pool': gamedigPool, none }[client];
  if (!run || addrs.length === 0) {
    throw new Error('usage: node bench/one.js binding|gamedig|gamedig-pool|none POOL TIMEOUT_MS ADDR…');
  }
  const start = measure();
  const { loaded, answered, players, firstError } = await run();
  const end = measure();
  const u = process.resourceUsage();
  process.stdout.write(`${JSON.stringify({
    client,
    servers: addrs.length,
    answered,
    players,
    first_error: firstError,
    boot_ms: bootMs,
    load_ms: loaded.ms - start.ms,
    load_cpu_us: loaded.cpuUs - start.cpuUs,
    query_ms: end.ms - loaded.ms,
    end_ms: end.ms,
    query_cpu_us: end.cpuUs - loaded.cpuUs,
    cpu_us: u.userCPUTime + u.systemCPUTime,
    max_rss_kib: u.maxRSS,
  })}\n`);
}

main().catch((e) => {
  process.stderr.write(`${e.stack ?? e}\n`);
  process.exitCode = 1;
});
