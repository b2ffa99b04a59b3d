'use strict';
// Every game of every family, through the binding and through the CLI (the Rust library's
// own output): the same record, key for key, but the round-trip time.
const test = require('node:test');
const assert = require('node:assert/strict');
const { Client, games, game } = require('..');
const { serve, cliQuery, stable } = require('./support.js');

const ids = games().map((g) => g.id);

test('games() lists every game the CLI lists', async () => {
  const { cli } = require('./support.js');
  const fromCli = JSON.parse(await cli(['games', '--format', 'json']));
  assert.deepEqual(
    games(),
    fromCli.map(({ master_types: _m, ...g }) => g),
  );
  assert.ok(ids.length >= 30, `${ids.length} games`);
  assert.equal(game('q3a').id, 'q3', 'an alias finds its game');
  assert.equal(game('oob:71').id, 'oob:71', 'oob:NN is made on the fly');
  assert.equal(game('nope'), null);
});

for (const [label, flags, opts] of [
  ['info only', [], {}],
  ['players and rules', ['--players', '--rules'], { players: true, rules: true }],
]) {
  test(`every game, ${label}: the binding's record is the CLI's`, async (t) => {
    const client = new Client({ timeout: 2000 });
    const failures = [];
    // A few games at a time: each is an emulator process, a binding query and a CLI query.
    const queue = [...ids, 'oob:71'];
    async function one(id) {
      const s = await serve(t, id, ['--players', '4', '--no-rate-limit', '--name', '^1Fam ^7Srv']);
      const addr = s.servers[0];
      const mine = await client.query(id, addr, opts);
      const [theirs] = await cliQuery(id, addr, flags);
      s.stop();
      try {
        assert.equal(mine.status, 'online', `${id}: ${mine.error}`);
        assert.deepEqual(stable(mine), stable(theirs));
        assert.equal(typeof mine.rtt_ms, 'number');
        // IW4x's status lists no bots (docs/protocols/quake3.md): its two humans.
        if (opts.players) assert.equal(mine.players.length, id === 'iw4x' ? 2 : 4, `${id} players`);
      } catch (e) {
        failures.push(`${id}: ${e.message}`);
      }
    }
    const workers = Array.from({ length: 4 }, async () => {
      while (queue.length) await one(queue.shift());
    });
    await Promise.all(workers);
    client.close();
    assert.deepEqual(failures, []);
  });
}
