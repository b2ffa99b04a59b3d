//! `fragstat master unvanquished` against `fragstat serve unvanquished --master`: the Dæmon
//! `dual` request, answered as the Unvanquished master does (links packet, numbered packets,
//! no end marker), ends as soon as every packet has come.

use std::time::{Duration, Instant};

use fragstat_testkit::spawn_serve;

mod support;
use support::{bin, run, stderr_of};

#[test]
fn master_unvanquished_ends_when_every_numbered_packet_came() {
    let farm = spawn_serve(
        bin(),
        &[
            "unvanquished",
            "--listen",
            "127.0.0.1:0",
            "--count",
            "3",
            "--master",
            "--master-listen",
            "127.0.0.1:0",
        ],
    );
    let master = farm.master.expect("a master line").to_string();
    let started = Instant::now();
    let out = run(&[
        "master",
        "unvanquished",
        &master,
        "--master-timeout-ms",
        "8000",
        "--format",
        "json",
    ]);
    let took = started.elapsed();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["servers"].as_array().unwrap().len(), 3, "{v:#}");
    assert!(
        took < Duration::from_secs(5),
        "no end marker, yet done before the 8 s master timeout: {took:?}"
    );
}
