//! Oracles shared by the cargo-fuzz targets (`fuzz/`) and the seeded mutation test, so both
//! check the same properties. Not part of the stable API.

use crate::Encode;
use fragstat_core::record::Record;

use crate::{decode, InfoString, Packet, Quake3Game};

/// Decoding any bytes must not panic; an error names an offset inside (or just past) the
/// datagram; a packet that decodes and re-encodes must decode to the same value. Status
/// lines that are not players (`skipped`, `truncated`) are reported by the decoder but not
/// re-encoded, so they are left out of the comparison.
pub fn check_decode(data: &[u8]) {
    let packet = match decode(data) {
        Ok(p) => p,
        Err(e) => {
            assert!(
                e.offset() <= data.len(),
                "error offset {} is past the {}-byte datagram: {e}",
                e.offset(),
                data.len()
            );
            return;
        }
    };
    // A reply's record writes as JSON exactly as serde_json writes it (the scan's NDJSON).
    let info = match &packet {
        Packet::InfoResponse(i) => Some(crate::view::server_info(
            Quake3Game::Quake3,
            Some(i.clone()),
            None,
        )),
        Packet::StatusResponse(s) => Some(crate::view::server_info(
            Quake3Game::EnemyTerritory,
            None,
            Some(s.clone()),
        )),
        _ => None,
    };
    if let Some(info) = info {
        let rtt = std::time::Duration::from_micros(data.len() as u64 * 37);
        Record::online(Some("192.0.2.1:27960".into()), "q3", info, Some(rtt)).check_write_json();
    }
    let Ok(bytes) = packet.to_bytes() else { return };
    let again = decode(&bytes)
        .unwrap_or_else(|e| panic!("re-encoded packet does not decode: {e}\n{packet:?}"));
    match (&packet, &again) {
        (Packet::StatusResponse(a), Packet::StatusResponse(b)) => {
            assert_eq!(a.info, b.info, "status infostring changed in a round trip");
            assert_eq!(a.players, b.players, "players changed in a round trip");
        }
        _ => assert_eq!(packet, again, "packet changed in a round trip"),
    }
}

/// Parsing any bytes as an infostring must not panic; what parses and encodes parses back
/// equal; every error names an absolute offset inside (or just past) the input: the same
/// bytes at `base` 1000 fail 1000 bytes further on.
pub fn check_infostring(data: &[u8]) {
    match InfoString::parse(data, 0) {
        Ok(info) => {
            let mut out = Vec::new();
            if info.encode(&mut out).is_ok() {
                assert_eq!(
                    InfoString::parse(&out, 0).expect("re-encoded infostring parses"),
                    info
                );
            }
        }
        Err(e) => {
            assert!(
                e.offset() <= data.len(),
                "error offset {} is past the {} bytes parsed: {e}",
                e.offset(),
                data.len()
            );
            let shifted = InfoString::parse(data, 1000).expect_err("fails at any base");
            assert_eq!(
                shifted.offset(),
                e.offset() + 1000,
                "offsets are absolute: {e} / {shifted}"
            );
        }
    }
}

/// Any body as IW4x's HTTP server list: no panic, an error's offset inside the body, and the
/// servers read rendered and read again are the same.
pub fn check_iw4x_list(data: &[u8]) {
    match crate::iw4x::parse(data) {
        Ok(list) => {
            let addrs: Vec<_> = list.servers.iter().map(|s| s.addr).collect();
            let again = crate::iw4x::parse(&crate::iw4x::render(&addrs, 152).body)
                .expect("a rendered list parses");
            let back: Vec<_> = again.servers.iter().map(|s| s.addr).collect();
            assert_eq!(addrs, back, "servers changed in a round trip");
        }
        Err(e) => assert!(e.offset() <= data.len(), "offset past the body: {e}"),
    }
}

/// Any bytes as CoD4X's TCP list stream: no panic; an error (a bad header only) at an offset
/// inside; a stream read to its end encodes and reads back the same; the master entries are
/// at most one per entry, each at one of its addresses.
pub fn check_cod4x_stream(data: &[u8]) {
    let list = match crate::cod4x::decode_stream(data) {
        Ok(l) => l,
        Err(e) => {
            assert!(e.offset() <= data.len(), "offset past the stream: {e}");
            return;
        }
    };
    if let Some(e) = &list.stopped {
        assert!(e.offset() <= data.len(), "offset past the stream: {e}");
    }
    let entries = list.master_entries();
    assert!(entries.len() <= list.entries.len());
    if list.stopped.is_none() {
        let bytes = list.encode().expect("a stream read to its end encodes");
        let again = crate::cod4x::decode_stream(&bytes).expect("an encoded stream reads back");
        assert_eq!(list, again, "stream changed in a round trip");
    }
}

/// Any datagram as part of a Dæmon `dual` answer: [`check_decode`]'s properties, and fed to
/// the `dual` exchange (twice, as a duplicate) it never panics and lists each linked pair once.
pub fn check_daemon_list(data: &[u8]) {
    use fragstat_core::Exchange;
    check_decode(data);
    let request = crate::daemon::dual_request("UNVANQUISHED", 86);
    let Ok(mut ex) = crate::daemon::DualMasterExchange::new(&request) else {
        return;
    };
    let _ = ex.on_datagram(data);
    let _ = ex.on_datagram(data);
    if let Some(Ok(entries)) = ex.on_timeout(true) {
        let mut seen = std::collections::HashSet::new();
        for e in &entries {
            assert!(seen.insert(e.addr), "{} listed twice", e.addr);
        }
    }
}

/// Any datagram as an ET: Legacy pushed event ([`crate::push`]): no panic, an error's offset
/// inside the datagram, and what decodes survives encode → decode unchanged.
pub fn check_push(data: &[u8]) {
    match crate::push::decode_push(data) {
        Ok(push) => {
            let bytes = push.to_bytes().expect("a decoded push encodes");
            let again = crate::push::decode_push(&bytes).expect("an encoded push decodes");
            assert_eq!(push, again, "a push changed in a round trip");
        }
        Err(e) => assert!(
            e.offset() <= data.len(),
            "error offset {} is past the {}-byte datagram: {e}",
            e.offset(),
            data.len()
        ),
    }
}
