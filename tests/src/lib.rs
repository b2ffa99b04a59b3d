//! Test support: start real game servers (Debian packages) on 127.0.0.1, wait until they
//! answer, run qstat, and clean up every process and directory afterwards.
//!
//! Real-server tests call [`require`] first. When a program is missing it fails under
//! `CI` (these tests must run there) and otherwise prints a loud `SKIPPED` line naming the
//! package to install; `cargo xtask test` installs the packages when it runs as root.
//!
//! Also: the fixture tree ([`fixtures`]) and the matcher its expectations are written in
//! ([`expect`]), and the JSON Schema of a server record ([`server_schema`], [`validate_server`]).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

pub mod browser;
pub mod expect;
pub mod fixtures;
#[cfg(feature = "flood")]
pub mod flood;
pub mod games;
pub mod mutate;
pub mod netns;
pub mod ports;
pub mod postgres;
pub mod process;
pub mod wait;

pub use ports::{require_ipv6, RefusingTcp, RefusingUdp, SilentUdp};
pub use process::{Lines, Process};

/// Where the server record's JSON Schema lives (docs/json.md describes the same fields).
pub fn server_schema_path() -> PathBuf {
    repo_root().join("docs/server.schema.json")
}

/// The JSON Schema (draft 2020-12) of a server record — what `fragstat query` writes for each
/// server and `fragstat decode` for a server's reply — compiled once.
///
/// # Panics
/// When docs/server.schema.json cannot be read, is not JSON, or is not a valid schema.
pub fn server_schema() -> &'static jsonschema::Validator {
    static SCHEMA: OnceLock<jsonschema::Validator> = OnceLock::new();
    SCHEMA.get_or_init(|| {
        let path = server_schema_path();
        let text = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let schema: serde_json::Value = serde_json::from_slice(&text)
            .unwrap_or_else(|e| panic!("{}: not JSON: {e}", path.display()));
        jsonschema::draft202012::new(&schema)
            .unwrap_or_else(|e| panic!("{}: not a valid schema: {e}", path.display()))
    })
}

/// Validates one server record against [`server_schema`]; on failure, every violation, one
/// per line, each with its JSON pointer (`/players/0/score: …`).
pub fn validate_server(record: &serde_json::Value) -> Result<(), String> {
    let errors: Vec<String> = server_schema()
        .iter_errors(record)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("\n"))
    }
}

/// True when running in CI (`CI` set and not `false`/`0`).
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0")
}

/// Finds `program` on PATH or under /usr/games.
pub fn which(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/games")])
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}

/// Returns the program's path; if it is missing, panics under CI and otherwise prints
/// `SKIPPED` with the package to install and returns `None`.
pub fn require(program: &str, package: &str) -> Option<PathBuf> {
    if let Some(p) = which(program) {
        return Some(p);
    }
    let msg = format!("{program} not found: install the Debian package {package} (apt-get install -y {package}), or run `cargo xtask test` as root");
    assert!(!in_ci(), "{msg}");
    eprintln!("SKIPPED (not in CI): {msg}");
    None
}

/// Sends `request` to `addr` and returns the first reply from `addr` within `wait`.
pub fn udp_ask(addr: SocketAddr, request: &[u8], wait: Duration) -> Option<Vec<u8>> {
    let from: IpAddr = if addr.is_ipv4() {
        Ipv4Addr::LOCALHOST.into()
    } else {
        Ipv6Addr::LOCALHOST.into()
    };
    udp_ask_from(from, addr, request, wait)
}

/// The source address readiness probes use for IPv4 servers: 127.0.0.2, so that the rate
/// limits game servers keep per source IP (ioq3: a burst of 10, then one a second;
/// DarkPlaces: one query a second) are left whole for the test's own queries from
/// 127.0.0.1.
pub const PROBE_FROM: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2));

/// [`udp_ask`] from a socket bound on `from` (port 0).
pub fn udp_ask_from(
    from: IpAddr,
    addr: SocketAddr,
    request: &[u8],
    wait: Duration,
) -> Option<Vec<u8>> {
    let s = UdpSocket::bind(SocketAddr::new(from, 0)).ok()?;
    s.connect(addr).ok()?;
    s.set_read_timeout(Some(wait)).ok()?;
    s.send(request).ok()?;
    let mut buf = vec![0u8; 65536];
    let n = s.recv(&mut buf).ok()?;
    buf.truncate(n);
    Some(buf)
}

/// [`udp_ask_from`] [`PROBE_FROM`] for IPv4 servers, [`udp_ask`] for IPv6 ones.
pub fn probe(addr: SocketAddr, request: &[u8], wait: Duration) -> Option<Vec<u8>> {
    if addr.is_ipv4() {
        udp_ask_from(PROBE_FROM, addr, request, wait)
    } else {
        udp_ask(addr, request, wait)
    }
}

/// A real OpenArena 0.8.8 (ioquake3 1.36) dedicated server on loopback.
#[derive(Debug)]
pub struct OpenArena {
    /// Stopped first (field order): the server process.
    pub process: Process,
    /// The server's IPv4 address.
    pub addr: SocketAddr,
    /// The server's IPv6 address, when started with one.
    pub addr6: Option<SocketAddr>,
    /// The bots it was started with.
    pub bots: Vec<String>,
    _dir: tempfile::TempDir,
}

/// What to start.
#[derive(Debug, Clone)]
pub struct OpenArenaConfig {
    /// `sv_hostname` (no `"` or `+`: ioq3 re-joins argv).
    pub hostname: String,
    /// Bots to add (`sarge`, `grism`, `kyonshi`, `major`, `angelyss`, `ayumi`, `merman`).
    pub bots: Vec<String>,
    /// `sv_maxclients`.
    pub max_clients: u32,
    /// `sv_privateClients`: slots of `max_clients` kept for a private password (bots fill
    /// them first).
    pub private_clients: u32,
    /// Map.
    pub map: String,
    /// Also listen on `[::1]`.
    pub ipv6: bool,
    /// Run public (`dedicated 2`) and heartbeat to this master as `sv_master1`.
    pub master: Option<SocketAddr>,
}

impl Default for OpenArenaConfig {
    fn default() -> Self {
        OpenArenaConfig {
            hostname: "My ^1OA^7 Server".into(),
            bots: vec!["sarge".into(), "grism".into()],
            max_clients: 8,
            private_clients: 0,
            map: "oa_dm1".into(),
            ipv6: false,
            master: None,
        }
    }
}

impl OpenArena {
    /// Starts the server and waits until its statusResponse lists every bot. Its port is
    /// picked by [`ports::pick_port`] and read back from the kernel (ioq3 moves to the next
    /// port when one is taken). `None` when openarena-server is not installed (and not in
    /// CI).
    pub fn start(config: OpenArenaConfig) -> Option<OpenArena> {
        let bin = require("openarena-server", "openarena-server")?;
        assert!(
            !config.hostname.contains(['"', '+']),
            "ioq3 cannot take this hostname from argv"
        );
        if config.ipv6 && !require_ipv6() {
            return None;
        }
        let dir = tempfile::Builder::new()
            .prefix("fragstat-oa-")
            .tempdir()
            .expect("temp dir");
        let home = dir.path().join("home");
        std::fs::create_dir_all(&home).expect("home dir");
        let mut ips = vec![IpAddr::V4(Ipv4Addr::LOCALHOST)];
        if config.ipv6 {
            ips.push(IpAddr::V6(Ipv6Addr::LOCALHOST));
        }
        let (process, addrs) = process::start_on_picked_port("OpenArena", &ips, |port| {
            let args = Self::args(&config, &home, port);
            Process::spawn_logged(
                Command::new(&bin).args(&args).env("HOME", dir.path()),
                dir.path(),
                "server.log",
            )
        });
        let mut server = OpenArena {
            process,
            addr: addrs[0],
            addr6: addrs.get(1).copied(),
            bots: config.bots.clone(),
            _dir: dir,
        };
        server.wait_ready();
        Some(server)
    }

    fn args(config: &OpenArenaConfig, home: &Path, port: u16) -> Vec<String> {
        let dedicated = if config.master.is_some() { "2" } else { "1" };
        let mut args: Vec<String> = vec![
            "+set".into(),
            "dedicated".into(),
            dedicated.into(),
            "+set".into(),
            "fs_homepath".into(),
            home.display().to_string(),
            "+set".into(),
            "net_ip".into(),
            "127.0.0.1".into(),
            "+set".into(),
            "net_port".into(),
            port.to_string(),
        ];
        if config.ipv6 {
            args.extend(
                [
                    "+set",
                    "net_enabled",
                    "3",
                    "+set",
                    "net_ip6",
                    "::1",
                    "+set",
                    "net_port6",
                ]
                .map(String::from)
                .into_iter()
                .chain([port.to_string()]),
            );
        } else {
            args.extend(["+set", "net_enabled", "1"].map(String::from));
        }
        for i in 1..=5 {
            let master = match (i, config.master) {
                (1, Some(m)) => m.to_string(),
                _ => String::new(),
            };
            args.extend(["+set".into(), format!("sv_master{i}"), master]);
        }
        args.extend(
            [
                "+set",
                "sv_hostname",
                &config.hostname,
                "+set",
                "sv_maxclients",
                &config.max_clients.to_string(),
                "+set",
                "sv_privateClients",
                &config.private_clients.to_string(),
                "+set",
                "g_gametype",
                "0",
                "+set",
                "fraglimit",
                "0",
                "+set",
                "timelimit",
                "0",
                "+set",
                "bot_enable",
                "1",
                "+set",
                "bot_nochat",
                "1",
                "+map",
                &config.map,
            ]
            .map(String::from),
        );
        for b in &config.bots {
            args.extend(["+addbot".into(), b.clone(), "1".into()]);
        }
        args
    }

    /// Polls getstatus until every bot is listed.
    fn wait_ready(&mut self) {
        let addr = self.addr;
        let bots = self.bots.len();
        let process = &mut self.process;
        // At most four a second: ioq3 answers ten a second in all.
        let every = Duration::from_millis(250);
        wait::until_every("OpenArena listing its bots", wait::STARTUP, every, || {
            process.check_running();
            let reply = probe(
                addr,
                b"\xff\xff\xff\xffgetstatus\n",
                Duration::from_millis(250),
            )?;
            let lines = reply
                .split(|&b| b == b'\n')
                .filter(|l| l.contains(&b'"'))
                .count();
            (lines >= bots).then_some(())
        });
    }
}

/// Runs `quakestat` with `args` and parses its `-json` output.
/// `None` when qstat is not installed (and not in CI).
pub fn qstat_json(args: &[&str]) -> Option<serde_json::Value> {
    let bin = require("quakestat", "qstat")?;
    let out = Command::new(bin)
        .args(args)
        .arg("-json")
        .output()
        .expect("run quakestat");
    assert!(
        out.status.success(),
        "quakestat failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "quakestat JSON: {e}\n{}",
            String::from_utf8_lossy(&out.stdout)
        )
    }))
}

/// The repository root.
pub fn repo_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("repo root")
}

/// A running `fragstat serve` and the addresses it printed.
#[derive(Debug)]
pub struct Served {
    /// The process (stopped on drop).
    pub process: Process,
    /// Emulated game servers.
    pub servers: Vec<SocketAddr>,
    /// The emulated master, when started with `--master` (for an HTTP list, its listener).
    pub master: Option<SocketAddr>,
    /// The HTTP list's URL, for games whose master is one (DDNet, ETQW).
    pub master_url: Option<String>,
    _dir: tempfile::TempDir,
}

/// Starts `fragstat serve ARGS` and waits for its `ready` line: the addresses are the ones
/// it printed (bound on port 0 by the emulator itself).
pub fn spawn_serve(fragstat: &Path, args: &[&str]) -> Served {
    let dir = tempfile::Builder::new()
        .prefix("fragstat-serve-")
        .tempdir()
        .expect("temp dir");
    let log = dir.path().join("serve.log");
    let mut child = Command::new(fragstat)
        .arg("serve")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&log).expect("log"))
        .spawn()
        .expect("spawn fragstat serve");
    let mut lines = Lines::new(child.stdout.take().expect("stdout"));
    let mut served = Served {
        process: Process::new(child, log),
        servers: Vec::new(),
        master: None,
        master_url: None,
        _dir: dir,
    };
    loop {
        let Some(line) = lines.next(wait::SETTLE) else {
            panic!(
                "fragstat serve ended before `ready`; log:\n{}",
                served.process.log_tail()
            );
        };
        match line.split_once(' ') {
            Some(("server", a)) => served.servers.push(a.parse().expect("server address")),
            Some(("master", url)) if url.contains("://") => {
                let host = url
                    .split("://")
                    .nth(1)
                    .and_then(|r| r.split('/').next())
                    .expect("master URL");
                served.master = Some(host.parse().expect("master URL's address"));
                served.master_url = Some(url.to_string());
            }
            Some(("master", a)) => served.master = Some(a.parse().expect("master address")),
            _ if line == "ready" => return served,
            _ => {}
        }
    }
}
