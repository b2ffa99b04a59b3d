'use strict';
// fragstat for Node.js: fragstat's Rust client (the native addon, fragstat.node) behind
// promises, async iterators, AbortSignals and FragstatErrors. Every result is a plain
// object in the JSON shape of fragstat's docs/json.md, written by the library itself.

const native = require('./fragstat.node');
const { check } = require('./options.js');

/** A scan's records waiting for the reader at most, by default (`buffer`). */
const SCAN_BUFFER = 64;
/** Events taken from a watch at once at most. */
const WATCH_BATCH = 64;

/** The stable codes of FragstatError. */
const CODES = Object.freeze([
  'TIMEOUT', 'DEADLINE', 'DOWN', 'FOREIGN', 'DECODE', 'ENCODE', 'LIMIT', 'RESOLVE', 'HTTP',
  'INVALID_INPUT', 'UNSUPPORTED', 'IO', 'CANCELLED', 'ERROR',
]);

/** An error of fragstat's: `code` says which (CODES); decode errors name `field` and `offset`. */
class FragstatError extends Error {
  constructor(info) {
    super(info.message);
    this.name = 'FragstatError';
    this.code = info.code;
    for (const k of ['attempts', 'replies', 'field', 'offset', 'kind', 'limit', 'max', 'target', 'url', 'status']) {
      if (info[k] !== undefined) this[k] = info[k];
    }
  }
}

/** The native side's error as a FragstatError (its message is JSON); any other unchanged. */
function convert(e) {
  if (e instanceof Error && e.code === 'GenericFailure' && e.message.startsWith('{"code":')) {
    try {
      return new FragstatError(JSON.parse(e.message));
    } catch {
      return e;
    }
  }
  // napi's own argument errors (a number where a string belongs…).
  if (e instanceof Error && typeof e.code === 'string' && (e.code === 'InvalidArg' || e.code.endsWith('Expected'))) {
    const f = new FragstatError({ code: 'INVALID_INPUT', message: e.message });
    f.cause = e;
    return f;
  }
  return e;
}

function call(f) {
  try {
    return f();
  } catch (e) {
    throw convert(e);
  }
}

/** An INVALID_INPUT error, thrown before anything is sent. */
function invalid(message) {
  return new FragstatError({ code: 'INVALID_INPUT', message });
}

/** Awaits a native Call, cancelling it when `signal` aborts (rejecting with its reason). */
async function settle(handle, signal, open) {
  const abort = () => handle.cancel();
  signal?.addEventListener('abort', abort, { once: true });
  const entry = cancellable(handle);
  open.add(entry);
  try {
    return JSON.parse(await handle.result());
  } catch (e) {
    if (signal?.aborted) throw signal.reason;
    throw convert(e);
  } finally {
    open.delete(entry);
    signal?.removeEventListener('abort', abort);
  }
}

/**
 * A native Feed as an async iterator: `next()` hands out the items fetched last, and when
 * none are left waits for the next batch (all the feed has ready, at most `batch`: one
 * wake-up of this thread for many records). Calls of `next()` are answered in order, one
 * after the other, so concurrent calls never lose an item. While nobody reads, the producer
 * waits (backpressure). `return()` (a `break`) ends it quietly; an aborted signal throws
 * its reason and `client.close()` a CANCELLED error; each stops the feed's queries.
 */
class Stream {
  #feed;
  #signal;
  #open;
  #abort;
  #batch;
  #ready = [];
  #done = false;
  #cancelled = false;
  #turn = Promise.resolve();
  #ref;

  constructor(feed, signal, open, batch) {
    this.#feed = feed;
    this.#signal = signal;
    this.#open = open;
    this.#batch = batch;
    this.#abort = () => this.#stop();
    signal?.addEventListener('abort', this.#abort, { once: true });
    // Held weakly: a stream its reader dropped is collected, and its native feed with it
    // (which stops its queries), rather than kept alive by the client.
    this.#ref = new WeakRef(this);
    open.add(this.#ref);
  }

  #stop() {
    if (this.#done) return;
    this.#done = true;
    this.#ready = [];
    this.#feed.cancel();
    this.#open.delete(this.#ref);
    this.#signal?.removeEventListener('abort', this.#abort);
  }

  /** `client.close()`: stops the feed; the reader's next `next()` throws CANCELLED. */
  cancel() {
    this.#cancelled = !this.#done;
    this.#stop();
  }

  #ended() {
    if (this.#signal?.aborted) throw this.#signal.reason;
    if (this.#cancelled) {
      this.#cancelled = false;
      throw new FragstatError({ code: 'CANCELLED', message: 'client.close() stopped it' });
    }
  }

  [Symbol.asyncIterator]() {
    return this;
  }

  next() {
    const turn = this.#turn.then(() => this.#next());
    // The next call waits for this one, whether it resolves or rejects.
    this.#turn = turn.then(
      () => undefined,
      () => undefined,
    );
    return turn;
  }

  async #next() {
    if (this.#signal?.aborted) this.#stop();
    this.#ended();
    if (this.#ready.length === 0 && !this.#done) {
      let batch;
      try {
        batch = await this.#feed.nextBatch(this.#batch);
      } catch (e) {
        this.#stop();
        throw convert(e);
      }
      if (this.#signal?.aborted) this.#stop();
      this.#ended();
      if (batch === null) this.#stop();
      else if (!this.#done) this.#ready = batch.reverse();
    }
    if (this.#ready.length === 0) return { done: true, value: undefined };
    return { done: false, value: JSON.parse(this.#ready.pop()) };
  }

  async return(value) {
    this.#stop();
    return { done: true, value };
  }

  async throw(error) {
    this.#stop();
    throw error;
  }
}

/** A one-result call that `client.close()` can cancel. */
function cancellable(handle) {
  return { cancel: () => handle.cancel() };
}

/**
 * A client: one set of sockets and settings shared by every query, scan, master list and
 * watch made through it. Times are in milliseconds.
 */
class Client {
  #native;
  #open = new Set();

  constructor(options) {
    const { native: opts } = check('client', options, invalid);
    this.#native = call(() => new native.Client(opts));
  }

  /** One server's record (docs/json.md); rejects with a FragstatError when it does not answer. */
  async query(game, address, options) {
    const { native: opts, signal } = check('query', options, invalid);
    signal?.throwIfAborted();
    const handle = call(() => this.#native.query(game, address, opts));
    return settle(handle, signal, this.#open);
  }

  /**
   * A game's master list, merged: `{masters, servers}` as `fragstat master --format json`.
   * `masters`: an array of `HOST[:PORT]` (or URLs) or one as a string; left out (or
   * `null`), the game's catalogue of known masters is asked (`masterAt` points entries
   * elsewhere). An empty array is refused: a list read from a setting that came out empty
   * must not turn into the public catalogue.
   */
  async masterList(game, masters, options) {
    // `masterList(game, options)`: a plain object in second place, nothing in third.
    const plain = (o) => typeof o === 'object' && o !== null && typeof o[Symbol.iterator] !== 'function';
    if (plain(masters) && options === undefined) [masters, options] = [undefined, masters];
    const { native: opts, signal } = check('masterList', options, invalid);
    if (typeof masters === 'string') masters = [masters];
    else if (masters !== undefined && masters !== null && typeof masters[Symbol.iterator] === 'function') {
      masters = Array.from(masters);
    }
    if (Array.isArray(masters) && masters.length === 0) {
      throw invalid('masterList: an empty list of masters (leave it out to ask the game\'s catalogue)');
    }
    if (Array.isArray(masters) && opts.masterAt) {
      throw invalid('masterList: masterAt points catalogue entries elsewhere: it goes without masters');
    }
    if (masters !== undefined && masters !== null && !Array.isArray(masters)) {
      throw invalid(`masterList: masters are an array of HOST[:PORT], not ${JSON.stringify(masters)}`);
    }
    signal?.throwIfAborted();
    const handle = call(() => this.#native.masterList(game, masters ?? undefined, opts));
    return settle(handle, signal, this.#open);
  }

  /** Scans servers of one game: an async iterator of records, as each server answers or not. */
  scan(game, addresses, options) {
    const { native: opts, signal } = check('scan', options, invalid);
    if (typeof addresses === 'string' || addresses === null || typeof addresses?.[Symbol.iterator] !== 'function') {
      throw invalid('scan: the addresses are an array (or iterable) of HOST:PORT strings');
    }
    signal?.throwIfAborted();
    const list = Array.from(addresses, String);
    const feed = call(() => this.#native.scan(game, list, opts));
    return new Stream(feed, signal, this.#open, opts.buffer ?? SCAN_BUFFER);
  }

  /**
   * Watches sources (`{game, masters?, servers?, ext?}`, one or an array): an async iterator
   * of events (docs/json.md, "Events"), one scan every `interval` ms.
   */
  watch(sources, options) {
    const { native: opts, signal } = check('watch', options, invalid);
    signal?.throwIfAborted();
    const list = (Array.isArray(sources) ? sources : [sources]).map((s) => {
      if (typeof s !== 'object' || s === null) throw invalid('watch: a source is {game, masters?, servers?, ext?}');
      for (const k of Object.keys(s)) {
        if (!['game', 'masters', 'servers', 'ext'].includes(k)) {
          throw invalid(`watch: a source has no key ${JSON.stringify(k)} (game, masters, servers, ext)`);
        }
      }
      for (const k of ['masters', 'servers']) {
        if (s[k] !== undefined && !Array.isArray(s[k])) throw invalid(`watch: ${k} is an array of HOST:PORT`);
      }
      if (!s.masters?.length && !s.servers?.length) {
        throw invalid(`watch: a source of ${s.game} with no masters and no servers watches nothing`);
      }
      return { game: s.game, masters: s.masters, servers: s.servers, ext: s.ext };
    });
    if (list.length === 0) throw invalid('watch: no sources');
    const feed = call(() => this.#native.watch(list, opts));
    return new Stream(feed, signal, this.#open, WATCH_BATCH);
  }

  /** The local addresses of the client's sockets (bound on its first query). */
  localAddresses() {
    return this.#native.localAddresses();
  }

  /**
   * Cancels every call and iterator still open: a pending call rejects, and an iterator's
   * next `next()` throws, with code CANCELLED. The client itself stays usable.
   */
  close() {
    for (const h of [...this.#open]) (h instanceof WeakRef ? h.deref() : h)?.cancel();
    this.#open.clear();
  }

  [Symbol.dispose]() {
    this.close();
  }
}

/** Every game of this build, as `fragstat games --format json` (without qstat's master types). */
function games() {
  return JSON.parse(native.gamesJson());
}

/** A game by id or alias (`oob:NN` too), or `null`. */
function game(id) {
  const text = native.gameJson(String(id));
  return text === null ? null : JSON.parse(text);
}

module.exports = { Client, FragstatError, CODES, games, game, version: native.version() };
