use super::*;

fn sample() -> Info {
    Info {
        token: 0x12342a,
        version: b"0.6.4, 16.4".to_vec(),
        name: "Ünï ☃".as_bytes().to_vec(),
        map: b"Tutorial".to_vec(),
        map_crc: Some(-1924373370),
        map_size: Some(1234),
        gametype: b"DDraceNetwork".to_vec(),
        flags: 1,
        num_players: 1,
        max_players: 64,
        num_clients: 2,
        max_clients: 64,
        reserved: Some(Vec::new()),
        offset: None,
        clients: vec![
            Client {
                name: b"a".to_vec(),
                clan: b"c".to_vec(),
                country: -1,
                score: -9999,
                is_player: 1,
                reserved: Some(Vec::new()),
            },
            Client {
                name: b"b".to_vec(),
                country: 276,
                score: 3,
                reserved: Some(Vec::new()),
                ..Client::default()
            },
        ],
        truncated: false,
    }
}

#[test]
fn every_form_round_trips() {
    let ext = sample();
    let mut vanilla = sample();
    vanilla.map_crc = None;
    vanilla.map_size = None;
    vanilla.reserved = None;
    for c in &mut vanilla.clients {
        c.reserved = None;
    }
    let mut legacy = vanilla.clone();
    legacy.offset = Some(24);
    for p in [
        Packet::InfoExtended(ext.clone()),
        Packet::Info(vanilla),
        Packet::Info64(legacy),
        Packet::InfoMore(More {
            token: 7,
            packet_no: 1,
            reserved: Vec::new(),
            clients: ext.clients.clone(),
            truncated: false,
        }),
        Packet::GetInfo {
            token: 1,
            extra_token: None,
        },
        Packet::GetInfo {
            token: 1,
            extra_token: Some(0xbeef),
        },
        Packet::GetInfo64 { token: 9 },
        Packet::List(vec![
            "1.2.3.4:8303".parse().unwrap(),
            "[2001:db8::1]:8304".parse().unwrap(),
        ]),
        Packet::List5(vec!["1.2.3.4:8303".parse().unwrap()]),
        Packet::Count(300),
        Packet::GetList,
        Packet::GetCount,
        Packet::Heartbeat { port: 8303 },
    ] {
        let bytes = p.to_bytes().unwrap();
        assert_eq!(decode(&bytes).unwrap(), p, "{}", bytes.escape_ascii());
    }
}

#[test]
fn request_bytes_as_documented() {
    let p = Packet::GetInfo {
        token: 0x2a,
        extra_token: Some(0x1234),
    };
    assert_eq!(
        p.to_bytes().unwrap(),
        b"xe\x12\x34\x00\x00\xff\xff\xff\xffgie3\x2a"
    );
    assert_eq!(
        Packet::GetInfo {
            token: 5,
            extra_token: None
        }
        .to_bytes()
        .unwrap()
        .len(),
        15
    );
}

#[test]
fn packet_numbers_and_counts_are_checked() {
    let mut bytes = b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xffiex+7\x0064\x00\x00".to_vec();
    let e = decode(&bytes).unwrap_err();
    assert_eq!(
        (e.kind(), e.field(), e.offset()),
        ("invalid", Some("packet_no"), 16)
    );
    bytes = b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xffiex+7\x000\x00\x00".to_vec();
    assert_eq!(decode(&bytes).unwrap_err().field(), Some("packet_no"));
    let mut v = sample();
    v.num_clients = -1;
    let bytes = Packet::InfoExtended(v).to_bytes().unwrap();
    assert_eq!(decode(&bytes).unwrap_err().field(), Some("num_clients"));
}

#[test]
fn a_cut_client_keeps_the_complete_ones() {
    let mut bytes = Packet::InfoExtended(sample()).to_bytes().unwrap();
    bytes.truncate(bytes.len() - 4);
    let Packet::InfoExtended(i) = decode(&bytes).unwrap() else {
        panic!()
    };
    assert_eq!((i.clients.len(), i.truncated), (1, true));
}

#[test]
fn unknown_types_and_headers() {
    let e = decode(b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xffinf4").unwrap_err();
    assert_eq!((e.kind(), e.offset()), ("unknown_command", 6));
    let e = decode(b"\x10\x00\x00\x00\x00\x00").unwrap_err();
    assert_eq!(e.kind(), "bad_header");
    // qstat's header: only the connectionless flag counts.
    assert_eq!(
        decode(b" \x00\x00\x00\x00\x00\xff\xff\xff\xffreq2").unwrap(),
        Packet::GetList
    );
    let e = decode(b"xe\x00\x01\x00\x00\xff\xff\xff\xffinf3").unwrap_err();
    assert_eq!(e.field(), Some("header"));
}

#[test]
fn a_negative_count_is_reported_at_its_own_first_byte() {
    let mut i = sample();
    i.num_clients = -2;
    let bytes = Packet::InfoExtended(i).to_bytes().unwrap();
    // The count is the decimal string `-2` after `num_players` and `max_players`.
    let at = bytes
        .windows(4)
        .position(|w| w == b"\0-2\0")
        .expect("the count on the wire")
        + 1;
    let e = decode(&bytes).unwrap_err();
    assert_eq!(
        (e.kind(), e.field(), e.offset()),
        ("invalid", Some("num_clients"), at)
    );
}
