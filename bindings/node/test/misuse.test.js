'use strict';
// What a user gets wrong, and what a first trial of the package found: concurrent next()
// calls, a master given as a string or an empty list (never the public catalogue), options
// checked before anything is sent, and close() telling a cancelled stream from a finished one.
const test = require('node:test');
const assert = require('node:assert/strict');
const { Client, FragstatError } = require('..');
const { serve } = require('./support.js');

const invalid = (pattern) => (e) => {
  assert.ok(e instanceof FragstatError, e);
  assert.equal(e.code, 'INVALID_INPUT', e.message);
  assert.match(e.message, pattern);
  return true;
};

test('concurrent next() calls on a scan lose nothing', async (t) => {
  const s = await serve(t, 'q3', ['--count', '200', '--no-rate-limit']);
  const it = new Client().scan('q3', s.servers, { buffer: 8 });
  const results = await Promise.all(Array.from({ length: 250 }, () => it.next()));
  const records = results.filter((r) => !r.done).map((r) => r.value.address);
  assert.equal(records.length, 200);
  assert.equal(new Set(records).size, 200);
  assert.deepEqual(new Set(records), new Set(s.servers));
  assert.ok(results.slice(200).every((r) => r.done), 'the calls after the end are done');
});

test('masters: one as a string is a list of one; an empty list is refused', async (t) => {
  const s = await serve(t, 'q3', ['--count', '2', '--master', '--master-listen', '127.0.0.1:0']);
  const client = new Client();
  const list = await client.masterList('q3', s.masters[0]);
  assert.equal(list.masters.length, 1);
  assert.equal(list.masters[0].address, s.masters[0]);
  assert.equal(list.servers.length, 2);
  // An empty list (a setting that came out empty) must not reach the public catalogue.
  await assert.rejects(client.masterList('q3', []), invalid(/empty list of masters/));
  await assert.rejects(
    client.masterList('q3', s.masters, { masterAt: { 'master.ioquake3.org:27950': s.masters[0] } }),
    invalid(/masterAt/),
  );
  await assert.rejects(client.masterList('q3', 27950), invalid(/array of HOST/));
  // Any iterable is a list of masters (never taken for the options: no catalogue).
  const fromSet = await client.masterList('q3', new Set([s.masters[0]]), {});
  assert.deepEqual(fromSet.masters.map((m) => m.address), [s.masters[0]]);
  // A master named twice is asked once, as the CLI asks it.
  const twice = await client.masterList('q3', [s.masters[0], s.masters[0]]);
  assert.equal(twice.masters.length, 1);
});

test('a watch of nothing is refused', () => {
  const client = new Client();
  assert.throws(() => client.watch([]), invalid(/no sources/));
  assert.throws(() => client.watch({ game: 'q3' }), invalid(/watches nothing/));
  assert.throws(() => client.watch({ game: 'q3', server: ['127.0.0.1:9'] }), invalid(/no key "server"/));
  assert.throws(() => client.watch({ game: 'q3', servers: [] }), invalid(/watches nothing/));
});

test('options are checked before anything is sent', async (t) => {
  const target = '127.0.0.1:9';
  const client = new Client({ timeout: 100, retries: 0 });
  assert.throws(() => new Client({ retries: -1 }), invalid(/retries: -1/));
  assert.throws(() => new Client({ tiemout: 5 }), invalid(/no option "tiemout"/));
  assert.throws(() => new Client({ concurrency: 0 }), invalid(/concurrency/));
  assert.throws(() => new Client('fast'), invalid(/options are an object/));
  await assert.rejects(client.query('q3', target, { retries: -1 }), invalid(/retries/));
  await assert.rejects(client.query('q3', target, { retries: 1.5 }), invalid(/retries: 1.5/));
  await assert.rejects(client.query('q3', target, { timeout: 0 }), invalid(/timeout: 0/));
  await assert.rejects(client.query('q3', target, { signal: 'x' }), invalid(/AbortSignal/));
  await assert.rejects(client.query('q3', target, { players: 'yes' }), invalid(/players/));
  assert.throws(() => client.scan('q3', ['127.0.0.1:9'], { buffer: -1 }), invalid(/buffer/));
  assert.throws(() => client.scan('q3', '127.0.0.1:27960'), invalid(/array \(or iterable\)/));
  assert.throws(() => client.watch({ game: 'q3', servers: '127.0.0.1:27960' }), invalid(/servers is an array/));
  // A type napi checks itself is INVALID_INPUT too.
  await assert.rejects(client.query(3, target), invalid(/./));
  // null options are no options.
  const s = await serve(t, 'q3', []);
  assert.equal((await client.query('q3', s.servers[0], null)).status, 'online');
});

test('close(): a pending query rejects and an open scan throws CANCELLED; the client goes on', async (t) => {
  const s = await serve(t, 'q3', ['--count', '300', '--no-rate-limit']);
  const client = new Client();
  const it = client.scan('q3', s.servers, { buffer: 2, concurrency: 2 });
  assert.equal((await it.next()).done, false);
  client.close();
  await assert.rejects(it.next(), { code: 'CANCELLED' });
  assert.deepEqual(await it.next(), { done: true, value: undefined }, 'then it is over');
  // A loop reading it sees the error, not a quiet end.
  const it2 = client.scan('q3', s.servers, { buffer: 2, concurrency: 2 });
  let read = 0;
  await assert.rejects(async () => {
    for await (const _r of it2) if (++read === 5) client.close();
  }, { code: 'CANCELLED' });
  assert.equal(read, 5);
  assert.equal((await client.query('q3', s.servers[0])).status, 'online');
});
