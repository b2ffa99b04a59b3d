// Fake DDNet (0.6) clients for the real-server tests: connects one client per line of the
// JSON array in argv[4] ([{name, clan, country}]) to HOST:PORT, 60 ms apart, prints
// "connected <name>" as each enters and "all connected" at the end (a client that has not
// entered within 15 s is connected again, up to 5 tries); on SIGTERM every client
// disconnects and the process exits. Needs the npm package teeworlds@2.6.1, found through
// NODE_PATH (see tests/src/lib.rs).
const { Client } = require('teeworlds');

const [host, port, spec] = [process.argv[2], Number(process.argv[3]), process.argv[4]];
const wanted = JSON.parse(spec);
const clients = [];
let connected = 0;

// A client that has not entered within RETRY_MS is dropped and connected again (its connect
// packets can be lost on a loaded machine, and the library does not retry by itself).
const RETRY_MS = 15000;

function attempt(w, tries) {
  const c = new Client(host, port, w.name, {
    lightweight: true,
    timeout: 30000,
    identity: {
      name: w.name, clan: w.clan, country: w.country,
      skin: 'default', use_custom_color: 0, color_body: 0, color_feet: 0,
    },
  });
  let entered = false;
  c.on('connected', () => {
    entered = true;
    connected += 1;
    console.log(`connected ${w.name}`);
    if (connected === wanted.length) console.log('all connected');
  });
  c.on('disconnect', (reason) => console.log(`disconnected ${w.name}: ${reason}`));
  c.connect();
  clients.push(c);
  setTimeout(() => {
    if (entered || tries >= 5) return;
    console.log(`retrying ${w.name}`);
    try { Promise.resolve(c.Disconnect()).catch(() => {}); } catch (e) { /* never connected */ }
    attempt(w, tries + 1);
  }, RETRY_MS);
}

function start(i) {
  if (i >= wanted.length) return;
  attempt(wanted[i], 1);
  setTimeout(() => start(i + 1), 60);
}

function stop() {
  for (const c of clients) {
    // Disconnect() returns a promise that rejects for a client already offline.
    try { Promise.resolve(c.Disconnect()).catch(() => {}); } catch (e) { /* already gone */ }
  }
  setTimeout(() => process.exit(0), 300);
}
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
start(0);
