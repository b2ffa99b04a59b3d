//! The Dæmon `dual` framing, byte for byte as the Unvanquished master writes it
//! (unv-master `master.py` @`792e5f65`; research notes §2, docs/protocols/quake3.md).

use super::*;
use crate::emulate::EmulatedMaster;
use crate::master::EotStyle;
use std::time::{Duration, Instant};

const V4: [u8; 6] = [192, 0, 2, 7, 0x6d, 0x38]; // 192.0.2.7:27960
const V6: [u8; 18] = [
    0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7, 0x6d, 0x39,
]; // [2001:db8::7]:27961

fn a(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

/// `master.py:452-458`: `'\xff\xff\xff\xffgetserversExtResponseLinks\0'` + for each link
/// `gsr_formataddr(v4)[1:] + gsr_formataddr(v6)[1:]` (4+2 then 16+2, no separators).
fn links_packet(extra: &[u8]) -> Vec<u8> {
    [
        &b"\xff\xff\xff\xffgetserversExtResponseLinks\0"[..],
        &V4,
        &V6,
        extra,
    ]
    .concat()
}

/// `master.py:469-475`: `'\0{0}\0{1}\0{2}'.format(index, numpackets, label)`, the entries
/// (`\` + 4 + 2 for IPv4, `/` + 16 + 2 for IPv6, `gsr_formataddr` :383-387), one `\`.
fn list_packet(index: u32, count: u32, label: &str, entries: &[&[u8]]) -> Vec<u8> {
    let mut p = b"\xff\xff\xff\xffgetserversExtResponse".to_vec();
    p.extend_from_slice(format!("\0{index}\0{count}\0{label}").as_bytes());
    for e in entries {
        p.extend_from_slice(e);
    }
    p.push(b'\\');
    p
}

fn v4_entry() -> Vec<u8> {
    [&b"\\"[..], &V4].concat()
}

fn v6_entry() -> Vec<u8> {
    [&b"/"[..], &V6].concat()
}

#[test]
fn links_packet_as_the_master_writes_it() {
    let bytes = links_packet(&[1, 2, 3, 4, 5]);
    crate::fuzzing::check_decode(&bytes);
    let Packet::ServerLinks(l) = decode(&bytes).unwrap() else {
        panic!()
    };
    assert_eq!(
        l.links,
        [Link {
            v4: "192.0.2.7:27960".parse().unwrap(),
            v6: "[2001:db8::7]:27961".parse().unwrap(),
        }]
    );
    // A partial pair is reported, not read (the Dæmon client's `buffend - 20` would).
    assert_eq!(l.trailing, [1, 2, 3, 4, 5]);
    // No links: the master still sends the header and its NUL.
    let Packet::ServerLinks(empty) =
        decode(b"\xff\xff\xff\xffgetserversExtResponseLinks\0").unwrap()
    else {
        panic!()
    };
    assert!(empty.links.is_empty());
    // Without the NUL at offset 30 the client drops it (`cl_serverlist.cpp:187-227`).
    let err = decode(b"\xff\xff\xff\xffgetserversExtResponseLinks\x01").unwrap_err();
    assert_eq!(err.offset(), 30);
}

#[test]
fn list_packets_carry_sequence_label_and_ipv6_entries() {
    // Research §2.3's two-packet example: the second packet is a featured group's.
    let first = list_packet(1, 2, "", &[&v4_entry(), &v6_entry()]);
    let second = list_packet(2, 2, "Official", &[&v4_entry()]);
    for p in [&first, &second] {
        crate::fuzzing::check_decode(p);
    }
    let Packet::ServersResponse(l) = decode(&first).unwrap() else {
        panic!()
    };
    assert_eq!(l.sequence, Some(Sequence::new(1, 2, b"")));
    assert_eq!(
        l.servers,
        [a("192.0.2.7:27960"), a("[2001:db8::7]:27961")],
        "`/` + 16 + 2 read once, as the master writes it"
    );
    assert_eq!((l.terminator, l.trailing.len()), (None, 0));
    let Packet::ServersResponse(l) = decode(&second).unwrap() else {
        panic!()
    };
    assert_eq!(l.sequence, Some(Sequence::new(2, 2, b"Official")));
    assert_eq!(l.servers, [a("192.0.2.7:27960")]);
}

#[test]
fn bad_sequence_numbers_are_refused_with_their_offset() {
    // `CL_GSRSequenceInformation` refuses `num <= 0 || ind <= 0 || ind > num` (`cl_serverlist.cpp:104-145`).
    for (index, count) in [(0, 2), (3, 2), (1, 0)] {
        let p = list_packet(index, count, "", &[]);
        let e = decode(&p).unwrap_err();
        assert_eq!(e.field(), Some("sequence"), "{index}/{count}");
    }
    let p = list_packet(1, MAX_LIST_PACKETS + 1, "", &[]);
    assert!(matches!(
        decode(&p).unwrap_err(),
        DecodeError::TooMany { offset: 28, .. }
    ));
    let e = decode(b"\xff\xff\xff\xffgetserversExtResponse\x001\x00x").unwrap_err();
    assert_eq!((e.field(), e.offset()), (Some("sequence count"), 28));
}

#[test]
fn a_linked_pair_is_one_entry_with_both_addresses() {
    let link = Link {
        v4: "192.0.2.7:27960".parse().unwrap(),
        v6: "[2001:db8::7]:27961".parse().unwrap(),
    };
    let listed = [
        a("[2001:db8::7]:27961"),
        a("198.51.100.1:27960"),
        a("192.0.2.7:27960"),
    ];
    let e = pair_entries(&listed, &[link]);
    assert_eq!(e.len(), 2);
    assert_eq!(e[0].addr, a("192.0.2.7:27960"));
    assert_eq!(e[0].addresses, ["192.0.2.7:27960", "[2001:db8::7]:27961"]);
    assert_eq!(
        (e[1].addr, e[1].addresses.len()),
        (a("198.51.100.1:27960"), 0)
    );
}

fn feed(ex: &mut DualMasterExchange, p: &[u8]) -> Option<Duration> {
    match ex.on_datagram(p) {
        Verdict::Progress { wait, .. } => wait,
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_list_is_complete_when_every_packet_came() {
    let mut ex = DualMasterExchange::new(&dual_request("UNVANQUISHED", 86)).unwrap();
    assert_eq!(
        ex.requests(0).unwrap(),
        [b"\xff\xff\xff\xffgetserversExt UNVANQUISHED 86 dual empty full\n".to_vec()]
    );
    // Out of order, one packet twice: complete only with 1 and 2 and the links.
    assert_eq!(
        feed(&mut ex, &list_packet(2, 2, "Official", &[&v4_entry()])),
        None
    );
    assert_eq!(
        feed(&mut ex, &list_packet(2, 2, "Official", &[&v4_entry()])),
        None
    );
    assert_eq!(
        feed(&mut ex, &list_packet(1, 2, "", &[&v6_entry()])),
        Some(SETTLE),
        "every packet came: linger only for the links"
    );
    assert_eq!(feed(&mut ex, &links_packet(&[])), Some(Duration::ZERO));
    let out = ex.on_timeout(false).unwrap().unwrap();
    assert_eq!(out.len(), 1, "{out:?}");
    assert_eq!(out[0].addresses, ["192.0.2.7:27960", "[2001:db8::7]:27961"]);
    // A packet announcing another count is not this answer's.
    let mut ex = DualMasterExchange::new(&dual_request("UNVANQUISHED", 86)).unwrap();
    feed(&mut ex, &list_packet(1, 3, "", &[]));
    assert!(matches!(
        ex.on_datagram(&list_packet(2, 2, "", &[])),
        Verdict::Ignore(_)
    ));
}

#[test]
fn the_emulated_master_answers_dual_as_the_unvanquished_master() {
    let v4s: Vec<SocketAddr> = (0..300u16)
        .map(|i| SocketAddr::from(([192, 0, 2, (i % 250) as u8], 20000 + i)))
        .collect();
    let v6 = a("[2001:db8::7]:27961");
    let featured = a("198.51.100.9:27960");
    let mut servers: Vec<(SocketAddr, i32)> = v4s.iter().map(|s| (*s, 86)).collect();
    servers.push((v6, 86));
    servers.push((featured, 86));
    let link = Link {
        v4: match v4s[0] {
            SocketAddr::V4(v) => v,
            SocketAddr::V6(_) => unreachable!(),
        },
        v6: match v6 {
            SocketAddr::V6(v) => v,
            SocketAddr::V4(_) => unreachable!(),
        },
    };
    let mut master = EmulatedMaster::new(servers, EotStyle::None)
        .daemon(true)
        .with_links(vec![link])
        .with_featured(b"Official/", vec![featured]);
    let req = Packet::GetServers(dual_request("UNVANQUISHED", 86))
        .to_bytes()
        .unwrap();
    let out = master.respond(Instant::now(), a("127.0.0.1:5000"), &req);
    // Links first, then 301 ordinary servers in 2 packets (256 + 45) and the featured one.
    assert!(out[0]
        .1
        .starts_with(b"\xff\xff\xff\xffgetserversExtResponseLinks\0"));
    assert_eq!(out.len(), 4);
    for (i, (_, p)) in out.iter().enumerate().skip(1) {
        assert!(p.ends_with(b"\\"));
        let Packet::ServersResponse(l) = decode(p).unwrap() else {
            panic!()
        };
        let seq = l.sequence.unwrap();
        assert_eq!((seq.index as usize, seq.count), (i, 3));
        assert!(l.servers.len() <= ENTRIES_PER_PACKET);
        assert_eq!(seq.label, if i == 3 { &b"Official"[..] } else { b"" });
    }
    let mut ex = DualMasterExchange::new(&dual_request("UNVANQUISHED", 86)).unwrap();
    for (_, p) in &out {
        feed(&mut ex, p);
    }
    let entries = ex.on_timeout(false).unwrap().unwrap();
    assert_eq!(entries.len(), 301, "the linked pair listed once");
    assert_eq!(
        entries.iter().filter(|e| !e.addresses.is_empty()).count(),
        1
    );
    // Without `dual`: no links packet.
    let mut plain = dual_request("UNVANQUISHED", 86);
    plain.options.retain(|o| o != b"dual");
    let req = Packet::GetServers(plain).to_bytes().unwrap();
    let out = master.respond(Instant::now(), a("127.0.0.1:5000"), &req);
    assert!(out
        .iter()
        .all(|(_, p)| !p.starts_with(b"\xff\xff\xff\xffgetserversExtResponseLinks")));
}
