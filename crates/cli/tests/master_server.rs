//! `fragstat master-server` with real game servers registering: OpenArena (ioquake3,
//! `QuakeArena-1` heartbeats) and Nexuiz (DarkPlaces, `DarkPlaces` heartbeats), listed by
//! `fragstat master` and by qstat, removed when they shut down, kept across a restart with
//! `--state`. Under CI these fail, never skip, when a package is missing.

use std::net::{SocketAddr, UdpSocket};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use fragstat_testkit::games::Nexuiz;
use fragstat_testkit::wait::{self, SETTLE};
use fragstat_testkit::{in_ci, qstat_json, OpenArena, OpenArenaConfig};
use serde_json::{json, Value};

mod support;
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
                ddnet = Some(d.to_string());
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
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("state.json");
    std::fs::write(&bad, "not json").unwrap();
    let out = Command::new(bin())
        .args(["master-server", "--state", bad.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// A test CA and a certificate for 127.0.0.1 it signed: (chain PEM, key PEM, CA PEM).
fn test_ca() -> (String, String, String) {
    use rcgen::{
        BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer,
        KeyPair, KeyUsagePurpose,
    };
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(DnType::CommonName, "fragstat test CA");
    ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca_key = KeyPair::generate().unwrap();
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca, ca_key);

    let mut leaf = CertificateParams::new(vec!["127.0.0.1".to_string()]).unwrap();
    leaf.distinguished_name
        .push(DnType::CommonName, "127.0.0.1");
    leaf.use_authority_key_identifier_extension = true;
    leaf.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    leaf.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let leaf_key = KeyPair::generate().unwrap();
    let leaf_cert = leaf.signed_by(&leaf_key, &issuer).unwrap();
    (
        format!("{}{}", leaf_cert.pem(), ca_cert.pem()),
        leaf_key.serialize_pem(),
        ca_cert.pem(),
    )
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
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
