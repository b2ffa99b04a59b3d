//! Measures master CPU per list request (not a test of behaviour; run with --ignored).
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use fragstat_core::service::{Outbox, Service};
use fragstat_master_server::{Config, Listed, Master, Snapshot, SNAPSHOT_VERSION};

fn run(rotate: bool) -> (f64, u64) {
    let mut m = Master::with_seed(
        Config {
            allow_loopback: true,
            max_per_address: 100_000,
            ..Config::default()
        },
        7,
    );
    let servers = (0..16_384u32)
        .map(|i| Listed {
            addr: format!("[2001:db8:{:x}::{:x}]:27960", i / 32, i % 32 + 1)
                .parse()
                .unwrap(),
            game: "Quake3Arena".into(),
            protocol: 68,
            clients: 1,
            max_clients: 8,
            gametype: (i % 1024).to_string(),
        })
        .collect();
    let now = Instant::now();
    m.restore(
        Snapshot {
            version: SNAPSHOT_VERSION,
            servers,
        },
        now,
    );
    let reqs: Vec<(SocketAddr, Vec<u8>)> = (0..16_000u32)
        .map(|i| {
            let from: SocketAddr = format!("[2001:db8:ffff:{:x}::1]:27960", i).parse().unwrap();
            let g = if rotate { i % 1024 } else { 0 };
            (
                from,
                format!(
                    "\u{ff}\u{ff}\u{ff}\u{ff}getserversExt Quake3Arena 68 empty full gametype={g}"
                )
                .chars()
                .map(|c| c as u8)
                .collect(),
            )
        })
        .collect();
    let start = Instant::now();
    for (i, (from, req)) in reqs.iter().enumerate() {
        let t = now + Duration::from_micros(62 * i as u64 + 1_000_000);
        let mut out = Outbox::new();
        m.handle(t, *from, req, &mut out);
    }
    let per = start.elapsed().as_secs_f64() * 1e6 / 16_000.0;
    (per, m.stats().lists_built)
}

#[test]
#[ignore]
fn cpu_per_list_request() {
    for rotate in [false, true] {
        let (per, built) = run(rotate);
        eprintln!("rotate={rotate}: {per:.1} µs per request, {built} lists built");
    }
}
