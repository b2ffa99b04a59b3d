#!/usr/bin/env node
// Builds the native addon from this workspace's sources with cargo and copies it next to
// index.js as fragstat.node. Run by `npm install` (the package's install script) and
// `npm run build`. Needs the Rust toolchain (https://rustup.rs).
//
// FRAGSTAT_NODE_PROFILE: the cargo profile (default `node`: optimised, no LTO; `release`
// for the workspace's fat-LTO build). CARGO_TARGET_DIR is honoured.
'use strict';
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const here = path.resolve(__dirname, '..');
const profile = process.env.FRAGSTAT_NODE_PROFILE || 'node';

function cargo(args, opts = {}) {
  try {
    return execFileSync('cargo', args, { cwd: here, ...opts });
  } catch (e) {
    if (e.code === 'ENOENT') {
      console.error('fragstat: building the addon needs cargo (the Rust toolchain, https://rustup.rs)');
    }
    process.exit(typeof e.status === 'number' ? e.status : 1);
  }
}

const meta = JSON.parse(cargo(['metadata', '--format-version', '1', '--no-deps'], { maxBuffer: 64 << 20 }));
cargo(['build', '--profile', profile, '-p', 'fragstat-node'], { stdio: 'inherit' });
const dir = profile === 'dev' ? 'debug' : profile;
const lib = { linux: 'libfragstat_node.so', darwin: 'libfragstat_node.dylib', win32: 'fragstat_node.dll' }[process.platform];
if (!lib) {
  console.error(`fragstat: no addon name known for ${process.platform}`);
  process.exit(1);
}
const from = path.join(meta.target_directory, dir, lib);
const to = path.join(here, 'fragstat.node');
// Copied through a temporary name and renamed: a process that has the old addon loaded
// keeps its mapping, and a reader never sees half a file.
const tmp = `${to}.${process.pid}.tmp`;
fs.copyFileSync(from, tmp);
fs.renameSync(tmp, to);
console.error(`fragstat: built ${path.relative(process.cwd(), to)} (${profile} profile)`);
