'use strict';
// The gamedig adapter (gamedig.js) against REAL gamedig 5.3.3 on fragstat's emulated
// servers: the cross-check's variants A and B (shared/reviews/cross-check-2026-11-b.md §1),
// every game both read, field by field. A difference passes only through DIFFS below, each
// entry the row of the README's table ("Where values differ") with its finding; an entry that never applies fails too
// (so the table cannot go stale when gamedig or the emulator changes).
const test = require('node:test');
const assert = require('node:assert/strict');
const dgram = require('node:dgram');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const { GameDig: RealGameDig } = require('gamedig');
const { GameDig } = require('../gamedig.js');
const { serve } = require('./support.js');

const HOST = '127.0.0.1';
const A = ['--players', '5', '--max-players', '12', '--name', '^1Cross ^7Check', '--no-rate-limit'];
const B = ['--password', '--players', '3', '--max-players', '16', '--name', '^2Pw ^7Srv', '--no-rate-limit'];
// Generous: the machine is shared; both clients get the same.
const OPTS = { host: HOST, givenPortOnly: true, maxRetries: 3, socketTimeout: 3000 };

// gamedig type → fragstat game to serve. mohaa is left out: gamedig's mohaa is GameSpy 1
// on port+97 (lib/games.js mohaa: port_query_offset 97, protocol gamespy1), which the
// emulator does not serve (cross-check D5); only the adapter is tested there, below.
const BOTH = {
  q3a: 'q3', wet: 'et', openarena: 'openarena', rtcw: 'rtcw', urbanterror: 'urt',
  swjk2jo: 'jk2', swjkja: 'jka', sof2: 'sof2', cod: 'cod', coduo: 'coduo', cod2: 'cod2',
  cod4mw: 'cod4', codmw2: 'iw4x', tremulous: 'tremulous', wop: 'wop', doom3: 'doom3',
  quake4: 'quake4', prey: 'prey', etqw: 'etqw', warsow: 'warsow', warfork: 'warfork',
  nexuiz: 'nexuiz', xonotic: 'xonotic',
};
// DarkPlaces says nothing of a password, and its emulator refuses --password (cross-check §1 B).
const NO_B = new Set(['nexuiz', 'xonotic']);

// gamedig's quake3.js (and xonotic.js, warsow.js over it) copies the cvar strings as they
// are (protocols/quake2.js:79, :81): "12", "0"/"1" — cross-check §1, differences everywhere.
const Q3 = ['q3a', 'wet', 'openarena', 'rtcw', 'urbanterror', 'swjk2jo', 'swjkja', 'sof2', 'cod',
  'coduo', 'cod2', 'cod4mw', 'codmw2', 'tremulous', 'wop', 'warsow', 'warfork', 'nexuiz', 'xonotic'];
// The games whose status carries g_needpass, so that gamedig's password is its string.
const NEEDPASS = ['q3a', 'wet', 'openarena', 'rtcw', 'urbanterror', 'swjk2jo', 'swjkja', 'sof2',
  'tremulous', 'wop', 'warsow', 'warfork'];

const stringOf = (gd, ad) => typeof ad === 'number' && gd === String(ad);
const flagOf = (gd, ad) => typeof ad === 'boolean' && gd === (ad ? '1' : '0');
// A team column before the name (SoF2, D1; DarkPlaces team games, D6): gamedig's names are
// the team numbers, the adapter's the names.
const teamNames = (gd, ad) => gd.length === ad.length && gd.every((n) => /^\d+$/.test(n)) && !ad.some((n) => /^\d+$/.test(n));

/** (type:field) → {finding, ok(gamedig, adapter)}: the allowed differences. */
const DIFFS = new Map();
const allow = (types, field, finding, ok) => {
  for (const t of types) DIFFS.set(`${t}:${field}`, { finding, ok, used: false });
};
allow(Q3, 'maxplayers', '§1 strings (quake2.js:81-82)', stringOf);
allow(NEEDPASS, 'password', '§1 strings (quake2.js:79)', flagOf);
allow(['sof2'], 'players.name', 'D1 (quake2.js:68-73)', teamNames);
allow(['sof2'], 'bots.name', 'D1 (quake2.js:68-73)', teamNames);
// DarkPlaces team lines `frags ping team "name"` (cross-check D6): gamedig's nexuiz is plain
// quake3 (lib/games.js nexuiz), the team for every name; xonotic.js:9-13 swaps the fields
// back for players only, from the unstripped field, and never for bots.
allow(['nexuiz', 'xonotic'], 'bots.name', 'D6 (quake2.js:68-73)', teamNames);
allow(['nexuiz'], 'players.name', 'D6 (quake2.js:68-73)', teamNames);
allow(['xonotic'], 'players.name', 'D6 (xonotic.js:9-13)', (gd, ad) =>
  gd.length === ad.length && gd.every((n, i) => n !== ad[i] && n.replace(/\^\d/g, '') === ad[i]));
// Only g_needpass is read (quake2.js:79): CoD's pswrd and IW4x's isPrivate are not (D2).
allow(['cod', 'coduo', 'cod2', 'cod4mw', 'codmw2'], 'password', 'D2 (quake2.js:79)', (gd, ad) => gd === false && ad === true);
// Not in the cross-check (N1): the server echoes gamedig's empty challenge as a variable
// (`\challenge\\`); fragstat leaves the echoed challenge out of rules (docs/json.md "rules").
allow(['warsow', 'warfork', 'codmw2'], 'raw.keys', 'N1 (new: echoed challenge)', (gd, ad) => {
  const extra = gd.filter((k) => !ad.includes(k));
  return extra.length === 1 && extra[0] === 'challenge' && ad.every((k) => gd.includes(k));
});

/** Compares one field; a difference must be an allowed one. */
function same(type, field, gd, ad, where) {
  try {
    assert.deepEqual(ad, gd);
  } catch {
    const d = DIFFS.get(`${type}:${field}`);
    assert.ok(d, `${where} ${field}: gamedig ${JSON.stringify(gd)} vs adapter ${JSON.stringify(ad)}, not in the README's table ("Where values differ")`);
    assert.ok(d.ok(gd, ad), `${where} ${field}: gamedig ${JSON.stringify(gd)} vs adapter ${JSON.stringify(ad)} is not ${d.finding}`);
    d.used = true;
  }
}

// Array.from: gamedig's lists are its Players class (lib/Results.js:16), whose map() keeps
// the class, which deepEqual would count as a difference.
const names = (list) => Array.from(list, (p) => p.name);
const rawOf = (list) => Array.from(list, (p) => ({ frags: p.raw.frags, ping: p.raw.ping }));
const rawKeys = (raw) => Object.keys(raw).filter((k) => k !== 'fragstat').sort();

function compare(type, variant, gd, ad) {
  const where = `${type} ${variant}:`;
  for (const f of ['name', 'map', 'password', 'maxplayers', 'numplayers']) same(type, f, gd[f], ad[f], where);
  same(type, 'players.name', names(gd.players), names(ad.players), where);
  same(type, 'bots.name', names(gd.bots), names(ad.bots), where);
  same(type, 'players.raw', rawOf(gd.players), rawOf(ad.players), where);
  same(type, 'bots.raw', rawOf(gd.bots), rawOf(ad.bots), where);
  same(type, 'raw.keys', Object.keys(gd.raw).sort(), rawKeys(ad.raw), where);
  // What gamedig cannot say is kept: fragstat's own record under raw.fragstat.
  assert.equal(ad.raw.fragstat.status, 'online', where);
  assert.equal(ad.connect, `${HOST}:${ad.queryPort}`, where);
  assert.equal(typeof ad.ping, 'number', where);
}

async function both(t, type, args, variant) {
  const { servers } = await serve(t, BOTH[type], args);
  const port = Number(servers[0].split(':').pop());
  const gd = await RealGameDig.query({ ...OPTS, type, port });
  const ad = await GameDig.query({ ...OPTS, type, port });
  compare(type, variant, gd, ad);
  return { gd, ad };
}

test('variant A: adapter and gamedig 5.3.3 agree but for README.md, "Switching from node-gamedig"', { concurrency: true }, async (t) => {
  await Promise.all(Object.keys(BOTH).map((type) => t.test(type, async (st) => {
    const { ad } = await both(st, type, A, 'A');
    assert.equal(ad.name, 'Cross Check');
    assert.equal(ad.maxplayers, 12);
    assert.equal(ad.numplayers, ad.players.length + ad.bots.length);
    // D10: a DarkPlaces server says nothing of a password: false as gamedig, unknown kept.
    if (NO_B.has(type)) assert.equal(ad.raw.fragstat.password, null);
  })));
});

test('variant B: the same with a password', { concurrency: true }, async (t) => {
  const types = Object.keys(BOTH).filter((type) => !NO_B.has(type));
  await Promise.all(types.map((type) => t.test(type, async (st) => {
    const { ad } = await both(st, type, B, 'B');
    assert.equal(ad.name, 'Pw Srv');
    assert.equal(ad.password, true);
    assert.equal(ad.maxplayers, 16);
  })));
});


test('games only the adapter reads', { concurrency: true }, async (t) => {
  // mohaa: gamedig's is GameSpy 1 (see BOTH); fragstat reads its Quake III-style status.
  const cases = [
    // MOHAA draws no colour codes, fragstat says (cross-check D5; qstat strips them).
    ['mohaa', 'mohaa', '^1Cross ^7Check'], ['etl', 'etl', 'Cross Check'],
    ['unvanquished', 'unvanquished', 'Cross Check'],
    // Teeworlds and DDNet names have no colour codes: `^` is a character there.
    ['teeworlds', 'teeworlds', '^1Cross ^7Check'], ['ddnet', 'ddnet', '^1Cross ^7Check'],
  ];
  await Promise.all(cases.map(([type, g, name]) => t.test(type, async (st) => {
    const { servers } = await serve(st, g, A);
    const port = Number(servers[0].split(':').pop());
    const r = await GameDig.query({ ...OPTS, type, port });
    assert.equal(r.name, name);
    assert.equal(r.maxplayers, 12);
    assert.equal(r.numplayers, 5);
    assert.equal(r.players.length + r.bots.length, 5);
    assert.equal(r.queryPort, port);
    assert.equal(r.connect, `${HOST}:${port}`);
    assert.equal(r.raw.fragstat.game, g);
  })));
});

test('options: old ids, requestPlayers, an instance of its own', async (t) => {
  const { servers } = await serve(t, 'et', A);
  const port = Number(servers[0].split(':').pop());
  // gamedig accepts an old id only with checkOldIDs (lib/game-resolver.js:16-24).
  await assert.rejects(GameDig.query({ ...OPTS, type: 'wolfensteinet', port }), { message: 'Invalid game: wolfensteinet' });
  const dig = new GameDig();
  const r = await dig.query({ ...OPTS, type: 'wolfensteinet', checkOldIDs: true, port: String(port) });
  assert.equal(r.name, 'Cross Check');
  assert.equal(r.players.length + r.bots.length, 5);
  // stripColors: false, the names as sent, as gamedig gives them (protocols/quake3.js:25-26).
  const plain = { ...OPTS, type: 'wet', port, stripColors: false };
  const [gd, ad] = [await RealGameDig.query(plain), await dig.query(plain)];
  assert.equal(ad.name, '^1Cross ^7Check');
  assert.deepEqual([ad.name, names(ad.players), names(ad.bots)], [gd.name, names(gd.players), names(gd.bots)]);
  const bare = await dig.query({ ...OPTS, type: 'wet', port, requestPlayers: false });
  assert.deepEqual([bare.players, bare.bots, bare.numplayers], [[], [], 5]);
});

test('an unknown type rejects as gamedig does', async () => {
  await assert.rejects(GameDig.query({ ...OPTS, type: 'minecraft', port: 1 }), (e) => {
    assert.ok(e instanceof Error);
    assert.equal(e.message, 'Invalid game: minecraft');
    return true;
  });
  await assert.rejects(GameDig.query({ host: HOST }), { message: 'No game specified' });
});

test('a silent server rejects with code TIMEOUT', async (t) => {
  const sock = dgram.createSocket('udp4');
  t.after(() => sock.close());
  await new Promise((resolve) => sock.bind(0, HOST, resolve));
  const port = sock.address().port;
  const started = Date.now();
  await assert.rejects(GameDig.query({ type: 'q3a', host: HOST, port, socketTimeout: 200, maxRetries: 2 }), (e) => {
    assert.ok(e instanceof Error);
    assert.equal(e.code, 'TIMEOUT');
    assert.match(e.message, /^Failed all 2 attempts$/);
    assert.equal(e.cause.name, 'FragstatError');
    return true;
  });
  assert.ok(Date.now() - started < 10000);
  // attemptTimeout bounds the whole query, retries included (gamedig's per-attempt bound).
  await assert.rejects(GameDig.query({ type: 'q3a', host: HOST, port, socketTimeout: 5000, maxRetries: 3, attemptTimeout: 150 }), (e) => {
    assert.equal(e.code, 'DEADLINE');
    assert.match(e.cause.message, /^Attempt - Timed out after 150ms$/);
    return true;
  });
  assert.ok(Date.now() - started < 10000);
});

test('DarkPlaces team games (--gametype tdm): D6', { concurrency: true }, async (t) => {
  const tdm = [...A, '--gametype', 'tdm'];
  await Promise.all(['nexuiz', 'xonotic'].map((type) => t.test(type, async (st) => {
    const { ad } = await both(st, type, tdm, 'A tdm');
    assert.deepEqual(names(ad.players), ['Player 1', 'Player 3', 'Player 5']);
    assert.deepEqual(names(ad.bots), ['[BOT]Toxic', '[BOT]Discovery']);
    assert.deepEqual(Array.from(ad.players, (p) => p.raw.team), [1, 0, 2]);
  })));
});

test('every allowed difference was met (the table is not stale)', () => {
  const unused = [...DIFFS].filter(([, d]) => !d.used).map(([k]) => k);
  assert.deepEqual(unused, []);
});

test('gamedig.d.ts: tsc accepts the use and refuses the misuses', (t) => {
  const here = path.resolve(__dirname, '..');
  const tsc = path.join(here, 'node_modules', '.bin', 'tsc');
  assert.ok(fs.existsSync(tsc), 'typescript is installed (npm install)');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fragstat-gamedig-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'usage.ts');
  // @ts-expect-error fails the compile when the line after it is accepted.
  fs.writeFileSync(file, `import { GameDig, QueryOptions, QueryResult, Player, QueryError } from ${JSON.stringify(path.join(here, 'gamedig'))};
export async function use(): Promise<number> {
  const o: QueryOptions = { type: 'q3a', host: '127.0.0.1', port: '27960', givenPortOnly: true, maxRetries: 2 };
  const r: QueryResult = await GameDig.query(o);
  const p: Player = r.players[0];
  const b: boolean = r.password;
  const dig = new GameDig({ listenUdpPort: 0 });
  await dig.query({ type: 'ddnet', address: '127.0.0.1', requestRules: true });
  try { await GameDig.getInstance().query(o); } catch (e) { const q = e as QueryError; void q.code; }
  // @ts-expect-error type is required
  await GameDig.query({ host: '127.0.0.1' });
  // @ts-expect-error maxplayers is a number here, not gamedig's string
  const m: string = r.maxplayers;
  void m;
  return r.maxplayers + r.numplayers + (p.raw.frags ?? 0) + (b ? 1 : 0) + r.queryPort;
}
`);
  execFileSync(tsc, ['--noEmit', '--strict', '--target', 'es2022', '--lib', 'es2022', file], { stdio: 'inherit' });
});

test('results have exactly the keys gamedig.d.ts declares', async (t) => {
  const dts = fs.readFileSync(path.resolve(__dirname, '..', 'gamedig.d.ts'), 'utf8');
  const body = /export interface QueryResult \{([\s\S]*?)\n\}/.exec(dts)[1];
  const keys = [...body.matchAll(/^ {2}(\w+)\??:/gm)].map((k) => k[1]);
  const { servers } = await serve(t, 'q3', A);
  const r = await GameDig.query({ ...OPTS, type: 'q3a', port: Number(servers[0].split(':').pop()) });
  assert.deepEqual(Object.keys(r), keys);
  assert.deepEqual(Object.keys(r.players[0]), ['name', 'raw']);
});
