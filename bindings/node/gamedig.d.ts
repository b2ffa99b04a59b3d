// Types of fragstat's node-gamedig 5 look-alike (gamedig.js; README.md, "Switching from node-gamedig").

/** gamedig's query options that the adapter reads; the others are accepted and ignored. */
export interface QueryOptions {
  /** A gamedig type id (`q3a`, `wet`, `cod4mw`, `etqw`…) or a fragstat game id or alias (`etl`, `ddnet`…). */
  type: string;
  /** Host name or IP (a name is looked up by fragstat, or here when ipFamily is 4 or 6). */
  host?: string;
  /** An IP to send to instead of looking `host` up (gamedig's `address`). */
  address?: string;
  /** Port; a string is parsed. Default: the game's (fragstat `game(id).default_port`). */
  port?: number | string;
  /** Only the given port (ETQW otherwise also tries its query port 27733 after 3074). */
  givenPortOnly?: boolean;
  /** Attempts in all, as gamedig counts them (1: one attempt); fragstat's retries are this − 1. Default: fragstat's. */
  maxRetries?: number;
  /** How long one attempt waits for the reply, ms (fragstat's query timeout). Default: fragstat's. */
  socketTimeout?: number;
  /** A bound on each port's whole query, retries included, ms (rejects with code DEADLINE). */
  attemptTimeout?: number;
  /** false: no player list (Quake III family: getinfo only). Default true. */
  requestPlayers?: boolean;
  /** true: every server variable (Quake III family: getinfo too). Default false. */
  requestRules?: boolean;
  /** 0, 4 or 6: the address family a host name is looked up in. */
  ipFamily?: number | string;
  /** Accept gamedig's old ids (`quake3`, `wolfensteinet`, `swjk`, `swjk2`, `cod4`). */
  checkOldIDs?: boolean;
  /** false: names as sent (`name_raw`, colour codes kept). Default: colours stripped as the game's engine draws them. */
  stripColors?: boolean;
  /** Accepted, ignored. */
  portCache?: boolean;
  /** Accepted, ignored. */
  noBreadthOrder?: boolean;
  /** Accepted, ignored. */
  debug?: boolean;
  [option: string]: unknown;
}

/** A player or bot: `raw` has `frags` (score), `ping`, `team` where the server sends them. */
export interface Player {
  name: string;
  raw: {
    frags?: number;
    ping?: number;
    team?: number;
    /** idTech 4: the client slot. */
    id?: number;
    /** Doom 3, Quake 4, Prey. */
    rate?: number;
    /** Quake 4, ETQW. */
    clantag?: string;
    /** ETQW: 1 a bot. */
    typeflag?: number;
    /** Teeworlds, DDNet. */
    clan?: string;
    [key: string]: unknown;
  };
}

/** gamedig 5's result shape (lib/Results.js), numbers and booleans typed as such. */
export interface QueryResult {
  /** Colour codes stripped as the game draws them, trimmed. */
  name: string;
  map: string;
  /** true when the server says a password is needed; false also when it does not say (raw.fragstat.password is then null). */
  password: boolean;
  /** The server's variables as sent (colour codes kept), gamedig's idTech 4 extras, and `fragstat`: the fragstat record without its players and rules. */
  raw: Record<string, unknown> & { fragstat: Record<string, unknown> };
  version: string;
  maxplayers: number;
  numplayers: number;
  players: Player[];
  bots: Player[];
  queryPort: number;
  /** `host:port` (ETQW queried on 27733: port 3074, as gamedig). */
  connect: string;
  /** Round-trip time, ms, rounded. */
  ping: number;
}

/** The rejection: gamedig's message, fragstat's `code` (TIMEOUT, DOWN, INVALID_INPUT…). */
export interface QueryError extends Error {
  code: string;
  cause?: Error;
  errors?: Error[];
}

export class GameDig {
  /** `runnerOpts` (gamedig's `listenUdpPort`) is ignored: fragstat binds its own sockets. */
  constructor(runnerOpts?: { listenUdpPort?: number });
  query(options: QueryOptions): Promise<QueryResult>;
  static getInstance(): GameDig;
  static query(options: QueryOptions): Promise<QueryResult>;
}

/** gamedig type id → fragstat game id. */
export const TYPES: Readonly<Record<string, string>>;
/** gamedig old id → gamedig type id (with checkOldIDs). */
export const OLD_IDS: Readonly<Record<string, string>>;
