//! `fragstat master-server` with real game servers registering: OpenArena (ioquake3,
//! `QuakeArena-1` heartbeats) and Nexuiz (DarkPlaces, `DarkPlaces` heartbeats), listed by
//! `fragstat master` and by qstat, removed when they shut down, kept across a restart with
//! `--state`. Under CI these fail, never skip, when a package is missing.

use std::net::{SocketAddr, UdpSocket};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use fragstat_testkit::games::Nexuiz;
use fragstat_testkit::netns::{is_root, private_netns, Netns};
use fragstat_testkit::wait::{self, SETTLE};
use fragstat_testkit::{in_ci, qstat_json, OpenArena, OpenArenaConfig};
use serde_json::{json, Value};

mod support;
use fragstat_testkit::flood::{hold, test_ca, tls_connector, Flood};
use support::{bin, http_get, Running};

/// A running `fragstat master-server`, stopped (SIGTERM, so it saves its state) on drop.
struct MasterServer {
    running: Running,
    addr: SocketAddr,
    metrics: Option<String>,
    /// The DDNet HTTP master's base URL (`https://ADDR/ddnet/15/`), with `--ddnet-listen`.
    ddnet: Option<String>,
}

impl MasterServer {
    /// Starts the master on `socket`, which the test binds and keeps: it is passed as fd 3
    /// by socket activation (`LISTEN_FDS=1`), so a restarted master serves the same port
    /// and no other program can take it in between.
    fn start(socket: &UdpSocket, state: &Path, metrics: bool, extra: &[&str]) -> MasterServer {
        use command_fds::{CommandFdExt, FdMapping};
        use std::os::fd::AsFd;
        let mut args = vec![
            "master-server".to_string(),
            "--allow-loopback".into(),
            "--state".into(),
            state.display().to_string(),
        ];
        if metrics {
            args.extend(["--metrics".into(), "127.0.0.1:0".into()]);
        }
        args.extend(extra.iter().map(|s| s.to_string()));
        let mut cmd = Command::new(bin());
        cmd.args(&args).env("LISTEN_FDS", "1");
        cmd.fd_mappings(vec![FdMapping {
            parent_fd: socket.as_fd().try_clone_to_owned().expect("dup socket"),
            child_fd: 3,
        }])
        .expect("fd 3");
        let mut running = Running::start_cmd(cmd);
        let mut addr = None;
        let mut metrics = None;
        let mut ddnet = None;
        loop {
            let line = running.wait_line("master-server ready", |_| true);
            if let Some(a) = line.strip_prefix("master ") {
                addr = Some(a.parse().unwrap());
            } else if let Some(m) = line.strip_prefix("metrics ") {
                metrics = Some(m.to_string());
            } else if let Some(d) = line.strip_prefix("ddnet ") {
                // The full list URL; the tests want the base.
                let base = d
                    .strip_suffix("servers.json")
                    .expect("the servers.json URL");
                ddnet = Some(base.to_string());
            } else if line == "ready" {
                break;
            }
        }
        let addr = addr.expect("master address");
        assert_eq!(
            addr,
            socket.local_addr().unwrap(),
            "serves the passed socket"
        );
        MasterServer {
            running,
            addr,
            metrics,
            ddnet,
        }
    }

    /// SIGTERM, and waits for the exit (the state is saved then).
    fn stop(&mut self) {
        self.running.process.stop(SETTLE);
    }

    /// The value of metric `line_start` (e.g. `fragstat_master_verifications_total`).
    fn metric(&self, line_start: &str) -> Option<f64> {
        let (_, text) = http_get(self.metrics.as_deref().expect("started with metrics"));
        text.lines()
            .find_map(|l| l.strip_prefix(line_start)?.trim().parse().ok())
    }
}

/// A socket for a master to serve, bound on 127.0.0.1:0 and kept by the test.
fn master_socket() -> UdpSocket {
    UdpSocket::bind("127.0.0.1:0").expect("bind 127.0.0.1:0")
}

/// The addresses `fragstat master GAME MASTER [ARGS]` lists.
fn listed(game: &str, master: SocketAddr, extra: &[&str]) -> Vec<String> {
    let mut args = vec!["master", game, &master.to_string(), "--format", "json"]
        .into_iter()
        .map(String::from)
        .collect::<Vec<_>>();
    args.extend(extra.iter().map(|s| s.to_string()));
    let out = Command::new(bin()).args(&args).output().unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    let mut list: Vec<String> = v["servers"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s["address"].as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    list.sort();
    list
}

#[test]
fn real_servers_register_flatline_and_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("master-state.json");
    let socket = master_socket();
    let mut master = MasterServer::start(&socket, &state, true, &[]);
    let m = master.addr;
    let Some(oa) = OpenArena::start(OpenArenaConfig {
        hostname: "Registered OA".into(),
        bots: vec!["sarge".into()],
        master: Some(m),
        ..OpenArenaConfig::default()
    }) else {
        return;
    };
    let Some(nex) = Nexuiz::start("^1Nex ^7Registered", "downer", 8, 0, Some(m)) else {
        return;
    };
    let oa_addr = oa.addr.to_string();
    let nex_addr = nex.addr.to_string();

    wait::until_true("OpenArena listed", SETTLE, || {
        listed("openarena", m, &[]) == vec![oa_addr.clone()]
    });
    // Registrations are logged at info by default.
    master.running.wait_stderr("the registration logged", |l| {
        l.contains("registered") && l.contains(&oa_addr)
    });
    wait::until_true("Nexuiz listed", SETTLE, || {
        listed("oob:3", m, &["--ext", "--gamename", "Nexuiz"]) == vec![nex_addr.clone()]
    });
    // The anonymous Q3 dialect and the Ext one both list OpenArena; other games do not see it.
    assert_eq!(listed("openarena", m, &["--ext"]), vec![oa_addr.clone()]);
    assert!(listed("q3", m, &[]).is_empty());
    // qstat, a real client, lists it too.
    if let Some(q) = qstat_json(&["-q3m,71", &m.to_string()]) {
        let servers: Vec<&str> = q
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["protocol"] != "q3m")
            .filter_map(|s| s["address"].as_str())
            .collect();
        assert_eq!(servers, vec![oa_addr.as_str()], "{q}");
    }
    // Metrics count both (they are refreshed once a second: wait for them).
    let metrics = master.metrics.clone().expect("metrics address");
    let mut text = String::new();
    wait::until_true("both servers in the metrics", SETTLE, || {
        text = http_get(&metrics).1;
        text.contains("fragstat_master_servers{game=\"Quake3Arena\"} 1")
            && text.contains("fragstat_master_servers{game=\"Nexuiz\"} 1")
    });

    // OpenArena shuts down (two last heartbeats, then silence): removed within seconds.
    drop(oa);
    wait::until_true("OpenArena removed after shutdown", SETTLE, || {
        listed("openarena", m, &[]).is_empty()
    });
    master.running.wait_stderr("the removal logged", |l| {
        l.contains("removed") && l.contains(&oa_addr)
    });

    // Restart the master with its state, on the same socket: Nexuiz is listed at once, and
    // still after it answered the restarted master's challenge.
    master.stop();
    let saved: Value = serde_json::from_slice(&std::fs::read(&state).unwrap()).unwrap();
    assert_eq!(saved["servers"].as_array().unwrap().len(), 1, "{saved}");
    let master = MasterServer::start(&socket, &state, true, &[]);
    assert_eq!(
        listed("oob:3", master.addr, &["--ext", "--gamename", "Nexuiz"]),
        vec![nex_addr.clone()],
        "served at once from the state file"
    );
    wait::until_true("the restored server re-verified", SETTLE, || {
        master
            .metric("fragstat_master_verifications_total")
            .is_some_and(|n| n >= 1.0)
    });
    assert_eq!(
        listed("oob:3", master.addr, &["--ext", "--gamename", "Nexuiz"]),
        vec![nex_addr],
        "still listed after re-verification"
    );
}

#[test]
fn bad_options_are_usage_errors() {
    for (args, needle) in [
        (&["master-server", "--listen", "nowhere"][..], "--listen"),
        (&["master-server", "--metrics", "x"], "--metrics"),
        (&["master-server", "--max-servers", "0"], "max-servers"),
        (&["master-server", "--expiry-s", "0"], "expiry-s"),
        (&["master-server", "--ddnet-listen", "x"], "--ddnet-listen"),
        (
            &[
                "master-server",
                "--ddnet-listen",
                "127.0.0.1:0",
                "--tls-cert",
                "c.pem",
            ],
            "--tls-key",
        ),
        (
            &[
                "master-server",
                "--ddnet-listen",
                "127.0.0.1:0",
                "--tls-cert",
                "/nonexistent/c.pem",
                "--tls-key",
                "/nonexistent/k.pem",
            ],
            "/nonexistent/c.pem",
        ),
    ] {
        let out = Command::new(bin()).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(needle),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // Values that would panic or never list later are refused at start (C5a).
    for args in [
        &["--request-burst", "1e20", "--request-rate", "0.001"][..],
        &["--heartbeat-rate", "0"],
        &["--request-rate", "NaN"],
        &["--challenge-rate", "1e300"],
        &["--uplink-mib", "0.05"],
        &["--uplink-mib", "NaN"],
        &["--uplink-mib", "1e30"],
        &["--list-builds", "0"],
        &["--max-reply-kib", "1"],
        &["--send-budget-kib", "8"],
        &["--global-rate-kib", "1024"],
        &["--trusted-proxy", "127.0.0.1"],
        &[
            "--ddnet-listen",
            "127.0.0.1:0",
            "--connecting-ip-header",
            "X-Real-IP",
            "--trusted-proxy",
            "not-a-network",
        ],
    ] {
        let out = Command::new(bin())
            .args(["master-server", "--listen", "127.0.0.1:0"])
            .args(args)
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // A state file whose directory does not exist: exit 2 at start, naming the path.
    let out = Command::new(bin())
        .args([
            "master-server",
            "--listen",
            "127.0.0.1:0",
            "--state",
            "/nonexistent-fragstat-dir/master/state.json",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("/nonexistent-fragstat-dir/master"), "{err}");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("ready"));
}

/// F2/F3: a corrupt state file, or one of a newer version, is moved aside with a warning; the
/// master starts empty and saves a good file over it. The log (a file here) has no ANSI
/// escapes.
#[test]
fn an_unusable_state_file_is_moved_aside_and_the_master_starts_empty() {
    for (content, reason) in [
        ("{", "not a master state file"),
        (r#"{"version":2,"servers":[]}"#, "version 2"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state.json");
        std::fs::write(&state, content).unwrap();
        let socket = master_socket();
        let mut master = MasterServer::start(&socket, &state, false, &[]);
        assert!(listed("q3", master.addr, &[]).is_empty());
        let line = master
            .running
            .wait_stderr("the moved-aside warning", |l| l.contains("moved aside"));
        assert!(line.contains(reason), "{line}");
        let aside: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with("state.json.bad-")
            })
            .collect();
        assert_eq!(aside.len(), 1, "{content}");
        assert_eq!(std::fs::read_to_string(aside[0].path()).unwrap(), content);
        master.stop();
        let saved: Value = serde_json::from_slice(&std::fs::read(&state).unwrap()).unwrap();
        assert_eq!(saved["version"], 1, "{saved}");
        assert!(
            !master.running.process.log().contains('\x1b'),
            "ANSI escapes in a log file"
        );
    }
}

/// What `fragstat master ddnet URL --format json` lists, trusting `bundle` (reqwest's native
/// roots read SSL_CERT_FILE).
fn ddnet_listed(url: &str, bundle: &Path) -> Value {
    let out = Command::new(bin())
        .args(["master", "ddnet", url, "--format", "json"])
        .env("SSL_CERT_FILE", bundle)
        .output()
        .unwrap();
    serde_json::from_slice(&out.stdout).unwrap_or(Value::Null)
}

/// A real DDNet 16 server registers with our HTTP master over HTTPS (its libcurl trusts only
/// the system CA bundle, so it runs in a private mount namespace where that file holds our
/// test CA), answers the UDP challenge, and `fragstat master ddnet` lists it with its info.
#[test]
fn a_real_ddnet_server_registers_with_our_https_master() {
    if !is_root() {
        assert!(
            !in_ci(),
            "this test needs root (unshare -m and a bind mount for the CA bundle)"
        );
        eprintln!("SKIPPED: needs root for unshare -m");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (chain, key, ca) = test_ca();
    let (cert_path, key_path, bundle) = (
        dir.path().join("cert.pem"),
        dir.path().join("key.pem"),
        dir.path().join("ca.pem"),
    );
    std::fs::write(&cert_path, chain).unwrap();
    std::fs::write(&key_path, key).unwrap();
    std::fs::write(&bundle, ca).unwrap();
    let extra = [
        "--ddnet-listen",
        "127.0.0.1:0",
        "--tls-cert",
        cert_path.to_str().unwrap(),
        "--tls-key",
        key_path.to_str().unwrap(),
    ]
    .map(String::from);
    let state = dir.path().join("state.json");
    let socket = master_socket();
    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
    let master = MasterServer::start(&socket, &state, false, &extra);
    let base = master.ddnet.clone().expect("ddnet URL line");
    assert!(base.starts_with("https://127.0.0.1:"), "{base}");
    let list_url = format!("{base}servers.json");

    // Nothing registered yet: an empty, valid list.
    let v = ddnet_listed(&list_url, &bundle);
    assert_eq!(v["masters"][0]["status"], "online", "{v}");
    assert_eq!(v["servers"], json!([]), "{v}");

    let Some(server) =
        fragstat_testkit::games::Ddnet::start(fragstat_testkit::games::DdnetConfig {
            name: "Registered DDNet ^1no colours".into(),
            map: "Tutorial".into(),
            max_clients: 12,
            register: Some(fragstat_testkit::games::Register {
                url: format!("{base}register"),
                ca_bundle: bundle.clone(),
            }),
            ..Default::default()
        })
    else {
        return;
    };
    let addr = server.addr.to_string();
    // DDNet registers its 0.6 and 0.7 (sixup) addresses as two independent registrations,
    // each with its own challenge round trip, so one can be listed seconds before the other:
    // wait for both (a lost challenge is retried by the server on its next register).
    let mut listed = Value::Null;
    let both = [
        format!("tw-0.6+udp://{addr}"),
        format!("tw-0.7+udp://{addr}"),
    ];
    wait::until_true("the DDNet server listed for 0.6 and 0.7", SETTLE, || {
        listed = ddnet_listed(&list_url, &bundle);
        listed["servers"].as_array().is_some_and(|s| {
            s.iter().any(|s| {
                s["address"] == addr.as_str()
                    && both.iter().all(|a| {
                        s["addresses"]
                            .as_array()
                            .is_some_and(|l| l.contains(&json!(a)))
                    })
            })
        })
    });
    let servers = listed["servers"].as_array().unwrap();
    assert_eq!(servers.len(), 1, "{listed}");
    let s = &servers[0];
    // Registered for the 0.6 and 0.7 (sixup) protocols, with the address our master saw.
    let addresses: Vec<&str> = s["addresses"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    // Both need their challenge answered: 0.6's connless header, 0.7's with Connless-Token.
    assert_eq!(addresses, both, "{listed}");
    let info = &s["info"];
    assert_eq!(info["name"], "Registered DDNet ^1no colours", "{info}");
    assert_eq!(info["map"], "Tutorial", "{info}");
    assert_eq!(info["max_players"], 12, "{info}");
    assert_eq!(info["num_players"], 0, "{info}");
    assert_eq!(info["password"], false, "{info}");
    let version = info["version"].as_str().unwrap_or_default();
    assert!(version.contains("16."), "{info}");
    // The listed info matches what the server itself answers over UDP.
    let out = Command::new(bin())
        .args(["query", "ddnet", &addr, "--format", "json"])
        .output()
        .unwrap();
    let direct: Value = serde_json::from_slice(&out.stdout).unwrap();
    let direct = if direct.is_array() {
        direct[0].clone()
    } else {
        direct
    };
    for field in ["name", "map", "max_players", "num_players", "version"] {
        assert_eq!(info[field], direct[field], "{field}: {info} vs {direct}");
    }
    // A server shutting down deletes its registration (`Action: delete`): gone long before
    // the 30 s expiry. DDNet gives its delete requests one second in all at shutdown
    // (register.cpp `SendDeleteIfRegistered`, `CTimeout{1000, 1000, 0, 0}`); on a machine
    // loaded enough that they miss it, its log says so and the registration can only expire.
    let mut server = server;
    server.process.stop(SETTLE);
    let log = server.process.log();
    let after_delete = log
        .split_once("deleting...")
        .map_or("", |(_, rest)| rest)
        .to_string();
    drop(server);
    assert!(log.contains("deleting..."), "DDNet sent no delete:\n{log}");
    let delete_failed = after_delete.lines().any(|l| l.contains("/register failed"));
    if delete_failed {
        eprintln!("DDNet's delete missed its 1 s budget (log below): waiting for the expiry\n{after_delete}");
        wait::until_true("the DDNet server expired", SETTLE, || {
            ddnet_listed(&list_url, &bundle)["servers"] == json!([])
        });
    } else {
        // 25 s: generous for the delete, and still under the 30 s expiry that would also
        // remove it.
        wait::until_true(
            "the DDNet server removed after its delete",
            Duration::from_secs(25),
            || ddnet_listed(&list_url, &bundle)["servers"] == json!([]),
        );
    }
}

/// 600 emulated servers register: their list is four datagrams (196 + 196 + 196 + 12
/// entries), sent to each client in one GSO `sendmsg` and split by the kernel. `fragstat
/// master` gets every server; qstat gets all but the last entry of each of the three
/// non-final datagrams (its `decode_q3master_packet` reads an entry only while 7 bytes are
/// left, so an entry that ends a datagram without `\EOT` is skipped — dpmaster 2 sends the
/// same layout).
#[test]
fn a_long_list_arrives_whole_in_fragstat_and_qstat() {
    let dir = tempfile::tempdir().unwrap();
    // Every server is on 127.0.0.1 and heartbeats at once: lift the per-address bounds and
    // rate limits the defaults set.
    let socket = master_socket();
    let master = MasterServer::start(
        &socket,
        &dir.path().join("state.json"),
        false,
        &["--max-per-address", "1000", "--no-limits"],
    );
    let m = master.addr.to_string();
    let served = fragstat_testkit::spawn_serve(
        bin(),
        &[
            "q3",
            "--listen",
            "127.0.0.1:0",
            "--count",
            "600",
            "--heartbeat",
            &m,
        ],
    );
    let mut want: Vec<String> = served.servers.iter().map(|a| a.to_string()).collect();
    want.sort();
    assert_eq!(want.len(), 600);
    // 600 ports of one address: over the 256 a master list may name by default.
    let lift_cap = ["--max-per-ip", "1000"];
    wait::until_true("600 servers listed", SETTLE, || {
        listed("q3", master.addr, &lift_cap) == want
    });
    assert_eq!(
        listed("q3", master.addr, &["--ext", "--max-per-ip", "1000"]),
        want
    );
    assert_eq!(listed("q3", master.addr, &[]).len(), 256, "the default cap");
    if let Some(q) = qstat_json(&["-q3m,68", &m, "-maxsim", "200"]) {
        let mut servers: Vec<String> = q
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["protocol"] != "q3m")
            .filter_map(|s| s["address"].as_str().map(String::from))
            .collect();
        servers.sort();
        assert!(servers.iter().all(|s| want.contains(s)), "{servers:?}");
        assert_eq!(servers.len(), 600 - 3, "qstat's list");
    }
}

/// Sends `request` (a whole HTTP/1.1 request that asks to close) from a TCP socket bound to
/// `from`, and returns the answer.
async fn http_from(from: std::net::IpAddr, to: SocketAddr, request: String) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let s = tokio::net::TcpSocket::new_v4().unwrap();
    s.bind(SocketAddr::new(from, 0)).unwrap();
    let mut c = s.connect(to).await.unwrap();
    c.write_all(request.as_bytes()).await.unwrap();
    let mut out = String::new();
    let _ = tokio::time::timeout(SETTLE, c.read_to_string(&mut out)).await;
    out
}

/// A DDNet register request (no token yet) for a server on `port`, with `extra` headers.
fn register_request(port: u16, extra: &str) -> String {
    format!(
        "POST /ddnet/15/register HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAddress: tw-0.6+udp://connecting-address.invalid:{port}\r\nSecret: s-{port}\r\nChallenge-Secret: c:ipv4\r\nInfo-Serial: 1\r\nContent-Length: 0\r\n{extra}\r\n"
    )
}

/// T2: behind a TLS-terminating proxy (`--connecting-ip-header X-Real-IP --trusted-proxy
/// 127.0.0.1`), the challenge goes to the address the trusted proxy names; the same header
/// from any other peer is ignored.
#[test]
fn behind_a_trusted_proxy_the_challenge_goes_to_the_client_it_names() {
    let dir = tempfile::tempdir().unwrap();
    let socket = master_socket();
    let master = MasterServer::start(
        &socket,
        &dir.path().join("state.json"),
        false,
        &[
            "--ddnet-listen",
            "127.0.0.1:0",
            "--connecting-ip-header",
            "X-Real-IP",
            "--trusted-proxy",
            "127.0.0.1/32",
        ],
    );
    let base = master.ddnet.clone().expect("ddnet URL");
    let http: SocketAddr = base
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let named = UdpSocket::bind("127.0.0.5:0").unwrap();
    named.set_read_timeout(Some(SETTLE)).unwrap();
    let other = UdpSocket::bind("127.0.0.6:0").unwrap();
    other.set_read_timeout(Some(SETTLE)).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut buf = [0u8; 512];
    // From the proxy: the challenge goes to the client it names.
    let port = named.local_addr().unwrap().port();
    let answer = rt.block_on(http_from(
        "127.0.0.1".parse().unwrap(),
        http,
        register_request(port, "X-Real-IP: 127.0.0.5\r\n"),
    ));
    assert!(answer.contains("need_challenge"), "{answer}");
    let (n, from) = named.recv_from(&mut buf).expect("the challenge");
    assert!(buf[..n].windows(4).any(|w| w == b"chal"));
    assert_eq!(from.ip(), master_http_udp_ip());
    // From anyone else: the header is ignored, the challenge goes to the peer.
    let port = other.local_addr().unwrap().port();
    let answer = rt.block_on(http_from(
        "127.0.0.6".parse().unwrap(),
        http,
        register_request(port, "X-Real-IP: 127.0.0.5\r\n"),
    ));
    assert!(answer.contains("need_challenge"), "{answer}");
    let (n, _) = other
        .recv_from(&mut buf)
        .expect("the challenge at the peer");
    assert!(buf[..n].windows(4).any(|w| w == b"chal"));
}

/// The source address of the DDNet master's challenges on loopback.
fn master_http_udp_ip() -> std::net::IpAddr {
    "127.0.0.1".parse().unwrap()
}

/// R4: hundreds of idle connections and slow register bodies against the DDNet HTTPS master
/// (and idle ones against the metrics) while a real DDNet 16.4 server registers: DDNet is
/// listed, the floods' connections are closed by the timeouts and held to the per-IP cap (its
/// idle ones displaced by its own newcomers), and
/// the UDP master keeps answering.
#[test]
fn the_https_master_holds_idle_and_slow_body_floods_while_ddnet_registers() {
    use std::sync::atomic::Ordering::Relaxed;
    if !is_root() {
        assert!(
            !in_ci(),
            "this test needs root (unshare -m for DDNet's CA bundle)"
        );
        eprintln!("SKIPPED: needs root for unshare -m");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (chain, key, ca) = test_ca();
    let (cert_path, key_path, bundle) = (
        dir.path().join("cert.pem"),
        dir.path().join("key.pem"),
        dir.path().join("ca.pem"),
    );
    std::fs::write(&cert_path, chain).unwrap();
    std::fs::write(&key_path, key).unwrap();
    std::fs::write(&bundle, &ca).unwrap();
    let socket = master_socket();
    let master = MasterServer::start(
        &socket,
        &dir.path().join("state.json"),
        true,
        &[
            "--ddnet-listen",
            "127.0.0.1:0",
            "--tls-cert",
            cert_path.to_str().unwrap(),
            "--tls-key",
            key_path.to_str().unwrap(),
            "--http-max-per-ip",
            "8",
        ],
    );
    let base = master.ddnet.clone().expect("ddnet URL");
    let https: SocketAddr = base
        .trim_start_matches("https://")
        .split('/')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let metrics_url = master.metrics.clone().expect("metrics");
    let metrics: SocketAddr = metrics_url
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap()
        .parse()
        .unwrap();

    // The floods: 30 hosts × 10 idle connections (2 over the per-IP cap each) and 10 hosts ×
    // 6 slow bodies against the DDNet master; 5 hosts × 10 idle ones against the metrics.
    let idle = std::sync::Arc::new(Flood::default());
    let slow = std::sync::Arc::new(Flood::default());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let connector = tls_connector(&ca);
    for h in 0..30u8 {
        for _ in 0..10 {
            let ip = std::net::IpAddr::from([127, 0, 1, h + 1]);
            rt.spawn(hold(std::sync::Arc::clone(&idle), ip, https, None));
        }
    }
    for h in 0..10u8 {
        for _ in 0..6 {
            let ip = std::net::IpAddr::from([127, 0, 2, h + 1]);
            rt.spawn(hold(
                std::sync::Arc::clone(&slow),
                ip,
                https,
                Some(connector.clone()),
            ));
        }
    }
    for h in 0..5u8 {
        for _ in 0..10 {
            let ip = std::net::IpAddr::from([127, 0, 3, h + 1]);
            rt.spawn(hold(std::sync::Arc::clone(&idle), ip, metrics, None));
        }
    }
    wait::until_true("the floods connected", SETTLE, || {
        idle.opened.load(Relaxed) >= 300 && slow.opened.load(Relaxed) >= 60
    });

    let Some(server) =
        fragstat_testkit::games::Ddnet::start(fragstat_testkit::games::DdnetConfig {
            name: "Registered under a flood".into(),
            map: "Tutorial".into(),
            max_clients: 8,
            register: Some(fragstat_testkit::games::Register {
                url: format!("{base}register"),
                ca_bundle: bundle.clone(),
            }),
            ..Default::default()
        })
    else {
        idle.stop.store(true, Relaxed);
        slow.stop.store(true, Relaxed);
        return;
    };
    let addr = server.addr.to_string();
    let both = [
        format!("tw-0.6+udp://{addr}"),
        format!("tw-0.7+udp://{addr}"),
    ];
    let list_url = format!("{base}servers.json");
    wait::until_true("the DDNet server listed under the floods", SETTLE, || {
        let listed = ddnet_listed(&list_url, &bundle);
        listed["servers"].as_array().is_some_and(|s| {
            s.iter().any(|s| {
                both.iter().all(|a| {
                    s["addresses"]
                        .as_array()
                        .is_some_and(|l| l.contains(&json!(a)))
                })
            })
        })
    });
    // The floods' connections were closed by the server (TLS-accept, header and request
    // timeouts; the per-IP cap), and the metrics still answer from a host that is not
    // flooding, as does the UDP master.
    wait::until_true("flood connections closed by the server", SETTLE, || {
        idle.closed_by_server.load(Relaxed) >= 60 && slow.closed_by_server.load(Relaxed) >= 10
    });
    let mut text = String::new();
    wait::until_true(
        "per-IP refusals and timeouts in the metrics",
        SETTLE,
        || {
            text = http_get(&metrics_url).1;
            let value = |name: &str| {
                text.lines()
                    .find_map(|l| l.strip_prefix(name)?.trim().parse::<f64>().ok())
                    .unwrap_or(0.0)
            };
            // Over the per-IP cap, an idle connection of the host makes room (or, all busy,
            // the newcomer is refused).
            let capped = |p: &str| {
                value(&format!("{p}_refused_per_ip_total"))
                    + value(&format!("{p}_evicted_idle_total"))
            };
            capped("fragstat_ddnet_http") > 0.0
                // Idle connections that never start TLS: cut by the handshake timeout, or
                // (10 per host over a cap of 8) displaced by their own host's newcomers first.
                && value("fragstat_ddnet_http_tls_failed_total")
                    + value("fragstat_ddnet_http_evicted_idle_total")
                    > 0.0
                && value("fragstat_ddnet_http_request_timeouts_total") > 0.0
                && capped("fragstat_metrics_http") > 0.0
        },
    );
    assert!(
        listed("q3", master.addr, &[]).is_empty(),
        "the UDP master answers"
    );
    idle.stop.store(true, Relaxed);
    slow.stop.store(true, Relaxed);
    drop(server);
    rt.shutdown_background();
}

/// C6: on a path whose MTU is under the 1,428 bytes of a full list datagram (here the
/// loopback of a network namespace of the test's own, MTU 1,280), a 600-server list still
/// arrives whole: the master lets the kernel fragment it.
#[test]
fn a_list_arrives_whole_over_a_path_mtu_of_1280() {
    // Everything runs in a network namespace of the test's own: the MTU it lowers is that
    // namespace's loopback, never the machine's.
    match private_netns("a_list_arrives_whole_over_a_path_mtu_of_1280") {
        Netns::Inside => {}
        Netns::Ran(_) | Netns::Skipped => return,
    }
    let mtu = Command::new("ip")
        .args(["link", "set", "lo", "mtu", "1280"])
        .status()
        .expect("ip link");
    assert!(mtu.success(), "ip link set lo mtu 1280");
    let inside = |args: &[&str]| {
        let mut c = Command::new(args[0]);
        c.args(&args[1..]);
        c
    };
    let bin_s = bin().to_str().unwrap();
    let mut master = Running::start_cmd(inside(&[
        bin_s,
        "master-server",
        "--listen",
        "127.0.0.1:0",
        "--allow-loopback",
        "--no-limits",
        "--max-per-address",
        "1000",
    ]));
    let m = master.master_ready().to_string();
    let mut farm = Running::start_cmd(inside(&[
        bin_s,
        "serve",
        "q3",
        "--listen",
        "127.0.0.1:0",
        "--count",
        "600",
        "--heartbeat",
        &m,
        // 600 heartbeats at once can overflow a receive buffer the system keeps small
        // (`net.core.rmem_max`); a server whose heartbeat was dropped registers on its next.
        "--heartbeat-every-s",
        "2",
    ]));
    farm.wait_line("the farm ready", |l| l == "ready");
    let count = || {
        let out = inside(&[
            bin_s,
            "master",
            "q3",
            &m,
            "--format",
            "json",
            "--max-per-ip",
            "1000",
        ])
        .output()
        .unwrap();
        let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        let n = v["servers"].as_array().map_or(0, Vec::len);
        if n == 0 {
            eprintln!(
                "`fragstat master` ({}): {}{}",
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        n
    };
    let mut last = usize::MAX;
    wait::until_true("600 servers listed across MTU 1280", SETTLE, || {
        let n = count();
        if n != last {
            eprintln!("{n} servers listed");
            last = n;
        }
        n == 600
    });
    master.kill();
    farm.kill();
}
