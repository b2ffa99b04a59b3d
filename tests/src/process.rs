//! Child processes for tests: stopped on drop, their logs at hand, their stdout read line by
//! line with deadlines, and the ports they really bound.

use std::io::{BufRead, BufReader};
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::ports::{pick_port, udp_ports_of};
use crate::wait::POLL;

/// A child process stopped on drop: SIGTERM, up to 10 s, then SIGKILL.
#[derive(Debug)]
pub struct Process {
    child: Child,
    log: PathBuf,
    /// Set once the child has been reaped: its PID is then no longer ours to signal.
    status: Option<ExitStatus>,
}

/// Why a process has no address: it exited (with its status and log tail).
#[derive(Debug)]
pub struct Exited {
    /// The exit status, as text.
    pub status: String,
    /// The last lines of its log.
    pub log: String,
}

impl Exited {
    /// Whether it exited because its address was taken (`Address already in use`, DDNet's
    /// `port … might already be in use`).
    pub fn in_use(&self) -> bool {
        self.log.contains("already in use")
    }
}

impl Process {
    /// Wraps a spawned child whose output goes to `log`.
    pub fn new(child: Child, log: PathBuf) -> Process {
        Process {
            child,
            log,
            status: None,
        }
    }

    /// Spawns `bin ARGS` in `dir` with stdout and stderr into `dir/<log_name>`.
    ///
    /// # Panics
    /// When the program cannot be started.
    pub fn spawn_logged(cmd: &mut Command, dir: &Path, log_name: &str) -> Process {
        let log = dir.join(log_name);
        let logf = std::fs::File::create(&log).expect("log file");
        let child = cmd
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(logf.try_clone().expect("log"))
            .stderr(logf)
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {cmd:?}: {e}"));
        Process::new(child, log)
    }

    /// The PID.
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// The log file.
    pub fn log_path(&self) -> &Path {
        &self.log
    }

    /// The whole log so far.
    pub fn log(&self) -> String {
        String::from_utf8_lossy(&std::fs::read(&self.log).unwrap_or_default()).into_owned()
    }

    /// The last lines of the process's log.
    pub fn log_tail(&self) -> String {
        let text = self.log();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }

    /// `Err` with the status and log when the process has exited.
    pub fn exited(&mut self) -> Result<(), Exited> {
        match self.try_wait() {
            Some(status) => Err(Exited {
                status: status.to_string(),
                log: self.log_tail(),
            }),
            None => Ok(()),
        }
    }

    /// The exit status once the process has exited (it is reaped then, once).
    pub fn try_wait(&mut self) -> Option<ExitStatus> {
        if self.status.is_none() {
            self.status = self.child.try_wait().ok().flatten();
        }
        self.status
    }

    /// Fails with the log when the process has exited.
    ///
    /// # Panics
    /// When it has.
    pub fn check_running(&mut self) {
        if let Err(e) = self.exited() {
            panic!("server exited early ({}); log:\n{}", e.status, e.log);
        }
    }

    /// Waits until the process has bound a UDP socket on each of `ips` (port not 0), as the
    /// kernel reports it for this PID, and returns those addresses in the order of `ips`.
    ///
    /// # Errors
    /// When the process exits first.
    ///
    /// # Panics
    /// After `cap`.
    pub fn bound_udp(&mut self, ips: &[IpAddr], cap: Duration) -> Result<Vec<SocketAddr>, Exited> {
        let deadline = Instant::now() + cap;
        loop {
            self.exited()?;
            let bound = udp_ports_of(self.id());
            let found: Vec<SocketAddr> = ips
                .iter()
                .filter_map(|ip| bound.iter().find(|a| a.ip() == *ip).copied())
                .collect();
            if found.len() == ips.len() {
                return Ok(found);
            }
            assert!(
                Instant::now() < deadline,
                "no UDP socket on {ips:?} within {cap:?} (bound: {bound:?}); log:\n{}",
                self.log_tail()
            );
            std::thread::sleep(POLL);
        }
    }

    /// Sends SIGTERM and waits up to `cap` for the exit, then SIGKILL.
    pub fn stop(&mut self, cap: Duration) {
        if self.try_wait().is_some() {
            return;
        }
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status();
        let start = Instant::now();
        while start.elapsed() < cap {
            if self.try_wait().is_some() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.kill();
    }

    /// SIGKILL, and waits for the exit.
    pub fn kill(&mut self) {
        if self.try_wait().is_none() {
            let _ = self.child.kill();
            self.status = self.child.wait().ok();
        }
    }

    /// Sends `signal` (`-INT`, `-TERM`…) unless the process has been reaped.
    ///
    /// # Panics
    /// When `kill` fails.
    pub fn signal(&mut self, signal: &str) {
        assert!(
            self.try_wait().is_none(),
            "signal {signal}: the process has exited"
        );
        let status = Command::new("kill")
            .args([signal, &self.id().to_string()])
            .status()
            .expect("kill");
        assert!(status.success(), "kill {signal} {}", self.id());
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.stop(Duration::from_secs(10));
    }
}

/// Starts a third-party server that must be told its port: `start(port)` with a port from
/// [`pick_port`], then the UDP addresses it really bound on `ips` (read from the kernel);
/// started again on another port, up to 8 times, when it exits because the port was taken.
///
/// # Panics
/// When it exits for another reason, or keeps finding its ports taken.
pub fn start_on_picked_port(
    what: &str,
    ips: &[IpAddr],
    mut start: impl FnMut(u16) -> Process,
) -> (Process, Vec<SocketAddr>) {
    let mut last = String::new();
    for _ in 0..8 {
        let port = pick_port();
        let mut p = start(port);
        match p.bound_udp(ips, crate::wait::STARTUP) {
            Ok(addrs) => return (p, addrs),
            Err(e) if e.in_use() => {
                eprintln!("{what}: port {port} was taken, trying another");
                last = e.log;
            }
            Err(e) => panic!("{what} exited at start ({}); log:\n{}", e.status, e.log),
        }
    }
    panic!("{what}: every port tried was taken; last log:\n{last}");
}

/// A child's stdout, line by line, read by a thread into a channel.
#[derive(Debug)]
pub struct Lines {
    rx: mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Lines {
    /// Starts reading `stdout`.
    pub fn new(stdout: ChildStdout) -> Lines {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Lines {
            rx,
            seen: Vec::new(),
        }
    }

    /// The next line that passes `pred` within `cap` (lines before it are passed over).
    ///
    /// # Panics
    /// After `cap`, or when the output ends first, with the lines seen.
    pub fn wait(&mut self, what: &str, cap: Duration, pred: impl Fn(&str) -> bool) -> String {
        self.try_wait(cap, pred).unwrap_or_else(|e| {
            panic!(
                "{what}: no such line within {cap:?} ({e}); lines seen:\n{}",
                self.seen.join("\n")
            )
        })
    }

    /// [`Lines::wait`] that says why instead of panicking.
    ///
    /// # Errors
    /// After `cap`, or when the output ends first.
    pub fn try_wait(
        &mut self,
        cap: Duration,
        pred: impl Fn(&str) -> bool,
    ) -> Result<String, mpsc::RecvTimeoutError> {
        let deadline = Instant::now() + cap;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let l = self.rx.recv_timeout(left)?;
            self.seen.push(l.clone());
            if pred(&l) {
                return Ok(l);
            }
        }
    }

    /// Every line read so far.
    pub fn seen(&self) -> &[String] {
        &self.seen
    }

    /// The next line within `cap`, or `None` when the output ended.
    ///
    /// # Panics
    /// After `cap`.
    pub fn next(&mut self, cap: Duration) -> Option<String> {
        match self.rx.recv_timeout(cap) {
            Ok(l) => {
                self.seen.push(l.clone());
                Some(l)
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => None,
            Err(mpsc::RecvTimeoutError::Timeout) => panic!(
                "no line within {cap:?}; lines seen:\n{}",
                self.seen.join("\n")
            ),
        }
    }
}
