'use strict';
// The binding's calls against fragstat's emulated servers and masters: master lists (given
// and from the catalogue), a scan of 1,000 servers with backpressure, watch events, errors
// by code, AbortSignal, and Node's event loop kept free.
const test = require('node:test');
const assert = require('node:assert/strict');
const dgram = require('node:dgram');
const { once } = require('node:events');
const { Client, FragstatError, CODES } = require('..');
const { serve, cli, stable } = require('./support.js');

/** A UDP socket on loopback that never answers: queries to it time out. */
async function silent(t) {
  const s = dgram.createSocket('udp4');
  s.bind(0, '127.0.0.1');
  await once(s, 'listening');
  t.after(() => s.close());
  return `127.0.0.1:${s.address().port}`;
}

/** A UDP socket on loopback that answers every datagram with `reply`. */
async function answering(t, reply) {
  const s = dgram.createSocket('udp4');
  s.on('message', (_m, from) => s.send(reply, from.port, from.address));
  s.bind(0, '127.0.0.1');
  await once(s, 'listening');
  t.after(() => s.close());
  return `127.0.0.1:${s.address().port}`;
}

/** A master list's JSON without its masters' round-trip times. */
function listStable(list) {
  return { ...list, masters: list.masters.map(({ rtt_ms: _r, ...m }) => m) };
}

test('a master list: the same as `fragstat master`, each server with listed_by', async (t) => {
  const s = await serve(t, 'q3', ['--count', '5', '--master', '--master-listen', '127.0.0.1:0']);
  const client = new Client();
  const list = await client.masterList('q3', s.masters);
  assert.deepEqual(list.servers.map((e) => e.address).sort(), [...s.servers].sort());
  assert.deepEqual(list.servers[0].listed_by, s.masters);
  assert.equal(list.masters[0].status, 'online');
  assert.equal(list.masters[0].servers, 5);
  const theirs = JSON.parse(await cli(['master', 'q3', s.masters[0], '--format', 'json']));
  assert.deepEqual(listStable(list), listStable(theirs));
});

test("a game's catalogue, its entry asked at an emulated master (masterAt)", async (t) => {
  // Doom 3's one catalogue entry, pointed at loopback: no packet goes to the real host.
  const s = await serve(t, 'doom3', ['--count', '3', '--master', '--master-listen', '127.0.0.1:0']);
  const { game } = require('..');
  const catalogue = game('doom3').catalogue;
  assert.equal(catalogue.length, 1);
  const at = { [catalogue[0].address]: s.masters[0] };
  const list = await new Client().masterList('doom3', undefined, { masterAt: at });
  assert.deepEqual(list.servers.map((e) => e.address).sort(), [...s.servers].sort());
  assert.equal(list.masters[0].address, s.masters[0]);
  assert.equal(list.masters[0].status, 'online');
  assert.equal(list.masters[0].catalogue.end, 'short-datagram');
  const theirs = JSON.parse(
    await cli(['master', 'doom3', '--master-at', `${catalogue[0].address}=${s.masters[0]}`, '--format', 'json']),
  );
  assert.deepEqual(listStable(list), listStable(theirs));
  await assert.rejects(new Client().masterList('doom3', { masterAt: { 'nope:1': s.masters[0] } }), {
    code: 'INVALID_INPUT',
    message: "nope:1 is not in doom3's catalogue",
  });
});

test("DDNet's HTTP master list carries each server's info", async (t) => {
  const s = await serve(t, 'ddnet', ['--master', '--master-listen', '127.0.0.1:0', '--players', '2']);
  const list = await new Client().masterList('ddnet', s.masters);
  assert.equal(list.servers.length, 1);
  assert.equal(list.servers[0].info.players.length, 2);
  const theirs = JSON.parse(await cli(['master', 'ddnet', s.masters[0], '--format', 'json']));
  assert.deepEqual(listStable(list), listStable(theirs));
});

test('a scan of 1,000 servers: every one answers, with its players', async (t) => {
  const s = await serve(t, 'q3', ['--count', '1000', '--players', '5', '--no-rate-limit']);
  const client = new Client();
  let online = 0;
  let players = 0;
  const seen = new Set();
  let ticks = 0;
  // The event loop stays free while the scan runs on the library's threads.
  const timer = setInterval(() => ticks++, 1);
  for await (const r of client.scan('q3', s.servers, { players: true })) {
    seen.add(r.address);
    if (r.status === 'online') {
      online++;
      players += r.players.length;
    }
  }
  clearInterval(timer);
  assert.equal(seen.size, 1000);
  assert.equal(online, 1000);
  assert.equal(players, 5000);
  assert.ok(ticks > 0, 'the event loop ran during the scan');
});

/**
 * `n` Quake III servers in this process that answer getinfo (with the query's challenge)
 * and count the queries each got.
 */
async function countingServers(t, n) {
  const asked = [];
  const addrs = [];
  for (let i = 0; i < n; i++) {
    const s = dgram.createSocket('udp4');
    asked.push(0);
    s.on('message', (m, from) => {
      const text = m.toString('latin1');
      const q = /^\xff\xff\xff\xffgetinfo ?(\S*)/.exec(text);
      if (!q) return;
      asked[i]++;
      const reply = `\xff\xff\xff\xffinfoResponse\n\\challenge\\${q[1]}\\hostname\\counted ${i}\\mapname\\q3dm17\\clients\\0\\sv_maxclients\\8\\protocol\\68`;
      s.send(Buffer.from(reply, 'latin1'), from.port, from.address);
    });
    s.bind(0, '127.0.0.1');
    await once(s, 'listening');
    t.after(() => s.close());
    addrs.push(`127.0.0.1:${s.address().port}`);
  }
  return { addrs, asked: () => asked.filter((a) => a > 0).length };
}

// What a scan holds for a reader that has stopped: the batch fetched and the binding's
// buffer (each at most `buffer`), the library's own queue of results (fragstat_core's
// OUTCOME_QUEUE, 256) and the queries in flight.
const LIBRARY_QUEUE = 256;

test('backpressure: while nobody reads, the scan asks no more servers; break ends it', async (t) => {
  const n = 600;
  const { addrs, asked } = await countingServers(t, n);
  const client = new Client();
  const buffer = 2;
  const concurrency = 8;
  const it = client.scan('q3', addrs, { buffer, concurrency });
  const first = await it.next();
  assert.equal(first.value.status, 'online', first.value.error);
  assert.match(first.value.name, /^counted \d+$/);
  // Not reading: the scan may fill what it holds, no more.
  const bound = 2 * buffer + 1 + LIBRARY_QUEUE + concurrency;
  // Watched until the count stops moving (three 100 ms looks alike) or passes the bound:
  // however slow the machine, an unbounded scan keeps asking and is caught.
  let held = asked();
  for (let same = 0; same < 3 && held <= bound; ) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    const now = asked();
    same = now === held ? same + 1 : 0;
    held = now;
  }
  assert.ok(held <= bound, `${held} servers asked while nobody read (bound ${bound})`);
  // Another call on the same client is served meanwhile.
  assert.equal((await client.query('q3', addrs[n - 1])).status, 'online');
  let read = 1;
  for await (const rec of it) {
    assert.equal(rec.status, 'online');
    if (++read === 20) break;
  }
  assert.deepEqual(await it.next(), { done: true, value: undefined }, 'a broken scan stays ended');
  // Reading everything asks everything.
  let all = 0;
  for await (const rec of client.scan('q3', addrs, { concurrency: 50 })) all += rec.status === 'online';
  assert.equal(all, n);
  assert.equal(asked(), n);
});

test('watch: servers up and players joining, then a server down; the CLI says the same', async (t) => {
  const a = await serve(t, 'q3', ['--players', '2']);
  const b = await serve(t, 'q3', []);
  const servers = [a.servers[0], b.servers[0]];
  const client = new Client({ timeout: 300, retries: 0 });
  const events = client.watch({ game: 'q3', servers }, { interval: 100, initial: true });
  const first = [];
  for await (const e of events) {
    first.push(e);
    if (first.length === 4) break;
  }
  const kinds = first.map((e) => `${e.event} ${e.server}`).sort();
  assert.deepEqual(kinds, [
    `player_joined ${servers[0]}`,
    `player_joined ${servers[0]}`,
    `server_up ${servers[0]}`,
    `server_up ${servers[1]}`,
  ].sort());
  const theirs = (await cli(['watch', 'q3', ...servers, '--initial', '--rounds', '1', '--format', 'ndjson']))
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  const noTime = (e) => JSON.stringify({ ...e, at: 0 });
  assert.deepEqual(first.map(noTime).sort(), theirs.map(noTime).sort());

  // After the first scan's events (so after it), the server goes away: `server_down`.
  const later = client.watch([{ game: 'q3', servers }], { interval: 100, initial: true });
  for (let i = 0; i < 4; i++) await later.next();
  b.stop();
  let down;
  for await (const e of later) {
    down = e;
    break;
  }
  assert.equal(down.event, 'server_down');
  assert.equal(down.server, servers[1]);
  assert.ok(['down', 'timeout'].includes(down.status), down.status);
});

test('errors carry a stable code', async (t) => {
  const client = new Client({ timeout: 200, retries: 0 });
  const check = (code, more = {}) => (e) => {
    assert.ok(e instanceof FragstatError, e);
    assert.ok(e instanceof Error);
    assert.equal(e.code, code, e.message);
    assert.ok(CODES.includes(e.code));
    for (const [k, v] of Object.entries(more)) assert.deepEqual(e[k], v, k);
    return true;
  };
  await assert.rejects(client.query('q3', await silent(t)), check('TIMEOUT', { attempts: 1 }));
  await assert.rejects(client.query('nope', '127.0.0.1:1'), check('INVALID_INPUT'));
  await assert.rejects(client.query('q3', '127.0.0.1:99999'), check('INVALID_INPUT'));
  assert.throws(() => new Client({ timeout: -1 }), check('INVALID_INPUT'));
  // Nothing listens for the client there: a socket connected to itself takes datagrams
  // only from itself, so the host answers others with ICMP port unreachable.
  const refusing = dgram.createSocket('udp4');
  refusing.bind(0, '127.0.0.1');
  await once(refusing, 'listening');
  refusing.connect(refusing.address().port, '127.0.0.1');
  await once(refusing, 'connect');
  t.after(() => refusing.close());
  await assert.rejects(
    new Client({ timeout: 1000, retries: 1 }).query('q3', `127.0.0.1:${refusing.address().port}`),
    check('DOWN'),
  );
  // An echo service: replies, none an answer.
  const echo = dgram.createSocket('udp4');
  echo.on('message', (m, from) => echo.send(m, from.port, from.address));
  echo.bind(0, '127.0.0.1');
  await once(echo, 'listening');
  t.after(() => echo.close());
  await assert.rejects(client.query('q3', `127.0.0.1:${echo.address().port}`), check('FOREIGN', { attempts: 1, replies: 1 }));
  // A reply that cannot be read: the field and byte offset say where.
  const bad = await answering(t, Buffer.from('\xff\xff\xff\xffstatusResponse', 'latin1'));
  await assert.rejects(
    client.query('q3', bad, { players: true }),
    check('DECODE', { field: 'infostring', offset: 18, kind: 'missing' }),
  );
  // A flood of datagrams for one query (each the query echoed): past the library's 4,096
  // per query, LIMIT names the limit. Sent in chunks, so loopback's buffers drop none.
  const flood = dgram.createSocket('udp4');
  flood.on('message', (m, from) => {
    let left = 12_000;
    const chunk = () => {
      for (let i = 0; i < 500 && left > 0; i++, left--) flood.send(m, from.port, from.address);
      if (left > 0) setImmediate(chunk);
    };
    chunk();
  });
  flood.bind(0, '127.0.0.1');
  await once(flood, 'listening');
  t.after(() => flood.close());
  await assert.rejects(
    new Client({ timeout: 10_000, retries: 0 }).query('q3', `127.0.0.1:${flood.address().port}`),
    check('LIMIT', { limit: 'datagrams', max: 4096 }),
  );
  // In a scan, a failure is a record, not a throw.
  const recs = [];
  for await (const rec of client.scan('q3', [await silent(t)])) recs.push(rec);
  assert.equal(recs[0].status, 'timeout');
  assert.match(recs[0].error, /timed out/);
});

test('AbortSignal: a query, a scan and a master list stop when aborted', async (t) => {
  const client = new Client({ timeout: 10_000, retries: 2 });
  const target = await silent(t);
  // A query that would wait 30 s stops at once.
  const ac = new AbortController();
  const started = Date.now();
  const q = client.query('q3', target, { signal: ac.signal });
  setImmediate(() => ac.abort());
  await assert.rejects(q, { name: 'AbortError' });
  assert.ok(Date.now() - started < 5000, 'stopped long before the timeout');
  // Already aborted: rejects without starting.
  await assert.rejects(client.query('q3', target, { signal: AbortSignal.abort() }), { name: 'AbortError' });
  // A reason of the caller's is kept.
  const why = new Error('enough');
  const ac2 = new AbortController();
  const q2 = client.masterList('q3', [target], { signal: ac2.signal });
  ac2.abort(why);
  await assert.rejects(q2, (e) => e === why);
  // A scan: ends mid-way with the signal's reason.
  const s = await serve(t, 'q3', ['--count', '200', '--no-rate-limit']);
  const ac3 = new AbortController();
  let n = 0;
  await assert.rejects(async () => {
    for await (const _r of client.scan('q3', s.servers, { buffer: 4, signal: ac3.signal })) {
      if (++n === 10) ac3.abort();
    }
  }, { name: 'AbortError' });
  assert.equal(n, 10);
  // close() cancels whatever is open.
  const pending = client.query('q3', target);
  client.close();
  await assert.rejects(pending, { code: 'CANCELLED' });
});

test('the same record for a server asked twice, by query and by scan', async (t) => {
  const s = await serve(t, 'xonotic', ['--players', '3', '--gametype', 'tdm']);
  const client = new Client();
  const q = await client.query('xonotic', s.servers[0], { players: true });
  const all = [];
  for await (const rec of client.scan('xonotic', s.servers, { players: true })) all.push(rec);
  const [r] = all;
  assert.deepEqual(stable(q), stable(r));
});
