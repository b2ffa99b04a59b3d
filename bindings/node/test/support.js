'use strict';
// Test support: fragstat's own emulated servers and masters (`fragstat serve`, the CLI
// built from this workspace), started on loopback port 0 and read until `ready`, and the
// CLI's JSON to compare the binding with. No sleeps: every wait is on a line or an event.
const { spawn, execFile } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const readline = require('node:readline');

const root = path.resolve(__dirname, '..', '..', '..');

/** The fragstat CLI: FRAGSTAT_BIN, else the workspace's debug or release build. */
function fragstatBin() {
  if (process.env.FRAGSTAT_BIN) return process.env.FRAGSTAT_BIN;
  const target = process.env.CARGO_TARGET_DIR || path.join(root, 'target');
  for (const p of ['debug', 'release']) {
    const bin = path.join(target, p, 'fragstat');
    if (fs.existsSync(bin)) return bin;
  }
  throw new Error('no fragstat CLI built: run `cargo build -p fragstat-cli` (or set FRAGSTAT_BIN)');
}

/**
 * Starts `fragstat serve GAME --listen 127.0.0.1:0 ARGS…`; resolves when it prints `ready`
 * to `{servers, masters, proc, stop()}` (addresses as printed). Stopped when `t` ends.
 */
function serve(t, game, args = []) {
  return new Promise((resolve, reject) => {
    const proc = spawn(fragstatBin(), ['serve', game, '--listen', '127.0.0.1:0', ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    proc.stderr.on('data', (d) => {
      stderr += d;
    });
    const servers = [];
    const masters = [];
    const stop = () => {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
    };
    t?.after(stop);
    const rl = readline.createInterface({ input: proc.stdout });
    rl.on('line', (line) => {
      let m;
      if ((m = /^server (\S+)/.exec(line))) servers.push(m[1]);
      else if ((m = /^master (\S+)/.exec(line))) masters.push(m[1]);
      else if (line === 'ready') resolve({ servers, masters, proc, stop });
    });
    proc.on('exit', (code) => reject(new Error(`fragstat serve ${game} exited ${code}: ${stderr}`)));
    proc.on('error', reject);
  });
}

/** Runs the CLI; resolves to its stdout (rejects on a failure exit). */
function cli(args) {
  return new Promise((resolve, reject) => {
    execFile(fragstatBin(), args, { maxBuffer: 256 << 20 }, (err, stdout, stderr) => {
      if (err && err.code !== 0 && err.code !== 1) reject(new Error(`${args.join(' ')}: ${stderr}`));
      else resolve(stdout);
    });
  });
}

/** The CLI's record(s) for a query, parsed. */
async function cliQuery(game, address, flags = []) {
  return JSON.parse(await cli(['query', game, address, '--format', 'json', ...flags]));
}

/**
 * A copy of a record without what differs from one query to the next: the round-trip time
 * and the challenge a server echoes (idTech 4 and ETQW keep it in `extra`).
 */
function stable(record) {
  const { rtt_ms: _rtt, ...rest } = record;
  if (rest.extra && 'challenge' in rest.extra) {
    const { challenge: _c, ...extra } = rest.extra;
    rest.extra = extra;
  }
  return rest;
}

module.exports = { serve, cli, cliQuery, stable, fragstatBin, root };
