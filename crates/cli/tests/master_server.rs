//! `fragstat master-server` with real game servers registering: OpenArena (ioquake3,
//! `QuakeArena-1` heartbeats) and Nexuiz (DarkPlaces, `DarkPlaces` heartbeats), listed by
//! `fragstat master` and by qstat, removed when they shut down, kept across a restart with
//! `--state`. Under CI these fail, never skip, when a package is missing.

use std::io::BufRead;
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fragstat_testkit::games::Nexuiz;
use fragstat_testkit::{free_udp_port, in_ci, qstat_json, OpenArena, OpenArenaConfig};
use serde_json::{json, Value};

fn bin() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_fragstat"))
}

/// A running `fragstat master-server`, stopped (SIGTERM, so it saves its state) on drop.
struct MasterServer {
    child: Child,
    addr: SocketAddr,
    metrics: Option<String>,
    /// The DDNet HTTP master's base URL (`https://ADDR/ddnet/15/`), with `--ddnet-listen`.
    ddnet: Option<String>,
}

impl MasterServer {
    fn start(port: u16, state: &Path, metrics: bool) -> MasterServer {
        Self::start_with(port, state, metrics, &[])
    }

    fn start_with(port: u16, state: &Path, metrics: bool, extra: &[String]) -> MasterServer {
        let mut args = vec![
            "master-server".to_string(),
            "--listen".into(),
            format!("127.0.0.1:{port}"),
            "--allow-loopback".into(),
            "--state".into(),
            state.display().to_string(),
        ];
        if metrics {
            args.extend(["--metrics".into(), "127.0.0.1:0".into()]);
        }
        args.extend(extra.iter().cloned());
        let mut child = Command::new(bin())
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn master-server");
        let stdout = child.stdout.take().unwrap();
        let mut addr = None;
        let mut metrics = None;
        let mut ddnet = None;
        for line in std::io::BufReader::new(stdout).lines() {
            let line = line.unwrap();
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
        MasterServer {
            child,
            addr: addr.expect("master address"),
            metrics,
            ddnet,
        }
    }

    fn stop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
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

impl Drop for MasterServer {
    fn drop(&mut self) {
        self.stop();
    }
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

fn wait_until(what: &str, secs: u64, mut ok: impl FnMut() -> bool) {
    let start = Instant::now();
    while !ok() {
        assert!(
            start.elapsed() < Duration::from_secs(secs),
            "{what}: not within {secs} s"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn real_servers_register_flatline_and_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("master-state.json");
    let port = free_udp_port();
    let mut master = MasterServer::start(port, &state, true);
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

    wait_until("OpenArena listed", 20, || {
        listed("openarena", m, &[]) == vec![oa_addr.clone()]
    });
    wait_until("Nexuiz listed", 40, || {
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
    // Metrics count both.
    let metrics = master.metrics.clone().expect("metrics address");
    let text = reqwest_get(&metrics);
    assert!(
        text.contains("fragstat_master_servers{game=\"Quake3Arena\"} 1"),
        "{text}"
    );
    assert!(
        text.contains("fragstat_master_servers{game=\"Nexuiz\"} 1"),
        "{text}"
    );

    // OpenArena shuts down (two last heartbeats, then silence): removed within seconds.
    drop(oa);
    wait_until("OpenArena removed after shutdown", 15, || {
        listed("openarena", m, &[]).is_empty()
    });

    // Restart the master with its state: Nexuiz is listed at once, and again after
    // re-verification.
    master.stop();
    let saved: Value = serde_json::from_slice(&std::fs::read(&state).unwrap()).unwrap();
    assert_eq!(saved["servers"].as_array().unwrap().len(), 1, "{saved}");
    let master = MasterServer::start(port, &state, false);
    assert_eq!(
        listed("oob:3", master.addr, &["--ext", "--gamename", "Nexuiz"]),
        vec![nex_addr.clone()],
        "served at once from the state file"
    );
    std::thread::sleep(Duration::from_secs(8));
    assert_eq!(
        listed("oob:3", master.addr, &["--ext", "--gamename", "Nexuiz"]),
        vec![nex_addr],
        "still listed after re-verification"
    );
}

/// A plain HTTP GET (the metrics endpoint) without pulling an HTTP client into the tests.
fn reqwest_get(url: &str) -> String {
    use std::io::{Read, Write};
    let rest = url.strip_prefix("http://").unwrap();
    let (host, path) = rest.split_once('/').unwrap();
    // Metrics are refreshed once a second.
    std::thread::sleep(Duration::from_millis(1200));
    let mut s = std::net::TcpStream::connect(host).unwrap();
    write!(s, "GET /{path} HTTP/1.0\r\nHost: {host}\r\n\r\n").unwrap();
    let mut body = String::new();
    s.read_to_string(&mut body).unwrap();
    body
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
    let master = MasterServer::start_with(free_udp_port(), &state, false, &extra);
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
    wait_until("the DDNet server listed for 0.6 and 0.7", 60, || {
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
    // the 30 s expiry.
    drop(server);
    wait_until("the DDNet server removed after shutdown", 10, || {
        ddnet_listed(&list_url, &bundle)["servers"] == json!([])
    });
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
    let lift = ["--max-per-address", "1000", "--no-limits"].map(String::from);
    let master = MasterServer::start_with(
        free_udp_port(),
        &dir.path().join("state.json"),
        false,
        &lift,
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
    wait_until("600 servers listed", 30, || {
        listed("q3", master.addr, &[]) == want
    });
    assert_eq!(listed("q3", master.addr, &["--ext"]), want);
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
