//! Real DDNet 16.4, Teeworlds 0.7.5 and Nexuiz 2.5.2 servers (Debian packages) on 127.0.0.1,
//! each in a private temp dir, and fake DDNet clients (node + the npm package
//! `teeworlds@2.6.1`, ../shared/docs/real-servers.md). Like [`crate::OpenArena`]: started by
//! the test, awaited until they answer, stopped by PID on drop (clients before servers, as
//! the tests declare them after the server).

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use crate::process::start_on_picked_port;
use crate::{in_ci, probe, require, wait, Lines, Process};

const LOOPBACK: [IpAddr; 1] = [IpAddr::V4(Ipv4Addr::LOCALHOST)];

fn temp_dir(prefix: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(prefix)
        .tempdir()
        .expect("temp dir")
}

fn spawn(bin: &Path, args: &[String], dir: &Path, env: &[(&str, &Path)]) -> Process {
    let mut cmd = Command::new(bin);
    cmd.args(args)
        .env("HOME", dir)
        .env("XDG_DATA_HOME", dir.join(".local/share"));
    for (k, v) in env {
        cmd.env(k, v);
    }
    Process::spawn_logged(&mut cmd, dir, "server.log")
}

/// The shared object in tests/shims/curl_share_nothing.c (why: see that file), compiled
/// once per test process with the system C compiler.
///
/// # Panics
/// When it cannot be compiled.
fn curl_share_nothing() -> &'static Path {
    static SHIM: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    let (_, path) = SHIM.get_or_init(|| {
        let dir = tempfile::Builder::new()
            .prefix("fragstat-shim-")
            .tempdir()
            .expect("temp dir");
        let so = dir.path().join("curl_share_nothing.so");
        let src = crate::repo_root().join("tests/shims/curl_share_nothing.c");
        let out = Command::new("cc")
            .args(["-shared", "-fPIC", "-O2", "-o"])
            .arg(&so)
            .arg(&src)
            .output()
            .expect("run cc (the C compiler, Debian gcc)");
        assert!(
            out.status.success(),
            "cc {}: {}",
            src.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        (dir, so)
    });
    path
}

/// Quotes a console argument for DDNet/Teeworlds (`"` and `\` escaped; `;` and `#` are then
/// harmless).
fn quoted(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// Polls `ready` until it holds, failing with the log if the server exits.
fn wait(process: &mut Process, what: &str, mut ready: impl FnMut() -> bool) {
    wait::until(format!("{what} answering"), wait::STARTUP, || {
        process.check_running();
        ready().then_some(())
    });
}

/// A 0.6 `gie3` (token 0x2a): any `inf3` reply means the server is up.
fn answers_06(addr: SocketAddr) -> bool {
    probe(
        addr,
        b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xffgie3\x2a",
        Duration::from_millis(250),
    )
    .is_some_and(|r| r.get(6..14) == Some(&b"\xff\xff\xff\xffinf3"[..]))
}

/// The 0.7 token handshake: a token reply means the server is up.
fn answers_07(addr: SocketAddr) -> bool {
    let mut req = b"\x04\x00\x00\xff\xff\xff\xff\x05\x0b\xad\xbe\xef".to_vec();
    req.resize(519, 0);
    probe(addr, &req, Duration::from_millis(250))
        .is_some_and(|r| r.starts_with(b"\x04\x00\x00\x0b\xad\xbe\xef\x05"))
}

/// What to start a DDNet server with.
#[derive(Debug, Clone)]
pub struct DdnetConfig {
    /// `sv_name`.
    pub name: String,
    /// `sv_map` (one of Debian's maps: Tutorial, "Sunny Side Up", "Gold Mine", LearnToPlay…).
    pub map: String,
    /// `sv_max_clients` (and `sv_max_clients_per_ip`: fake clients all come from 127.0.0.1).
    pub max_clients: u32,
    /// `password`.
    pub password: Option<String>,
    /// Register with this HTTP master (`sv_register ipv4`, `sv_register_url URL`); DDNet's
    /// libcurl takes only https and checks the system CA bundle.
    pub register: Option<Register>,
}

/// Where a DDNet server registers, and the CA bundle it should trust.
#[derive(Debug, Clone)]
pub struct Register {
    /// `sv_register_url`, e.g. `https://127.0.0.1:PORT/ddnet/15/register`.
    pub url: String,
    /// A PEM bundle bind-mounted over `/etc/ssl/certs/ca-certificates.crt` for this server
    /// only (a private mount namespace: `unshare -m`, which needs root).
    pub ca_bundle: PathBuf,
}

/// The system CA bundle DDNet's libcurl reads.
const SYSTEM_BUNDLE: &str = "/etc/ssl/certs/ca-certificates.crt";

impl Default for DdnetConfig {
    fn default() -> Self {
        DdnetConfig {
            name: "My DDNet Server".into(),
            map: "Tutorial".into(),
            max_clients: 16,
            password: None,
            register: None,
        }
    }
}

/// A real DDNet 16.4 server on 127.0.0.1 (0.6, DDNet extended and legacy, and 0.7 "sixup").
#[derive(Debug)]
pub struct Ddnet {
    /// The server process.
    pub process: Process,
    /// Its address.
    pub addr: SocketAddr,
    /// What it was started with.
    pub config: DdnetConfig,
    _dir: tempfile::TempDir,
}

impl Ddnet {
    /// Starts the server and waits until it answers `gie3`; `None` when ddnet-server is not
    /// installed (and not in CI). Its port is picked and read back from the kernel; DDNet
    /// exits when the port is taken, and is then started on another.
    pub fn start(config: DdnetConfig) -> Option<Ddnet> {
        let bin = require("DDNet-Server", "ddnet-server")?;
        let dir = temp_dir("fragstat-ddnet-");
        let data = dir.path().join(".local/share/ddnet");
        std::fs::create_dir_all(&data).expect("data dir");
        // An empty autoexec shadows Debian's (logfile, votes, sv_max_clients 64).
        std::fs::write(data.join("autoexec_server.cfg"), "").expect("autoexec");
        let (mut process, addrs) = start_on_picked_port("DDNet", &LOOPBACK, |port| {
            let mut args = vec![
                format!("sv_name {}", quoted(&config.name)),
                format!("sv_port {port}"),
                "bindaddr 127.0.0.1".into(),
                // With bindaddr 127.0.0.1 the IPv6 bind fails and the server exits otherwise.
                "sv_ipv4only 1".into(),
                format!("sv_map {}", quoted(&config.map)),
                format!("sv_max_clients {}", config.max_clients),
                format!("sv_max_clients_per_ip {}", config.max_clients),
                "sv_inactivekick_time 0".into(),
                // Fake clients all come from 127.0.0.1: without this DDNet accepts 5
                // connections per address per 20 s (sv_connlimit, network_server.cpp
                // `Connlimit`).
                "sv_connlimit_time 0".into(),
            ];
            if let Some(p) = &config.password {
                args.push(format!("password {}", quoted(p)));
            }
            match &config.register {
                None => {
                    args.push("sv_register 0".into());
                    spawn(&bin, &args, dir.path(), &[])
                }
                Some(r) => {
                    args.push("sv_register ipv4".into());
                    args.push(format!("sv_register_url {}", quoted(&r.url)));
                    // unshare(1) execs sh in a new mount namespace, sh binds the bundle and
                    // execs the server: the PID stays the server's, the bind is seen by it
                    // alone.
                    let script = format!(
                        "mount --bind \"$1\" {SYSTEM_BUNDLE} && shift && exec \"$0\" \"$@\""
                    );
                    let mut full = vec!["-m".to_string(), "sh".into(), "-c".into(), script];
                    full.push(bin.display().to_string());
                    full.push(r.ca_bundle.display().to_string());
                    full.extend(args);
                    spawn(
                        Path::new("unshare"),
                        &full,
                        dir.path(),
                        &[("LD_PRELOAD", curl_share_nothing())],
                    )
                }
            }
        });
        let addr = addrs[0];
        wait(&mut process, "DDNet", || answers_06(addr));
        Some(Ddnet {
            process,
            addr,
            config,
            _dir: dir,
        })
    }

    /// The map file the server loaded (for its size and CRC).
    pub fn map_file(&self) -> PathBuf {
        PathBuf::from("/usr/share/games/ddnet/data/maps").join(format!("{}.map", self.config.map))
    }
}

/// A real Teeworlds 0.7.5 server on 127.0.0.1.
#[derive(Debug)]
pub struct Teeworlds7 {
    /// The server process.
    pub process: Process,
    /// Its address.
    pub addr: SocketAddr,
    /// `sv_name`.
    pub name: String,
    /// `sv_map`.
    pub map: String,
    /// `sv_max_clients`.
    pub max_clients: u32,
    _dir: tempfile::TempDir,
}

impl Teeworlds7 {
    /// Starts the server (`sv_gametype dm`) and waits until it answers the handshake; `None`
    /// when teeworlds-server is not installed (and not in CI). Its port is picked and read
    /// back from the kernel, as for [`Ddnet::start`].
    pub fn start(name: &str, map: &str, max_clients: u32) -> Option<Teeworlds7> {
        let bin = require("teeworlds-server", "teeworlds-server")?;
        let dir = temp_dir("fragstat-tw7-");
        let (mut process, addrs) = start_on_picked_port("Teeworlds 0.7", &LOOPBACK, |port| {
            let args = vec![
                format!("sv_name {}", quoted(name)),
                format!("sv_port {port}"),
                "bindaddr 127.0.0.1".into(),
                "sv_register 0".into(),
                format!("sv_map {}", quoted(map)),
                "sv_gametype dm".into(),
                format!("sv_max_clients {max_clients}"),
                format!("sv_max_clients_per_ip {max_clients}"),
                "sv_inactivekick_time 0".into(),
            ];
            spawn(&bin, &args, dir.path(), &[])
        });
        let addr = addrs[0];
        wait(&mut process, "Teeworlds 0.7", || answers_07(addr));
        Some(Teeworlds7 {
            process,
            addr,
            name: name.into(),
            map: map.into(),
            max_clients,
            _dir: dir,
        })
    }
}

/// One fake client: what it joins with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FakeClient {
    /// Name (UTF-8, at most 15 bytes).
    pub name: String,
    /// Clan.
    pub clan: String,
    /// Country code.
    pub country: i32,
}

/// Where the npm package `teeworlds` is: `$FRAGSTAT_TWBOTS` (a `node_modules` folder) or
/// `/tmp/twbots/node_modules` (real-servers.md's install).
fn twbots_modules() -> PathBuf {
    std::env::var_os("FRAGSTAT_TWBOTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/tmp/twbots/node_modules"))
}

/// Fake DDNet clients (tests/bots/ddnet-clients.js), connected to a server.
#[derive(Debug)]
pub struct FakeClients {
    /// The node process (SIGTERM disconnects every client).
    pub process: Process,
    /// Who joined, in the order they joined.
    pub clients: Vec<FakeClient>,
    _dir: tempfile::TempDir,
}

impl FakeClients {
    /// Connects `clients` to `server`, 60 ms apart, and waits until all have entered. `None` when node or the npm package is missing (and not in CI).
    pub fn connect(server: SocketAddr, clients: Vec<FakeClient>) -> Option<FakeClients> {
        let node = require("node", "nodejs")?;
        let modules = twbots_modules();
        if !modules.join("teeworlds").is_dir() {
            let msg = format!(
                "npm package teeworlds@2.6.1 not in {} (mkdir -p /tmp/twbots && cd /tmp/twbots && npm init -y && npm install teeworlds@2.6.1, or set FRAGSTAT_TWBOTS)",
                modules.display()
            );
            assert!(!in_ci(), "{msg}");
            eprintln!("SKIPPED (not in CI): {msg}");
            return None;
        }
        let spec = serde_json::Value::Array(
            clients
                .iter()
                .map(|c| serde_json::json!({"name": c.name, "clan": c.clan, "country": c.country}))
                .collect(),
        );
        let dir = temp_dir("fragstat-bots-");
        let log = dir.path().join("bots.log");
        let mut child = Command::new(node)
            .arg(crate::repo_root().join("tests/bots/ddnet-clients.js"))
            .arg(server.ip().to_string())
            .arg(server.port().to_string())
            .arg(spec.to_string())
            .env("NODE_PATH", &modules)
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&log).expect("log"))
            .spawn()
            .expect("spawn node");
        let mut lines = Lines::new(child.stdout.take().expect("stdout"));
        let bots = FakeClients {
            process: Process::new(child, log),
            clients,
            _dir: dir,
        };
        // Joining takes about a second per client on a quiet machine.
        let cap = wait::STARTUP + Duration::from_secs(2 * bots.clients.len() as u64);
        if let Err(e) = lines.try_wait(cap, |l| l == "all connected") {
            panic!(
                "{} of {} fake clients connected within {cap:?} ({e}); their output:\n{}\nstderr:\n{}",
                lines.seen().iter().filter(|l| l.starts_with("connected ")).count(),
                bots.clients.len(),
                lines.seen().join("\n"),
                bots.process.log_tail()
            );
        }
        Some(bots)
    }
}

/// A real Nexuiz 2.5.2 server (DarkPlaces, protocol 3) on 127.0.0.1.
#[derive(Debug)]
pub struct Nexuiz {
    /// The server process.
    pub process: Process,
    /// Its address.
    pub addr: SocketAddr,
    /// `hostname`.
    pub hostname: String,
    /// Map (one Nexuiz has: Debian's nexdm01 does not exist; downer, bloodprison…).
    pub map: String,
    /// `maxplayers`.
    pub max_players: u32,
    /// Bots it was started with (`bot_number`, joining an empty server: `bot_join_empty`).
    pub bots: u32,
    /// The game type it runs (`qcstatus`'s first field: `dm` unless started with another).
    pub gametype: String,
    _dir: tempfile::TempDir,
}

/// The cvar that makes a Nexuiz 2.5.2 server run game type `gametype` (its `qcstatus` short
/// name); `None` for deathmatch, the default, and for names Nexuiz does not have.
fn nexuiz_gametype_cvar(gametype: &str) -> Option<&'static str> {
    Some(match gametype {
        "tdm" => "g_tdm",
        "ctf" => "g_ctf",
        "dom" => "g_domination",
        "kh" => "g_keyhunt",
        "ons" => "g_onslaught",
        "lms" => "g_lms",
        "rune" => "g_runematch",
        "arena" => "g_arena",
        "rc" => "g_race",
        _ => return None,
    })
}

impl Nexuiz {
    /// Starts the server and waits (60 s cap) until its statusResponse lists every bot;
    /// `master`: heartbeat this master (`sv_public 1`). `None` when nexuiz-server is not
    /// installed (and not in CI).
    pub fn start(
        hostname: &str,
        map: &str,
        max_players: u32,
        bots: u32,
        master: Option<SocketAddr>,
    ) -> Option<Nexuiz> {
        Self::start_game(hostname, map, max_players, bots, master, "dm")
    }

    /// As [`Nexuiz::start`], running game type `gametype` (`dm`, `tdm`, `ctf`, `dom`, `kh`,
    /// `ons`, `lms`, `rune`, `arena`, `rc`: `+g_tdm 1` and the like). The map must support
    /// it, or Nexuiz falls back to deathmatch (`downer`: dm tdm dom rune lms arena;
    /// `basementctf`: ctf).
    ///
    /// # Panics
    /// On a game type Nexuiz does not have.
    pub fn start_game(
        hostname: &str,
        map: &str,
        max_players: u32,
        bots: u32,
        master: Option<SocketAddr>,
        gametype: &str,
    ) -> Option<Nexuiz> {
        let cvar = nexuiz_gametype_cvar(gametype);
        assert!(
            cvar.is_some() || gametype == "dm",
            "Nexuiz has no game type {gametype:?}"
        );
        let bin = require("nexuiz-server", "nexuiz-server")?;
        let dir = temp_dir("fragstat-nexuiz-");
        let (mut process, addrs) = start_on_picked_port("Nexuiz", &LOOPBACK, |port| {
            let mut args: Vec<String> = vec![
                "-userdir".into(),
                dir.path().display().to_string(),
                "+net_address".into(),
                "127.0.0.1".into(),
                "+port".into(),
                port.to_string(),
                "+hostname".into(),
                hostname.into(),
                "+maxplayers".into(),
                max_players.to_string(),
                "+bot_join_empty".into(),
                "1".into(),
                "+bot_number".into(),
                bots.to_string(),
            ];
            if let Some(cvar) = cvar {
                args.extend([format!("+{cvar}"), "1".into()]);
            }
            match master {
                Some(m) => args.extend(
                    [
                        "+sv_public",
                        "1",
                        "+sv_master1",
                        &m.to_string(),
                        "+sv_master2",
                        "",
                        "+sv_master3",
                        "",
                        "+sv_master4",
                        "",
                    ]
                    .map(String::from),
                ),
                None => args.extend(["+sv_public", "0"].map(String::from)),
            }
            args.extend(["+map".into(), map.into()]);
            spawn(&bin, &args, dir.path(), &[])
        });
        let addr = addrs[0];
        // DarkPlaces answers one getstatus per source address about once a second: ask
        // slowly, and from the probe address, not the test's.
        wait::until_every(
            "Nexuiz listing its bots",
            wait::STARTUP,
            Duration::from_millis(1100),
            || {
                process.check_running();
                let reply = probe(
                    addr,
                    b"\xff\xff\xff\xffgetstatus ready",
                    Duration::from_millis(300),
                )?;
                let lines = reply
                    .split(|&b| b == b'\n')
                    .filter(|l| l.contains(&b'"'))
                    .count();
                (lines >= bots as usize).then_some(())
            },
        );
        Some(Nexuiz {
            process,
            addr,
            hostname: hostname.into(),
            map: map.into(),
            max_players,
            bots,
            gametype: gametype.into(),
            _dir: dir,
        })
    }
}

/// CRC-32 (IEEE) of `bytes`, as the DDNet map CRC is.
pub fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = 0xFFFF_FFFFu32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

#[cfg(test)]
mod tests {
    #[test]
    fn crc32_check_value() {
        assert_eq!(super::crc32(b"123456789"), 0xCBF4_3926);
    }
}
