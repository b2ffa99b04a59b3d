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

/// `serve unvanquished --master --featured Official`: a `dual` request gets the links packet
/// first, then packet 1 of 2 (the ordinary servers) and packet 2 of 2 (the featured one,
/// under its label), each ending in one `\`.
#[test]
fn the_emulated_master_sends_a_featured_group_in_its_own_packet() {
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
            "--featured",
            "Official",
        ],
    );
    let master = farm.master.expect("a master line");
    let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    socket
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    socket
        .send_to(
            b"\xff\xff\xff\xffgetserversExt UNVANQUISHED 86 dual empty full",
            master,
        )
        .unwrap();
    let mut packets = Vec::new();
    let mut buf = [0u8; 65536];
    while packets.len() < 3 {
        let (n, _) = socket
            .recv_from(&mut buf)
            .expect("the answer's 3 datagrams");
        packets.push(buf[..n].to_vec());
    }
    assert!(packets[0].starts_with(b"\xff\xff\xff\xffgetserversExtResponseLinks\0"));
    let list_head = b"\xff\xff\xff\xffgetserversExtResponse\x00";
    let ordinary = [&list_head[..], b"1\x002\x00\\"].concat();
    let featured = [&list_head[..], b"2\x002\x00Official\\"].concat();
    assert!(packets[1].starts_with(&ordinary), "{:?}", packets[1]);
    assert!(packets[2].starts_with(&featured), "{:?}", packets[2]);
    // Two ordinary servers (7 bytes each), one featured, each packet closed by a `\`.
    assert_eq!(packets[1].len(), ordinary.len() - 1 + 2 * 7 + 1);
    assert_eq!(packets[2].len(), featured.len() - 1 + 7 + 1);
    assert!(packets[1..].iter().all(|p| p.ends_with(b"\\")));
}
