//! The README's library program (examples/quickstart.rs) run as a user runs it, against
//! emulated Quake III servers (one listed server silent), an emulated master and a local
//! DDNet `servers.json`.

mod support;

use std::path::PathBuf;
use std::process::Command;

use fragstat_testkit::SilentUdp;

/// The example's binary, built by `cargo test` beside the tests (built here when a single
/// test target was asked for).
fn example() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().and_then(|d| d.parent()).unwrap().to_path_buf();
    let bin = dir.join("examples/quickstart");
    if !bin.is_file() {
        let status = Command::new(env!("CARGO"))
            .args(["build", "-p", "fragstat", "--example", "quickstart"])
            .status()
            .unwrap();
        assert!(status.success(), "building the example");
    }
    bin
}

#[tokio::test(flavor = "multi_thread")]
async fn the_quickstart_program_prints_the_right_counts() {
    let q3 = fragstat::game("q3").unwrap();
    let silent = SilentUdp::v4();
    let farm = support::farm(&q3, 3, 4, &[silent.addr]);
    let ddnet_servers: Vec<_> = (0..2).map(|_| SilentUdp::v4()).collect();
    let addrs: Vec<_> = ddnet_servers.iter().map(|s| s.addr).collect();
    let http = support::Http::serve("/ddnet/15/servers.json", support::servers_json(&addrs)).await;
    let out = tokio::task::spawn_blocking({
        let server = farm.servers[0].to_string();
        let master = farm.master.unwrap().to_string();
        let url = http.url("/ddnet/15/servers.json");
        move || {
            Command::new(example())
                .args([&server, &master, &url])
                .output()
                .unwrap()
        }
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(
        lines[0].starts_with("server emu 0 players 4 rtt Some("),
        "{stdout}"
    );
    assert_eq!(lines[1], "listed 4", "{stdout}");
    assert_eq!(lines[2], "answered 3 timeouts 1", "{stdout}");
    assert_eq!(lines[3], "ddnet listed 2", "{stdout}");
}
