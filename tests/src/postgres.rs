//! A real PostgreSQL server (Debian `postgresql`) in a private temp dir on a loopback
//! port, started by the test as the game servers are: `initdb` with trust authentication,
//! then `postgres` itself as a child process (as the `postgres` user when the tests run as
//! root, since PostgreSQL refuses to run as root), stopped by PID on drop. Its port is
//! picked by [`crate::ports::pick_port`]; the server is known to be up when the kernel says
//! its PID listens there, and is started again on another port when it exits because the
//! port was taken.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::netns::is_root;
use crate::ports::{pick_port, tcp_listeners_of};
use crate::{in_ci, wait, Process};

/// A running PostgreSQL server.
#[derive(Debug)]
pub struct Postgres {
    /// Stopped first (field order): the server process.
    pub process: Process,
    /// `postgres://postgres@127.0.0.1:PORT/postgres`.
    pub url: String,
    /// The port.
    pub port: u16,
    _dir: tempfile::TempDir,
}

/// The newest `/usr/lib/postgresql/*/bin` that has `initdb` (Debian's layout), if any.
pub fn bin_dir() -> Option<PathBuf> {
    let mut dirs: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| {
            let e = e.ok()?;
            let v: u32 = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").is_file().then_some((v, bin))
        })
        .collect();
    dirs.sort();
    dirs.pop().map(|(_, d)| d)
}

fn id_of(user: &str, flag: &str) -> Option<u32> {
    let out = Command::new("id").arg(flag).arg(user).output().ok()?;
    String::from_utf8_lossy(&out.stdout).trim().parse().ok()
}

fn command(bin: &Path, user: Option<(u32, u32)>) -> Command {
    let mut c = Command::new(bin);
    if let Some((uid, gid)) = user {
        c.uid(uid).gid(gid);
    }
    c
}

impl Postgres {
    /// Starts a server and waits until it accepts connections (30 s cap). `None` when
    /// PostgreSQL is not installed (and not in CI, where this fails instead).
    pub fn start() -> Option<Postgres> {
        let Some(bin) = bin_dir() else {
            let msg = "PostgreSQL not found under /usr/lib/postgresql: install the Debian package postgresql (apt-get install -y postgresql), or run `cargo xtask test` as root";
            assert!(!in_ci(), "{msg}");
            eprintln!("SKIPPED (not in CI): {msg}");
            return None;
        };
        let dir = tempfile::Builder::new()
            .prefix("fragstat-pg-")
            .tempdir()
            .expect("temp dir");
        // PostgreSQL will not run as root: run it as the package's `postgres` user.
        let user = if is_root() {
            let uid = id_of("postgres", "-u").expect("user postgres (from the postgresql package)");
            let gid = id_of("postgres", "-g").expect("group of user postgres");
            let status = Command::new("chown")
                .arg(format!("{uid}:{gid}"))
                .arg(dir.path())
                .status()
                .expect("chown");
            assert!(status.success(), "chown {}", dir.path().display());
            Some((uid, gid))
        } else {
            None
        };
        let data = dir.path().join("data");
        let out = command(&bin.join("initdb"), user)
            .arg("-D")
            .arg(&data)
            .args(["-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync"])
            .current_dir(dir.path())
            .output()
            .expect("run initdb");
        assert!(
            out.status.success(),
            "initdb failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        for _ in 0..8 {
            let port = pick_port();
            let log = dir.path().join(format!("postgres-{port}.log"));
            let logf = std::fs::File::create(&log).expect("log file");
            if let Some((uid, gid)) = user {
                let _ = Command::new("chown")
                    .arg(format!("{uid}:{gid}"))
                    .arg(&log)
                    .status();
            }
            let child = command(&bin.join("postgres"), user)
                .arg("-D")
                .arg(&data)
                .arg("-p")
                .arg(port.to_string())
                .arg("-k")
                .arg(dir.path())
                .args([
                    "-c",
                    "listen_addresses=127.0.0.1",
                    "-c",
                    "fsync=off",
                    "-c",
                    "max_connections=50",
                ])
                .current_dir(dir.path())
                .stdin(Stdio::null())
                .stdout(logf.try_clone().expect("log"))
                .stderr(logf)
                .spawn()
                .expect("spawn postgres");
            let mut process = Process::new(child, log);
            let want = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port);
            // Up when this PID listens on the port (its own socket, not another copy's
            // server that holds the port), then when it accepts connections.
            let listening = wait::until("PostgreSQL listening", wait::STARTUP, || {
                if let Err(e) = process.exited() {
                    return Some(Err(e));
                }
                tcp_listeners_of(process.id())
                    .contains(&want)
                    .then_some(Ok(()))
            });
            match listening {
                Ok(()) => {}
                Err(e) if e.in_use() => {
                    eprintln!("PostgreSQL: port {port} was taken, trying another");
                    continue;
                }
                Err(e) => panic!("PostgreSQL exited at start ({}); log:\n{}", e.status, e.log),
            }
            wait::until("PostgreSQL accepting connections", wait::STARTUP, || {
                process.check_running();
                Command::new(bin.join("pg_isready"))
                    .args(["-h", "127.0.0.1", "-p", &port.to_string(), "-U", "postgres"])
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status()
                    .is_ok_and(|s| s.success())
                    .then_some(())
            });
            return Some(Postgres {
                process,
                url: format!("postgres://postgres@127.0.0.1:{port}/postgres"),
                port,
                _dir: dir,
            });
        }
        panic!("PostgreSQL: every port tried was taken");
    }
}
