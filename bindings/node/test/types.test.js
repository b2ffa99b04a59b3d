'use strict';
// index.d.ts against the implementation: `tsc --noEmit` over a usage file (which also
// holds misuses the declarations must refuse), and the keys of live records, players,
// master reports and events against the interfaces declared for them.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const { Client } = require('..');
const { serve } = require('./support.js');

const here = path.resolve(__dirname, '..');
const dts = fs.readFileSync(path.join(here, 'index.d.ts'), 'utf8');

/** The property names an interface of index.d.ts declares (its own lines only). */
function declared(name) {
  const m = new RegExp(`export interface ${name}(?: extends [^{]+)? \\{([\\s\\S]*?)\\n\\}`).exec(dts);
  assert.ok(m, `interface ${name} in index.d.ts`);
  return [...m[1].matchAll(/^ {2}(\w+)\??:/gm)].map((k) => k[1]);
}

test('tsc --noEmit: the usage compiles and every misuse is refused', () => {
  const tsc = path.join(here, 'node_modules', '.bin', 'tsc');
  assert.ok(fs.existsSync(tsc), 'typescript is installed (npm install)');
  execFileSync(tsc, ['-p', path.join(here, 'test', 'types', 'tsconfig.json')], { stdio: 'inherit' });
});

test('live records have exactly the keys index.d.ts declares', async (t) => {
  const s = await serve(t, 'q3', ['--players', '2', '--count', '2', '--master', '--master-listen', '127.0.0.1:0']);
  const client = new Client();
  const r = await client.query('q3', s.servers[0], { players: true });
  assert.deepEqual(Object.keys(r), declared('ServerRecord'));
  assert.deepEqual(Object.keys(r.players[0]), declared('Player'));
  const list = await client.masterList('q3', s.masters);
  assert.deepEqual(Object.keys(list), declared('MasterList'));
  const report = declared('MasterReport').filter((k) => k !== 'catalogue');
  assert.deepEqual(Object.keys(list.masters[0]), report);
  assert.deepEqual(Object.keys(list.servers[0]), declared('ListedServer'));
  const events = [];
  for await (const e of client.watch({ game: 'q3', servers: [s.servers[0]] }, { interval: 100, initial: true, scans: 1 })) {
    events.push(e);
  }
  const up = events.find((e) => e.event === 'server_up');
  const joined = events.find((e) => e.event === 'player_joined');
  const base = ['event', 'server', 'game', 'at'];
  const upKeys = /event: 'server_up';([\s\S]*?)\}\)/.exec(dts)[1].match(/(\w+):/g).map((k) => k.slice(0, -1));
  assert.deepEqual(Object.keys(up), [...base, ...upKeys]);
  const playerKeys = declared('PlayerEventFields').filter((k) => k !== 'slot' && k !== 'guid');
  assert.deepEqual(Object.keys(joined), [...base, ...playerKeys]);
});
