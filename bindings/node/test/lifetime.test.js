'use strict';
// What a cancelled or forgotten call leaves running: nothing. An aborted master list sends
// no later round, and a watch its reader dropped (collected by the garbage collector)
// stops polling. Both count the datagrams that reach a silent socket on loopback.
const test = require('node:test');
const assert = require('node:assert/strict');
const dgram = require('node:dgram');
const v8 = require('node:v8');
const vm = require('node:vm');
const { once } = require('node:events');
const { Client, game } = require('..');

/** A silent UDP socket that records when each datagram came. */
async function counting(t) {
  const s = dgram.createSocket('udp4');
  const times = [];
  const waiters = [];
  s.on('message', () => {
    times.push(performance.now());
    for (const w of waiters.splice(0)) w();
  });
  s.bind(0, '127.0.0.1');
  await once(s, 'listening');
  t.after(() => s.close());
  const next = () => new Promise((resolve) => waiters.push(resolve));
  return { addr: `127.0.0.1:${s.address().port}`, times, next };
}

const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

test('an aborted master list asks no more masters (its later rounds are not sent)', async (t) => {
  // RtCW's catalogue asks protocol 60, then 57, of each master: two rounds at one address.
  const m = await counting(t);
  const masterAt = Object.fromEntries(game('rtcw').catalogue.map((c) => [c.address, m.addr]));
  const client = new Client({ masterTimeout: 400 });
  const ac = new AbortController();
  const first = m.next();
  const list = client.masterList('rtcw', { masterAt, signal: ac.signal });
  await first;
  ac.abort();
  const abortedAt = performance.now();
  await assert.rejects(list, { name: 'AbortError' });
  // Without the abort, the next round would go out one master timeout (400 ms) after the
  // first; a window of three of them shows whether it does.
  await pause(1200);
  const late = m.times.filter((at) => at > abortedAt + 5);
  assert.deepEqual(late, [], `${late.length} datagrams after the abort`);
  // And the same request not aborted does send its later rounds: the check can fail.
  const before = m.times.length;
  await client.masterList('rtcw', { masterAt });
  assert.ok(m.times.length - before >= 2, `${m.times.length - before} datagrams unaborted`);
});

test('a watch its reader dropped stops polling once collected', async (t) => {
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc');
  const s = await counting(t);
  const collected = [];
  const registry = new FinalizationRegistry((what) => collected.push(what));
  (() => {
    const client = new Client({ timeout: 50, retries: 0 });
    const events = client.watch({ game: 'q3', servers: [s.addr] }, { interval: 50 });
    registry.register(events, 'watch');
    registry.register(client, 'client');
  })();
  // It polls: a datagram arrives every interval.
  await s.next();
  await s.next();
  for (let i = 0; i < 100 && collected.length < 2; i++) {
    gc();
    await pause(10);
  }
  assert.deepEqual(collected.sort(), ['client', 'watch'], 'the watch and its client were collected');
  // Native objects are finalized some turns after the collection: the polling must stop
  // (2.5 s without a datagram) within a generous deadline. A watch that goes on polling
  // never gets there: every 50 ms at first, then once a second, the client's politeness
  // towards an ioquake3 server (a burst, then one query a second).
  const deadline = performance.now() + 20_000;
  let seen = s.times.length;
  let quietSince = performance.now();
  while (performance.now() - quietSince < 2500) {
    assert.ok(performance.now() < deadline, 'still polling 20 s after the watch was collected');
    gc();
    await pause(50);
    if (s.times.length !== seen) {
      seen = s.times.length;
      quietSince = performance.now();
    }
  }
});
