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

/// An info of `size` bytes (compact JSON, so stored as sent).
fn info_of(size: usize, name: &str) -> Bytes {
    let head = format!("{{\"name\":\"{name}\",\"pad\":\"");
    let pad = "a".repeat(size.saturating_sub(head.len() + 2));
    Bytes::from(format!("{head}{pad}\"}}"))
}

/// Whether `servers.json` lists `address`.
fn lists(json: &[u8], address: &str) -> bool {
    let v: serde_json::Value = serde_json::from_slice(json).unwrap();
    v["servers"].as_array().unwrap().iter().any(|s| {
        s["addresses"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a == address)
    })
}

/// E7 (security review H3): 34 hosts each register 64 secrets with 32 KiB infos, proving
/// their addresses; then 10 real servers from new /24s with 2.3 KB infos all register and are
/// listed, and servers.json stays within its cap. (Before: 64 MiB in all were filled, 8 of
/// the 10 were refused and servers.json was 67 MB.)
#[test]
fn e7_thirty_four_hosts_leave_room_for_ten_real_servers() {
    let now = Instant::now();
    let mut m = DdnetMaster::new(now, false);
    let big = info_of(32 * 1024, "flood");
    for h in 0..34u8 {
        // Each host in a /16 of its own: only the host shares hold it.
        let ip = IpAddr::from([100, 64 + h, 0, 1]);
        for i in 0..64u16 {
            let _ = full_register(
                &mut m,
                now,
                ip,
                &format!("flood-{h}-{i}"),
                &format!("tw-0.6+udp://x:{}", 9000 + i),
                Some(big.clone()),
            );
        }
    }
    assert_eq!(m.len(), 34 * 64, "64 servers per host are allowed");
    assert!(
        m.stored_bytes() as u64 <= 34 * INFO_PER_HOST,
        "{}",
        m.stored_bytes()
    );
    register_ten_real_servers(&mut m, now);
    let json = m.servers_json(now);
    assert!(json.len() as u64 <= MAX_LIST_BYTES, "{}", json.len());
    assert_ten_real_servers_listed(&json);
    assert!(m.stats().list_left_out > 0, "{:?}", m.stats());
    eprintln!(
        "E7: {} servers, {} bytes of info, servers.json {} bytes, {:?}",
        m.len(),
        m.stored_bytes(),
        json.len(),
        m.stats()
    );
}

/// Ten real servers, one in each of 198.51.100-109.0/24, each registering with a 2.3 KB
/// info: every one succeeds.
fn register_ten_real_servers(m: &mut DdnetMaster, now: Instant) {
    for i in 0..10u8 {
        let ip = IpAddr::from([198, 51, 100 + i, 7]);
        let st = full_register(
            m,
            now,
            ip,
            &format!("real-{i}"),
            "tw-0.6+udp://x:8303",
            Some(info_of(2300, &format!("real {i}"))),
        );
        assert_eq!(st, Status::Success, "real server {i}: {:?}", m.stats());
    }
}

/// The ten real servers of [`register_ten_real_servers`] are in `json`.
fn assert_ten_real_servers_listed(json: &[u8]) {
    for i in 0..10u8 {
        let a = format!("tw-0.6+udp://198.51.{}.7:8303", 100 + i);
        assert!(lists(json, &a), "{a} listed");
    }
}

/// Limits small enough to fill: servers 4 per host, 8 per /24, 32 per /16, 40 in all; info
/// 64 KiB per host, 128 KiB per /24, 512 KiB per /16 and in all; servers.json 256 KiB.
fn small() -> DdnetLimits {
    DdnetLimits::from_shares([4, 8, 40], [64 << 10, 128 << 10, 512 << 10], 256 << 10)
}

/// When the master is full, newcomers displace the newest entries of the network holding the
/// most, never a stranger's, and the flooding network cannot take the places back.
#[test]
fn a_full_master_displaces_the_largest_network_not_a_stranger() {
    let now = Instant::now();
    let mut m = DdnetMaster::with_limits(now, false, small());
    assert_eq!(m.limits().check(), Ok(()));
    let big = info_of(16 * 1024, "flood");
    // Two /16s, each 4 /24s × 2 hosts × 4 servers: 64 servers wanted, 40 in all.
    for net in 0..2u8 {
        for n in 0..4u8 {
            for h in 0..2u8 {
                let ip = IpAddr::from([100, 64 + net, n, h + 1]);
                for i in 0..4u16 {
                    let _ = full_register(
                        &mut m,
                        now,
                        ip,
                        &format!("flood-{net}-{n}-{h}-{i}"),
                        &format!("tw-0.6+udp://x:{}", 9000 + i),
                        Some(big.clone()),
                    );
                }
            }
        }
    }
    assert_eq!(m.slots.len(), 40, "the table is full");
    assert_eq!(m.stored_bytes(), 512 << 10, "the info is full");
    let displaced = m.stats().servers_displaced;
    assert!(displaced > 0, "{:?}", m.stats());
    register_ten_real_servers(&mut m, now);
    assert!(m.stats().servers_displaced >= displaced + 10);
    // The flood cannot take its places back from the strangers.
    for i in 0..8u16 {
        let st = full_register(
            &mut m,
            now,
            IpAddr::from([100, 64, 3, 9]),
            &format!("again-{i}"),
            &format!("tw-0.6+udp://x:{}", 9100 + i),
            Some(big.clone()),
        );
        assert!(matches!(st, Status::Error { .. }), "{st:?}");
    }
    let json = m.servers_json(now);
    assert!(
        json.len() as u64 <= small().max_list_bytes,
        "{}",
        json.len()
    );
    assert_ten_real_servers_listed(&json);
    assert!(m.stats().list_left_out > 0, "{:?}", m.stats());
}

/// One IPv6 /48 rotating /64s (and /56s) stops at its /48 budgets; a server from another /48
/// still registers.
#[test]
fn one_48_rotating_64s_stops_at_its_48_budget() {
    let now = Instant::now();
    let mut m = DdnetMaster::new(now, false);
    let big = info_of(32 * 1024, "flood");
    for sub in 0..16u16 {
        for i in 0..64u16 {
            // /64s in 16 /56s of 2001:db8:1::/48.
            let ip = IpAddr::from([0x2001, 0xdb8, 1, sub << 8 | i, 0, 0, 0, 1]);
            for s in 0..4u16 {
                let _ = full_register(
                    &mut m,
                    now,
                    ip,
                    &format!("flood-{sub}-{i}-{s}"),
                    &format!("tw-0.6+udp://x:{}", 9000 + s),
                    Some(big.clone()),
                );
            }
        }
    }
    let net = Prefix::of("2001:db8:1::".parse().unwrap(), Level::Net).unwrap();
    assert_eq!(m.len() as u64, SERVERS_PER_NET, "the /48's servers");
    assert_eq!(m.slots.held(&net), SERVERS_PER_NET);
    assert!(m.infos.held(&net) <= INFO_PER_NET);
    assert!(m.infos.held(&net) > INFO_PER_NET - 64 * 1024);
    let st = full_register(
        &mut m,
        now,
        "2001:db8:2::1".parse().unwrap(),
        "real",
        "tw-0.6+udp://x:8303",
        Some(info_of(2300, "real")),
    );
    assert_eq!(st, Status::Success);
}

/// DDNet 20 sends up to 100 KiB of info (128 players): taken; over 128 KiB refused.
#[test]
fn a_100_kib_registration_is_accepted() {
    let now = Instant::now();
    let mut m = DdnetMaster::new(now, false);
    let ip: IpAddr = "203.0.113.9".parse().unwrap();
    let st = full_register(
        &mut m,
        now,
        ip,
        "big",
        "tw-0.6+udp://x:8303",
        Some(info_of(100 * 1024 - 1, "128 players")),
    );
    assert_eq!(st, Status::Success);
    assert!(lists(&m.servers_json(now), "tw-0.6+udp://203.0.113.9:8303"));
    let st = full_register(
        &mut m,
        now,
        ip,
        "bigger",
        "tw-0.6+udp://x:8304",
        Some(info_of(MAX_INFO + 1, "too many")),
    );
    assert!(matches!(st, Status::Error { .. }), "{st:?}");
}
