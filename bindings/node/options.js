'use strict';
// The options of each call, checked before anything is sent: a misspelt key, a negative
// count or a time that is not a number is an INVALID_INPUT error naming it, never a
// default taken silently (or, through napi's unsigned integers, a count of four billion).

const MAX_MS = 365 * 24 * 3600 * 1000;

const time = (name, v) => {
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0 || v > MAX_MS) {
    return `${name}: ${JSON.stringify(v)} is not a time in milliseconds (above 0)`;
  }
};
const count = (min, max) => (name, v) => {
  if (!Number.isInteger(v) || v < min || v > max) {
    return `${name}: ${JSON.stringify(v)} is not a whole number from ${min} to ${max}`;
  }
};
const bool = (name, v) => (typeof v === 'boolean' ? undefined : `${name}: ${JSON.stringify(v)} is not true or false`);
const text = (name, v) => (typeof v === 'string' ? undefined : `${name}: ${JSON.stringify(v)} is not a string`);
const int32 = (name, v) => count(-(2 ** 31), 2 ** 31 - 1)(name, v);
const strings = (name, v) => {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return `${name}: not an object of strings`;
  for (const [k, s] of Object.entries(v)) if (typeof s !== 'string') return `${name}.${k}: not a string`;
};
const signal = (name, v) => (v instanceof AbortSignal ? undefined : `${name}: not an AbortSignal`);

const QUERY = { players: bool, rules: bool, timeout: time, retries: count(0, 100), signal };

/** Each call's options and how each is checked. */
const SCHEMAS = {
  client: {
    timeout: time,
    minTimeout: time,
    adaptive: bool,
    retries: count(0, 100),
    concurrency: count(1, 1 << 20),
    rate: count(0, 1e9),
    deadline: time,
    masterTimeout: time,
    masterQuiet: time,
    resolveTimeout: time,
    httpTimeout: time,
  },
  query: QUERY,
  scan: {
    ...QUERY,
    concurrency: count(1, 1 << 20),
    rate: count(0, 1e9),
    deadline: time,
    dedupe: bool,
    buffer: count(1, 1 << 16),
  },
  masterList: { ext: bool, gamename: text, protocol: int32, masterAt: strings, signal },
  watch: { interval: time, scans: count(0, 2 ** 32 - 1), rules: bool, initial: bool, signal },
};

/**
 * `options` checked against the call's schema: the native side's copy (no `signal`, no
 * `undefined`s) and the signal. Throws `invalid(message)` for the first thing wrong.
 */
function check(call, options, invalid) {
  if (options === undefined || options === null) return { native: {}, signal: undefined };
  if (typeof options !== 'object' || Array.isArray(options)) {
    throw invalid(`${call}: the options are an object, not ${JSON.stringify(options)}`);
  }
  const schema = SCHEMAS[call];
  const native = {};
  for (const [k, v] of Object.entries(options)) {
    if (v === undefined) continue;
    const test = schema[k];
    if (!test) throw invalid(`${call}: no option ${JSON.stringify(k)} (options: ${Object.keys(schema).join(', ')})`);
    const wrong = test(k, v);
    if (wrong) throw invalid(`${call}: ${wrong}`);
    if (k !== 'signal') native[k] = v;
  }
  return { native, signal: options.signal };
}

module.exports = { check };
