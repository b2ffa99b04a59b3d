// Compiled (not run) by test/types.test.js: every call of index.d.ts as a user writes it,
// and misuses the declarations must refuse (`@ts-expect-error` fails when nothing errs).
import { Client, FragstatError, games, game, type ServerRecord, type FragstatEvent } from 'fragstat';

async function use(): Promise<void> {
  const client = new Client({ timeout: 500, retries: 2, rate: 0 });
  const ac = new AbortController();
  const r: ServerRecord = await client.query('q3', '127.0.0.1:27960', { players: true, signal: ac.signal });
  const n: number | null = r.num_players;
  const first: string | undefined = r.players?.[0]?.name_raw;
  const list = await client.masterList('q3', ['127.0.0.1:27950']);
  const by: string[] = list.servers[0].listed_by;
  await client.masterList('doom3', { masterAt: { 'idnet.ua-corp.com:27650': '127.0.0.1:27650' } });
  for await (const rec of client.scan('q3', ['127.0.0.1:27960'], { players: true, buffer: 8 })) {
    if (rec.status === 'online') console.log(rec.name, n, first, by);
  }
  for await (const e of client.watch({ game: 'q3', servers: ['127.0.0.1:27960'] }, { interval: 1000 })) {
    const ev: FragstatEvent = e;
    if (ev.event === 'player_joined') console.log(ev.name_raw, ev.score);
    if (ev.event === 'server_down') console.log(ev.status, ev.reason);
  }
  try {
    await client.query('q3', '127.0.0.1:1');
  } catch (e) {
    if (e instanceof FragstatError && e.code === 'DECODE') console.log(e.field, e.offset);
  }
  const ids: string[] = games().map((g) => g.id);
  console.log(ids, game('q3')?.default_port);
  client.close();
  {
    using scoped = new Client();
    await scoped.masterList('q3', '127.0.0.1:27950');
  }
  const listed = list.servers[0].info;
  if (listed) console.log(listed.num_players, listed.players?.length);

  // @ts-expect-error: a port is part of the address string, not a number argument
  await client.query('q3', 27960);
  // @ts-expect-error: times are numbers of milliseconds
  new Client({ timeout: '500ms' });
  // @ts-expect-error: no such error code
  const bad: FragstatError['code'] = 'NOPE';
  // @ts-expect-error: a string is not a list of addresses
  client.scan('q3', '127.0.0.1:27960');
  // @ts-expect-error: a listed server's info has no status of its own
  console.log(listed?.status);
  // @ts-expect-error: status is one of four words
  const s: ServerRecord['status'] = 'up';
  // @ts-expect-error: an event without its kind's keys
  const ev: FragstatEvent = { event: 'map_changed', server: 'x', game: 'q3', at: 0 };
  console.log(bad, s, ev);
}
void use;
