'use strict';
// A node-gamedig 5 look-alike over fragstat's Client, so that a gamedig user switches by
// changing one import: `GameDig.query({type, host, port…})` resolves to gamedig's result
// shape (node_modules/gamedig/lib/Results.js), built from fragstat's record (docs/json.md).
// Where the values differ from gamedig's, and why, is the README's table ("Where values differ").

const dns = require('node:dns');
const net = require('node:net');
const { Client, FragstatError, game } = require('./index.js');

// gamedig 5.3.3 type id (lib/games.js) → fragstat game id, for the games both read.
const TYPES = Object.freeze({
  q3a: 'q3', wet: 'et', openarena: 'openarena', rtcw: 'rtcw', urbanterror: 'urt',
  swjk2jo: 'jk2', swjkja: 'jka', sof2: 'sof2', cod: 'cod', coduo: 'coduo', cod2: 'cod2',
  cod4mw: 'cod4', codmw2: 'iw4x', mohaa: 'mohaa', tremulous: 'tremulous', wop: 'wop',
  doom3: 'doom3', quake4: 'quake4', prey: 'prey', etqw: 'etqw', warsow: 'warsow',
  warfork: 'warfork', nexuiz: 'nexuiz', xonotic: 'xonotic',
});

// gamedig's `extra.old_id`s of those games (lib/games.js), accepted with `checkOldIDs`
// as gamedig does (lib/game-resolver.js:16-22).
const OLD_IDS = Object.freeze({
  quake3: 'q3a', wolfensteinet: 'wet', swjk2: 'swjk2jo', swjk: 'swjkja', cod4: 'cod4mw',
});

// ETQW: gamedig's `port` is the game port 3074 and `port_query` 27733 (lib/games.js etqw);
// a reply from 27733 gets connect port 3074 (protocols/doom3.js:90).
const ETQW_GAME_PORT = 3074;
const ETQW_QUERY_PORT = 27733;

/** gamedig's error for an unknown type (lib/game-resolver.js:6, 24), with a code. */
function invalid(message) {
  const e = new Error(message);
  e.code = 'INVALID_INPUT';
  return e;
}

/** The fragstat game for a type: gamedig's ids, its old ids with checkOldIDs, then fragstat's. */
function resolveType(type, checkOldIDs) {
  if (!type) throw invalid('No game specified');
  // Own properties only: `constructor` or `toString` is no game.
  let id = Object.hasOwn(TYPES, type) ? TYPES[type] : undefined;
  if (id === undefined && checkOldIDs && Object.hasOwn(OLD_IDS, type)) id = TYPES[OLD_IDS[type]];
  if (id === undefined) {
    // fragstat's ids and aliases (etl, unvanquished, teeworlds, ddnet…): the games gamedig
    // cannot read. gamedig's old ids that are not fragstat aliases stay invalid without
    // checkOldIDs, as in gamedig.
    const g = game(type);
    if (g === null) throw invalid('Invalid game: ' + type);
    return g;
  }
  return game(id);
}

/** `ip:port` as fragstat parses it (IPv6 in brackets). */
function hostPort(ip, port) {
  return net.isIPv6(ip) ? `[${ip}]:${port}` : `${ip}:${port}`;
}

/** Where to send: `address` as given (gamedig skips the lookup then, protocols/core.js:78), else host. */
async function target(options) {
  if (options.address) return options.address;
  const host = options.host;
  if (!host) throw invalid('No host specified');
  // With ipFamily 4 or 6 a name is looked up here, as gamedig does (lib/DnsResolver.js:68);
  // otherwise fragstat resolves it. An IP literal is used as is (DnsResolver.js:28-30).
  const family = options.ipFamily;
  if (net.isIP(host) === 0 && (family === 4 || family === 6)) {
    return (await dns.promises.lookup(host, family)).address;
  }
  return host;
}

/** A count from the record; 0 where fragstat has none, gamedig's default (lib/Results.js:30-31). */
function num(v) {
  return typeof v === 'number' ? v : 0;
}

// idTech 4: what gamedig's doom3.js puts in raw beyond the server variables
// (protocolVersion :26, osmask :69, ETQW's ranked…maxClients :70-81), from fragstat's extra.
function idtech4Raw(extra) {
  const raw = {};
  if (!extra) return raw;
  if (extra.protocol != null) raw.protocolVersion = extra.protocol;
  if (extra.os_mask != null) raw.osmask = parseInt(extra.os_mask, 16);
  if (extra.ranked != null) raw.ranked = extra.ranked ? 1 : 0;
  if (extra.time_left_ms != null) raw.timeleft = extra.time_left_ms;
  if (extra.game_state != null) raw.gamestate = extra.game_state.raw;
  if (extra.server_type != null) {
    // `regular`, `tv` or `unknown(N)` (docs/protocols/etqw.md): gamedig's number.
    const t = extra.server_type;
    raw.servertype = t === 'regular' ? 0 : t === 'tv' ? 1 : parseInt(/\d+/.exec(t)?.[0] ?? '-1');
    if (raw.servertype === 0) raw.interestedClients = extra.interested_clients;
    else if (raw.servertype === 1) {
      raw.connectedClients = extra.viewers;
      raw.maxClients = extra.max_viewers;
    }
  }
  return raw;
}

/** A player in gamedig's shape: `{name, raw}`, raw with frags, ping, team where sent. */
function player(p, family, key) {
  const raw = {};
  if (p.score !== null) raw.frags = p.score;
  if (p.ping !== null) raw.ping = p.ping;
  if (p.team !== null) raw.team = p.team;
  if (family === 'idtech4' || family === 'etqw') {
    // gamedig's doom3.js player fields: id, rate, clantag, typeflag (:109-138).
    if (p.extra?.slot != null) raw.id = p.extra.slot;
    if (p.extra?.rate != null) raw.rate = p.extra.rate;
    if (p.clan !== null) raw.clantag = p.clan;
    if (family === 'etqw' && p.is_bot !== null) raw.typeflag = p.is_bot ? 1 : 0;
  } else if (p.clan !== null) {
    raw.clan = p.clan;
  }
  return { name: p[key], raw };
}

/**
 * A bot: what the game says where it says so (is_bot), else gamedig's rule, ping 0
 * (protocols/quake2.js:76, doom3.js:66). A ping the game does not send is no bot.
 */
function isBot(p) {
  if (p.is_bot !== null) return p.is_bot;
  return p.ping === 0;
}

/** gamedig's result (lib/Results.js, protocols/core.js:84-95) from a fragstat record. */
function toResult(record, info, options, port) {
  const raw = { ...(record.rules ?? {}) };
  if (info.family === 'idtech4' || info.family === 'etqw') Object.assign(raw, idtech4Raw(record.extra));
  // What has no place in gamedig's shape, kept: the password fragstat could not tell (null),
  // gametype decoded, bot count, names lossless, warnings…
  const { players: _p, rules: _r, ...rest } = record;
  raw.fragstat = rest;
  const players = [];
  const bots = [];
  // stripColors: false (gamedig's option, protocols/quake3.js:25-26): the names as sent.
  const key = options.stripColors === false ? 'name_raw' : 'name';
  for (const p of record.players ?? []) (isBot(p) ? bots : players).push(player(p, info.family, key));
  const host = options.host || options.address;
  const connectPort = info.id === 'etqw' && port === ETQW_QUERY_PORT ? ETQW_GAME_PORT : port;
  return {
    name: (record[key] ?? '').trim(), // gamedig trims (core.js:89)
    map: record.map ?? '',
    password: record.password === true, // gamedig's default false (lib/Results.js:25)
    raw,
    version: record.version ?? '',
    maxplayers: num(record.max_players),
    numplayers: num(record.num_players),
    players,
    bots,
    queryPort: port,
    connect: `${host}:${connectPort}`,
    ping: Math.round(record.rtt_ms ?? 0),
  };
}

/** gamedig's "Failed all N attempts" (lib/QueryRunner.js:108-113), keeping fragstat's code. */
function failed(errors) {
  const attempts = errors.reduce((n, e) => n + (e.attempts ?? 1), 0);
  const err = new Error('Failed all ' + attempts + ' attempts');
  const last = errors[errors.length - 1];
  err.code = last.code ?? 'ERROR';
  err.cause = last;
  err.errors = errors;
  for (const e of errors) err.stack += '\n' + e.stack;
  return err;
}

/** The ports to try, in gamedig's order (lib/QueryRunner.js:64-78) where it applies here. */
function ports(info, options) {
  const given = Number.isInteger(options.port) && options.port > 0 ? options.port : null;
  if (given === null) return [info.default_port];
  // gamedig adds the game's query port when the game port was given (QueryRunner.js:67):
  // only ETQW's differs among these games. MOHAA's +97 is GameSpy, which fragstat does not
  // speak; its Quake III-style query is on the game port.
  if (!options.givenPortOnly && info.id === 'etqw' && given === ETQW_GAME_PORT) {
    return [given, ETQW_QUERY_PORT];
  }
  return [given];
}

class GameDig {
  #client;

  /** `runnerOpts` as gamedig's (`listenUdpPort`), ignored: fragstat binds its own sockets. */
  constructor(runnerOpts = {}) {
    void runnerOpts;
    this.#client = new Client();
  }

  /** gamedig's `query(options)`: resolves to its result shape, rejects with an Error. */
  async query(userOptions = {}) {
    const options = { ...userOptions };
    // gamedig parses these (lib/QueryRunner.js:25-30).
    for (const k of ['port', 'ipFamily']) {
      if (options[k] !== undefined) options[k] = parseInt(options[k]);
    }
    const info = resolveType(options.type, options.checkOldIDs);
    const ip = await target(options);
    const q = {
      players: options.requestPlayers !== false, // gamedig's default true (QueryRunner.js:13)
      rules: options.requestRules === true,
    };
    if (options.socketTimeout !== undefined) q.timeout = Number(options.socketTimeout);
    // gamedig's maxRetries counts attempts, 1 = a single one (QueryRunner.js:80-82).
    if (options.maxRetries !== undefined) q.retries = Math.max(1, parseInt(options.maxRetries) || 1) - 1;
    const errors = [];
    for (const port of ports(info, options)) {
      const signal = options.attemptTimeout !== undefined ? AbortSignal.timeout(Number(options.attemptTimeout)) : undefined;
      try {
        const record = await this.#client.query(info.id, hostPort(ip, port), { ...q, signal });
        return toResult(record, info, options, port);
      } catch (e) {
        errors.push(attemptError(e, options.attemptTimeout));
      }
    }
    throw failed(errors);
  }

  /** The shared instance behind `GameDig.query` (lib/gamedig.js:14-18). */
  static getInstance() {
    if (!singleton) singleton = new GameDig();
    return singleton;
  }

  static async query(...args) {
    return GameDig.getInstance().query(...args);
  }
}

let singleton = null;

/** attemptTimeout's abort as gamedig's "Attempt" timeout (lib/Promises.js), code DEADLINE. */
function attemptError(e, ms) {
  if (e instanceof FragstatError) return e;
  if (e?.name === 'TimeoutError') {
    const err = new Error('Attempt - Timed out after ' + ms + 'ms');
    err.code = 'DEADLINE';
    err.cause = e;
    return err;
  }
  return e;
}

module.exports = { GameDig, TYPES, OLD_IDS };
