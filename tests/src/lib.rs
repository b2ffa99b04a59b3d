//! Test support: start real game servers (Debian packages) on 127.0.0.1, wait until they
//! answer, run qstat, and clean up every process and directory afterwards.
//!
//! Real-server tests call [`require`] first. When a program is missing it fails under
//! `CI` (these tests must run there) and otherwise prints a loud `SKIPPED` line naming the
//! package to install; `cargo xtask test` installs the packages when it runs as root.
//!
//! Also: the fixture tree ([`fixtures`]) and the matcher its expectations are written in
//! ([`expect`]), and the JSON Schema of a server record ([`server_schema`], [`validate_server`]).

use std::net::{SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

pub mod browser;
pub mod expect;
pub mod fixtures;
pub mod games;
pub mod postgres;

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

/// A UDP port on 127.0.0.1 that was free a moment ago.
pub fn free_udp_port() -> u16 {
    let s = UdpSocket::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    s.local_addr().expect("local addr").port()
}

/// Sends `request` to `addr` and returns the first reply within `wait`.
pub fn udp_ask(addr: SocketAddr, request: &[u8], wait: Duration) -> Option<Vec<u8>> {
    let bind = if addr.is_ipv4() {
        "127.0.0.1:0"
    } else {
        "[::1]:0"
    };
    let s = UdpSocket::bind(bind).ok()?;
    s.set_read_timeout(Some(wait)).ok()?;
    s.send_to(request, addr).ok()?;
    let mut buf = vec![0u8; 65536];
    let (n, _) = s.recv_from(&mut buf).ok()?;
    buf.truncate(n);
    Some(buf)
}

/// A child process stopped on drop: SIGTERM, up to 5 s, then SIGKILL.
#[derive(Debug)]
pub struct Process {
    child: Child,
    log: PathBuf,
}

impl Process {
    /// The PID.
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// The last lines of the process's log.
    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }

    /// Fails with the log when the process has exited.
    pub fn check_running(&mut self) {
        if let Ok(Some(status)) = self.child.try_wait() {
            panic!("server exited early ({status}); log:\n{}", self.log_tail());
        }
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status();
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(5) {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
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
            map: "oa_dm1".into(),
            ipv6: false,
            master: None,
        }
    }
}

impl OpenArena {
    /// Starts the server and waits until its statusResponse lists every bot.
    /// `None` when openarena-server is not installed (and not in CI).
    pub fn start(config: OpenArenaConfig) -> Option<OpenArena> {
        let bin = require("openarena-server", "openarena-server")?;
        assert!(
            !config.hostname.contains(['"', '+']),
            "ioq3 cannot take this hostname from argv"
        );
        let dir = tempfile::Builder::new()
            .prefix("fragstat-oa-")
            .tempdir()
            .expect("temp dir");
        let home = dir.path().join("home");
        std::fs::create_dir_all(&home).expect("home dir");
        let port = free_udp_port();
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
        let port6 = config.ipv6.then(free_udp_port6).flatten();
        match port6 {
            Some(p6) => args.extend(
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
                .chain([p6.to_string()]),
            ),
            None => args.extend(["+set", "net_enabled", "1"].map(String::from)),
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
        let log = dir.path().join("server.log");
        let logf = std::fs::File::create(&log).expect("log file");
        let child = Command::new(bin)
            .args(&args)
            .env("HOME", dir.path())
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(logf.try_clone().expect("log"))
            .stderr(logf)
            .spawn()
            .expect("spawn openarena-server");
        let mut server = OpenArena {
            process: Process { child, log },
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
            addr6: port6.map(|p| SocketAddr::from((std::net::Ipv6Addr::LOCALHOST, p))),
            bots: config.bots.clone(),
            _dir: dir,
        };
        server.wait_ready();
        Some(server)
    }

    /// Polls getstatus until every bot is listed (30 s cap).
    fn wait_ready(&mut self) {
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(30) {
            self.process.check_running();
            if let Some(reply) = udp_ask(
                self.addr,
                b"\xff\xff\xff\xffgetstatus\n",
                Duration::from_millis(200),
            ) {
                let lines = reply
                    .split(|&b| b == b'\n')
                    .filter(|l| l.contains(&b'"'))
                    .count();
                if lines >= self.bots.len() {
                    return;
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!(
            "OpenArena did not answer within 30 s; log:\n{}",
            self.process.log_tail()
        );
    }
}

/// A UDP port on `[::1]` that was free a moment ago; `None` without IPv6 loopback.
pub fn free_udp_port6() -> Option<u16> {
    let s = UdpSocket::bind("[::1]:0").ok()?;
    Some(s.local_addr().ok()?.port())
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
    /// The emulated master, when started with `--master`.
    pub master: Option<SocketAddr>,
    _dir: tempfile::TempDir,
}

/// Starts `fragstat serve ARGS` and waits for its `ready` line (10 s cap).
pub fn spawn_serve(fragstat: &Path, args: &[&str]) -> Served {
    use std::io::BufRead;
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
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            let ready = line == "ready";
            if tx.send(line).is_err() || ready {
                break;
            }
        }
    });
    let mut served = Served {
        process: Process { child, log },
        servers: Vec::new(),
        master: None,
        _dir: dir,
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let line = rx.recv_timeout(left).unwrap_or_else(|_| {
            panic!(
                "fragstat serve not ready; log:\n{}",
                served.process.log_tail()
            )
        });
        match line.split_once(' ') {
            Some(("server", a)) => served.servers.push(a.parse().expect("server address")),
            Some(("master", a)) => served.master = Some(a.parse().expect("master address")),
            _ if line == "ready" => return served,
            _ => {}
        }
    }
}
