// TypeScript declarations for `fragstat` (index.js), checked by test/types.test.js
// (`tsc --noEmit` over test/types/usage.ts, with the misuses it must refuse).

/** The stable codes of FragstatError. */
export type ErrorCode =
  | 'TIMEOUT'
  | 'DEADLINE'
  | 'DOWN'
  | 'FOREIGN'
  | 'DECODE'
  | 'ENCODE'
  | 'LIMIT'
  | 'RESOLVE'
  | 'HTTP'
  | 'INVALID_INPUT'
  | 'UNSUPPORTED'
  | 'IO'
  | 'CANCELLED'
  | 'ERROR';

export declare const CODES: readonly ErrorCode[];

/** An error of fragstat's; `code` says which. */
export declare class FragstatError extends Error {
  name: 'FragstatError';
  code: ErrorCode;
  /** TIMEOUT, FOREIGN: attempts sent. */
  attempts?: number;
  /** FOREIGN: replies that were not an answer. */
  replies?: number;
  /** DECODE: the field that failed, where the error names one. */
  field?: string | null;
  /** DECODE: the byte offset in the reply. */
  offset?: number;
  /** DECODE: the kind of error (`truncated`, `missing`, `bad_number`…). */
  kind?: string;
  /** LIMIT: which (`datagrams`, `bytes`, `lifetime`, `http_body`) and its bound. */
  limit?: string;
  max?: number;
  /** RESOLVE: the name that did not resolve. */
  target?: string;
  /** HTTP: the URL and the status, when one came back. */
  url?: string;
  status?: number | null;
}

/** How a game writes text (docs/json.md, "Text"). */
export type Dialect =
  | 'quake' | 'plain' | 'idq3' | 'wet' | 'etl' | 'ioq3' | 'urt' | 'jk' | 'openjk' | 'dp'
  | 'daemon' | 'idtech4' | 'quake4' | 'qfusion' | 'cod';

/** A player (docs/json.md, "Player objects"). */
export interface Player {
  /** For display: colour codes stripped. */
  name: string;
  /** Lossless: each byte as the code point of the same value (but in the `plain` dialect). */
  name_raw: string;
  clan: string | null;
  score: number | null;
  ping: number | null;
  team: number | null;
  is_bot: boolean | null;
  is_spectator: boolean | null;
  extra: Record<string, unknown> | null;
}

/** A server's record (docs/json.md, "The server object"): every key always present. */
export interface ServerRecord {
  address: string | null;
  game: string;
  status: 'online' | 'timeout' | 'down' | 'error';
  error: string | null;
  rtt_ms: number | null;
  name: string | null;
  name_raw: string | null;
  map: string | null;
  gametype: string | null;
  version: string | null;
  num_players: number | null;
  max_players: number | null;
  num_bots: number | null;
  num_spectators: number | null;
  password: boolean | null;
  score_kind: 'points' | 'time' | null;
  location: string | null;
  players: Player[] | null;
  rules: Record<string, string> | null;
  extra: Record<string, unknown> | null;
  warnings: string[] | null;
  truncated: boolean | null;
  unverified: boolean | null;
  dialect: Dialect | null;
}

/** A master's catalogue entry (docs/catalogue.md). */
export interface CatalogueEntry {
  address: string;
  transport: 'udp' | 'tcp' | 'http';
  form: string;
  end: string;
  protocols: number[];
  source: string;
  [key: string]: unknown;
}

/** What one master answered (docs/json.md, "`fragstat master --format json`"). */
export interface MasterReport {
  address: string;
  status: 'online' | 'timeout' | 'error' | 'skipped';
  error: string | null;
  servers: number | null;
  rtt_ms: number | null;
  kept: number | null;
  dropped: number | null;
  catalogue?: CatalogueEntry;
}

/** One server of a merged master list. */
export interface ListedServer {
  address: string;
  /** Its other addresses (a Dæmon master's linked IPv4/IPv6 pair). */
  addresses: string[];
  /** What the list says of it (lists that carry info: DDNet's HTTP master), else null. */
  info: ListedInfo | null;
  /** The masters that listed it, first lister first. */
  listed_by: string[];
}

/** A listed server's info: a record's keys from `name` to `dialect` (docs/json.md). */
export type ListedInfo = Omit<ServerRecord, 'address' | 'game' | 'status' | 'error' | 'rtt_ms'>;

export interface MasterList {
  masters: MasterReport[];
  servers: ListedServer[];
}

export interface EventBase {
  server: string;
  game: string;
  /** Unix ms: the start of the scan that saw it (or when a pushed datagram arrived). */
  at: number;
  pushed?: true;
}

export interface PlayerEventFields {
  name: string;
  name_raw: string;
  dialect: Dialect | null;
  clan: string | null;
  is_bot: boolean | null;
  score: number | null;
  team: number | null;
  slot?: number;
  guid?: string;
}

/** An event of `watch` (docs/json.md, "Events"). */
export type FragstatEvent =
  | (EventBase & {
      event: 'server_up';
      name: string;
      name_raw: string;
      dialect: Dialect | null;
      map: string | null;
      gametype: string | null;
      num_players: number | null;
      max_players: number | null;
    })
  | (EventBase & { event: 'server_down'; status: 'timeout' | 'down' | 'error'; reason: string | null })
  | (EventBase & { event: 'name_changed'; from: string; from_raw: string; to: string; to_raw: string; dialect: Dialect | null })
  | (EventBase & { event: 'map_changed'; from: string | null; to: string | null })
  | (EventBase & { event: 'gametype_changed'; from: string | null; to: string | null })
  | (EventBase & { event: 'slots_changed'; from: number | null; to: number | null })
  | (EventBase & PlayerEventFields & { event: 'player_joined' | 'player_left' });

/** `new Client(options)`: times in milliseconds. */
export interface ClientOptions {
  timeout?: number;
  minTimeout?: number;
  adaptive?: boolean;
  retries?: number;
  concurrency?: number;
  /** Datagrams per second at most (0: no limit). */
  rate?: number;
  deadline?: number;
  masterTimeout?: number;
  masterQuiet?: number;
  resolveTimeout?: number;
  httpTimeout?: number;
}

export interface Cancellable {
  signal?: AbortSignal;
}

export interface QueryOptions extends Cancellable {
  players?: boolean;
  rules?: boolean;
  timeout?: number;
  retries?: number;
}

export interface ScanOptions extends QueryOptions {
  concurrency?: number;
  rate?: number;
  deadline?: number;
  dedupe?: boolean;
  /** Records waiting for the reader at most (default 64); the scan waits beyond. */
  buffer?: number;
}

export interface MasterListOptions extends Cancellable {
  ext?: boolean;
  gamename?: string;
  protocol?: number;
  /** With no masters given: catalogue entries (`HOST:PORT`) asked at another `IP:PORT`. */
  masterAt?: Record<string, string>;
}

export interface WatchSource {
  game: string;
  masters?: string[];
  servers?: string[];
  ext?: boolean;
}

export interface WatchOptions extends Cancellable {
  /** Time between scans, ms (default 60 000). */
  interval?: number;
  /** Stop after this many scans (default: never). */
  scans?: number;
  rules?: boolean;
  /** Events for the first scan too, instead of taking it as the baseline. */
  initial?: boolean;
}

/** A stream of results: `for await`, or `next()`; `return()` (a `break`) stops it. */
export interface ResultStream<T> extends AsyncIterableIterator<T> {
  next(): Promise<IteratorResult<T, undefined>>;
  return<R = undefined>(value?: R): Promise<IteratorResult<T, R>>;
}

export declare class Client {
  constructor(options?: ClientOptions);
  query(game: string, address: string, options?: QueryOptions | null): Promise<ServerRecord>;
  /** `masters` left out: the game's catalogue; an empty array is refused (INVALID_INPUT). */
  masterList(game: string, masters?: string | Iterable<string> | null, options?: MasterListOptions): Promise<MasterList>;
  masterList(game: string, options: MasterListOptions): Promise<MasterList>;
  /** `addresses`: an array (or other iterable, not a string) of `HOST:PORT`. */
  scan(game: string, addresses: Iterable<string> & object, options?: ScanOptions): ResultStream<ServerRecord>;
  watch(sources: WatchSource | WatchSource[], options?: WatchOptions): ResultStream<FragstatEvent>;
  localAddresses(): string[];
  /** Cancels every open call (rejects) and iterator (throws), code CANCELLED. */
  close(): void;
  /** `using client = new Client()`: close() at the end of the scope. */
  [Symbol.dispose](): void;
}

/** A game as `fragstat games --format json` lists it. */
export interface Game {
  id: string;
  title: string;
  family: string;
  default_port: number;
  master_port: number | null;
  aliases: string[];
  catalogue: CatalogueEntry[];
}

export declare function games(): Game[];
export declare function game(id: string): Game | null;
export declare const version: string;
