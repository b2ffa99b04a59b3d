//! Unit tests of the DDNet registry.

use super::*;

fn req(token: Option<&str>, serial: i64, info: Option<serde_json::Value>) -> Register {
    let info = info.map(|v| Bytes::from(serde_json::to_vec(&v).unwrap()));
    Register {
        address: "tw-0.6+udp://connecting-address.invalid:8303".into(),
        secret: "s1".into(),
        connless_token: None,
        challenge_secret: "uuid:ipv4".into(),
        challenge_token: token.map(String::from),
        info_serial: serial,
        info,
    }
}

#[test]
fn challenge_then_info_then_listed() {
    let now = Instant::now();
    let mut m = DdnetMaster::new(now, false);
    let ip: IpAddr = "203.0.113.9".parse().unwrap();
    let (st, chal) = m.register(now, ip, req(None, 1, None));
    assert_eq!(st, Status::NeedChallenge);
    let (to, d) = chal.unwrap();
    assert_eq!(to, "203.0.113.9:8303".parse().unwrap());
    assert!(d.starts_with(b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xffchaluuid:ipv4\0"));
    let fields: Vec<&[u8]> = d[14..].split(|&b| b == 0).collect();
    assert_eq!(fields[0], b"uuid:ipv4");
    let token = std::str::from_utf8(fields[1]).unwrap().to_string();
    // A wrong token still needs the challenge.
    assert_eq!(
        m.register(now, ip, req(Some("nope"), 1, None)).0,
        Status::NeedChallenge
    );
    assert_eq!(
        m.register(now, ip, req(Some(&token), 1, None)).0,
        Status::NeedInfo
    );
    let info = serde_json::json!({"name": "My DDNet", "max_clients": 16});
    let (st, chal) = m.register(now, ip, req(Some(&token), 1, Some(info)));
    assert_eq!((st, chal), (Status::Success, None));
    let json: serde_json::Value = serde_json::from_slice(&m.servers_json(now)).unwrap();
    assert_eq!(
        json["servers"][0]["addresses"][0],
        "tw-0.6+udp://203.0.113.9:8303"
    );
    assert_eq!(json["servers"][0]["info"]["name"], "My DDNet");
    // The same token from another address is not valid there.
    let other: IpAddr = "203.0.113.10".parse().unwrap();
    assert_eq!(
        m.register(now, other, req(Some(&token), 1, None)).0,
        Status::NeedChallenge
    );
    // Expiry.
    assert_eq!(&m.servers_json(now + EXPIRY)[..], b"{\"servers\":[]}\n");
    assert!(m.is_empty());
}

#[test]
fn refuses_what_it_cannot_list() {
    let now = Instant::now();
    let mut m = DdnetMaster::new(now, false);
    let lo: IpAddr = "127.0.0.1".parse().unwrap();
    assert!(matches!(
        m.register(now, lo, req(None, 1, None)).0,
        Status::Error { .. }
    ));
    let ip: IpAddr = "203.0.113.9".parse().unwrap();
    let mut r = req(None, 1, None);
    r.address = "http://x:1".into();
    assert!(matches!(m.register(now, ip, r).0, Status::Error { .. }));
    let mut r = req(None, 1, None);
    r.address = "tw-0.7+udp://connecting-address.invalid:8303".into();
    assert!(matches!(
        m.register(now, ip, r.clone()).0,
        Status::Error { .. }
    ));
    r.connless_token = Some("0a0b0c0d".into());
    let (st, chal) = m.register(now, ip, r);
    assert_eq!(st, Status::NeedChallenge);
    assert!(chal
        .unwrap()
        .1
        .starts_with(b"\x21\x0a\x0b\x0c\x0d\xff\xff\xff\xff\xff\xff\xff\xffchal"));
}

/// Registers `secret` at `address` from `ip` with `info`, answering the challenge.
fn full_register(
    m: &mut DdnetMaster,
    now: Instant,
    ip: IpAddr,
    secret: &str,
    address: &str,
    info: Option<Bytes>,
) -> Status {
    let mut r = Register {
        address: address.into(),
        secret: secret.into(),
        connless_token: address.starts_with("tw-0.7").then(|| "0a0b0c0d".into()),
        challenge_secret: "uuid:ipv4".into(),
        challenge_token: None,
        info_serial: 1,
        info: None,
    };
    let (_, chal) = m.register(now, ip, r.clone());
    let Some((_, d)) = chal else {
        return Status::Error {
            message: "no challenge".into(),
        };
    };
    let at = d.windows(4).position(|w| w == b"chal").unwrap() + 4;
    let fields: Vec<&[u8]> = d[at..].split(|&b| b == 0).collect();
    r.challenge_token = Some(String::from_utf8(fields[1].to_vec()).unwrap());
    r.info = info;
    m.register(now, ip, r).0
}

#[test]
fn a_bad_token_never_parses_the_body() {
    let now = Instant::now();
    let mut m = DdnetMaster::new(now, false);
    let ip: IpAddr = "203.0.113.9".parse().unwrap();
    let mut r = req(Some("not-the-token"), 1, None);
    r.info = Some(Bytes::from(vec![b'['; 30_000]));
    assert_eq!(m.register(now, ip, r).0, Status::NeedChallenge);
    assert_eq!(m.stats().bodies_parsed, 0);
}

#[test]
fn info_is_stored_compact_and_bounded() {
    let now = Instant::now();
    let mut m = DdnetMaster::new(now, false);
    let ip: IpAddr = "203.0.113.9".parse().unwrap();
    // Array-heavy info padded with whitespace: stored as compact text.
    let mut body = b"{\"a\": [".to_vec();
    while body.len() < MAX_INFO - 100 {
        body.extend_from_slice(b"0,   ");
    }
    body.extend_from_slice(b"0]}");
    let body = Bytes::from(body);
    // Eight of the largest (compacted to about 52 KB each) fit a host's 1 MiB.
    const PER_HOST: usize = 8;
    for i in 0..PER_HOST {
        let st = full_register(
            &mut m,
            now,
            ip,
            &format!("s{i}"),
            &format!("tw-0.6+udp://connecting-address.invalid:{}", 8303 + i),
            Some(body.clone()),
        );
        assert_eq!(st, Status::Success, "{i}");
    }
    assert_eq!(m.len(), PER_HOST);
    assert!(
        m.stored_bytes() <= PER_HOST * MAX_INFO / 2,
        "{}",
        m.stored_bytes()
    );
    // Over the size: refused.
    let big = Bytes::from(vec![b' '; MAX_INFO + 1]);
    let st = full_register(
        &mut m,
        now,
        "203.0.113.10".parse().unwrap(),
        "big",
        "tw-0.6+udp://x:1",
        Some(big),
    );
    assert!(matches!(st, Status::Error { .. }), "{st:?}");
    // Not an object: refused.
    let st = full_register(
        &mut m,
        now,
        "203.0.113.10".parse().unwrap(),
        "arr",
        "tw-0.6+udp://x:2",
        Some(Bytes::from_static(b"[1]")),
    );
    assert!(matches!(st, Status::Error { .. }), "{st:?}");
    // The info in servers.json is the compact text.
    let json = m.servers_json(now);
    assert!(!json.windows(4).any(|w| w == b"0,  "));
}

#[test]
fn servers_json_is_rebuilt_at_most_once_a_second_and_expiry_does_not_scan_per_request() {
    let now = Instant::now();
    let mut m = DdnetMaster::new(now, false);
    let ip: IpAddr = "203.0.113.9".parse().unwrap();
    let info = Some(Bytes::from_static(b"{\"name\":\"x\"}"));
    for i in 0..50u16 {
        full_register(
            &mut m,
            now,
            ip,
            &format!("s{i}"),
            &format!("tw-0.6+udp://x:{}", 8000 + i),
            info.clone(),
        );
    }
    for i in 0..1000u64 {
        let t = now + Duration::from_micros(i * 999);
        let _ = m.servers_json(t);
        // Registrations keep changing the list meanwhile.
        full_register(
            &mut m,
            t,
            ip,
            "s-new",
            &format!("tw-0.6+udp://x:{}", 9000 + i % 10),
            info.clone(),
        );
    }
    assert!(m.stats().rebuilds <= 2, "{:?}", m.stats());
    assert!(m.stats().expiry_passes <= 2, "{:?}", m.stats());
}

#[test]
fn forty_dual_scheme_servers_on_one_host_register_and_a_64_is_one_host() {
    let now = Instant::now();
    let mut m = DdnetMaster::new(now, false);
    let ip: IpAddr = "203.0.113.9".parse().unwrap();
    let info = Some(Bytes::from_static(b"{\"name\":\"x\"}"));
    for i in 0..40u16 {
        for scheme in ["tw-0.6+udp", "tw-0.7+udp"] {
            let st = full_register(
                &mut m,
                now,
                ip,
                &format!("s{i}"),
                &format!("{scheme}://x:{}", 8303 + i),
                info.clone(),
            );
            assert_eq!(st, Status::Success, "{i} {scheme}");
        }
    }
    assert_eq!(m.len(), 40);
    // IPv6: every address of a /64 counts as the same host.
    for i in 0..(SERVERS_PER_HOST as u16 + 5) {
        let ip: IpAddr = format!("2001:db8::{:x}", i + 1).parse().unwrap();
        full_register(
            &mut m,
            now,
            ip,
            &format!("v6-{i}"),
            "tw-0.6+udp://x:8303",
            info.clone(),
        );
    }
    assert_eq!(m.len(), 40 + SERVERS_PER_HOST as usize);
}

#[test]
fn secrets_are_compared_in_constant_time_and_exactly() {
    assert!(same_secret("abc", "abc"));
    assert!(!same_secret("abc", "abd"));
    assert!(!same_secret("abc", "abcd"));
}
