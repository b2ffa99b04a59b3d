'use strict';
// fragstat for Node.js: fragstat's Rust client (the native addon, fragstat.node) behind
// promises, async iterators, AbortSignals and FragstatErrors. Every result is a plain
// object in the JSON shape of fragstat's docs/json.md, written by the library itself.

const native = require('./fragstat.node');

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
  if (e instanceof Error && (e.code === 'InvalidArg' || e.code === 'NumberExpected' || e.code === 'StringExpected' || e.code === 'BooleanExpected' || e.code === 'ObjectExpected')) {
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

/** Options for the native side: `signal` and `undefined`s left out. */
function nativeOptions(options) {
  const out = {};
  for (const [k, v] of Object.entries(options ?? {})) {
    if (k !== 'signal' && v !== undefined) out[k] = v;
  }
  return out;
}

/** Awaits a native Call, cancelling it when `signal` aborts (rejecting with its reason). */
async function settle(handle, signal, open) {
  const abort = () => handle.cancel();
  signal?.addEventListener('abort', abort, { once: true });
  open.add(handle);
  try {
    return JSON.parse(await handle.result());
  } catch (e) {
    if (signal?.aborted) throw signal.reason;
    throw convert(e);
  } finally {
    open.delete(handle);
    signal?.removeEventListener('abort', abort);
  }
}

/**
 * A native Feed as an async iterator: `next()` hands out the items fetched last, and when
 * none are left waits for the next batch (all the feed has ready, at most `batch`: one
 * wake-up of this thread for many records). While nobody reads, the producer waits
 * (backpressure); `return()` (a `break`) and an aborted signal stop it, cancelling its
 * queries.
 */
class Stream {
  #feed;
  #signal;
  #open;
  #abort;
  #batch;
  #ready = [];
  #done = false;

  constructor(feed, signal, open, batch) {
    this.#feed = feed;
    this.#signal = signal;
    this.#open = open;
    this.#batch = batch;
    this.#abort = () => this.#stop();
    signal?.addEventListener('abort', this.#abort, { once: true });
    open.add(feed);
  }

  #stop() {
    if (this.#done) return;
    this.#done = true;
    this.#ready = [];
    this.#feed.cancel();
    this.#open.delete(this.#feed);
    this.#signal?.removeEventListener('abort', this.#abort);
  }

  [Symbol.asyncIterator]() {
    return this;
  }

  async next() {
    if (this.#signal?.aborted) {
      this.#stop();
      throw this.#signal.reason;
    }
    if (this.#ready.length === 0 && !this.#done) {
      let batch;
      try {
        batch = await this.#feed.nextBatch(this.#batch);
      } catch (e) {
        this.#stop();
        throw convert(e);
      }
      if (this.#signal?.aborted) {
        this.#stop();
        throw this.#signal.reason;
      }
      if (batch === null) this.#stop();
      else this.#ready = batch.reverse();
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

/**
 * A client: one set of sockets and settings shared by every query, scan, master list and
 * watch made through it. Times are in milliseconds.
 */
class Client {
  #native;
  #open = new Set();

  constructor(options = {}) {
    this.#native = call(() => new native.Client(nativeOptions(options)));
  }

  /** One server's record (docs/json.md); rejects with a FragstatError when it does not answer. */
  async query(game, address, options = {}) {
    options.signal?.throwIfAborted();
    const handle = call(() => this.#native.query(game, address, nativeOptions(options)));
    return settle(handle, options.signal, this.#open);
  }

  /**
   * A game's master list, merged: `{masters, servers}` as `fragstat master --format json`.
   * With no masters given, the game's catalogue is asked.
   */
  async masterList(game, masters, options = {}) {
    if (masters !== undefined && masters !== null && !Array.isArray(masters)) {
      [masters, options] = [undefined, masters];
    }
    options.signal?.throwIfAborted();
    const opts = nativeOptions(options);
    const handle = call(() => this.#native.masterList(game, masters ?? undefined, opts));
    return settle(handle, options.signal, this.#open);
  }

  /** Scans servers of one game: an async iterator of records, as each server answers or not. */
  scan(game, addresses, options = {}) {
    options.signal?.throwIfAborted();
    const list = Array.from(addresses, String);
    const feed = call(() => this.#native.scan(game, list, nativeOptions(options)));
    return new Stream(feed, options.signal, this.#open, options.buffer ?? SCAN_BUFFER);
  }

  /**
   * Watches sources (`{game, masters?, servers?, ext?}`, one or an array): an async iterator
   * of events (docs/json.md, "Events"), one scan every `interval` ms.
   */
  watch(sources, options = {}) {
    options.signal?.throwIfAborted();
    const list = (Array.isArray(sources) ? sources : [sources]).map((s) => ({
      game: s.game,
      masters: s.masters,
      servers: s.servers,
      ext: s.ext,
    }));
    const feed = call(() => this.#native.watch(list, nativeOptions(options)));
    return new Stream(feed, options.signal, this.#open, WATCH_BATCH);
  }

  /** The local addresses of the client's sockets (bound on its first query). */
  localAddresses() {
    return this.#native.localAddresses();
  }

  /** Cancels every call and iterator still open. */
  close() {
    for (const h of this.#open) h.cancel();
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
