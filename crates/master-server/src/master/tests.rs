//! Unit tests of the sans-IO master.

use super::registration::EPOCH_MS;
use super::*;

#[test]
fn names_are_freed_and_their_slots_reused() {
    let mut n = Names::default();
    let a = n.intern("a");
    assert_eq!(n.intern("a"), a);
    let b = n.intern("b");
    n.release(a);
    assert_eq!(n.lookup("a"), Some(a), "still used once");
    n.release(a);
    assert_eq!(n.lookup("a"), None);
    let c = n.intern("c");
    assert_eq!(c, a, "the freed slot is reused");
    assert_eq!(n.get(b), "b");
    assert_eq!(n.len(), 2);
}

#[test]
fn challenges_are_keyed_and_carry_their_game() {
    let m = Master::with_seed(Config::default(), 1);
    let other = Master::with_seed(Config::default(), 2);
    let a: SocketAddr = "203.0.113.7:27960".parse().unwrap();
    let c = m.challenge(a, 5, b'e');
    assert_eq!(c[0], b'e');
    assert!(c.iter().all(u8::is_ascii_alphanumeric));
    assert_ne!(
        c,
        other.challenge(a, 5, b'e'),
        "another key, another challenge"
    );
    assert_ne!(c, m.challenge(a, 6, b'e'));
    assert_ne!(
        c,
        m.challenge("203.0.113.7:27961".parse().unwrap(), 5, b'e')
    );
    let t = 5 * EPOCH_MS + 10;
    assert_eq!(m.check_challenge(a, &c, t), Some(b'e'));
    assert_eq!(m.check_challenge(a, &c, t + EPOCH_MS), Some(b'e'));
    assert_eq!(m.check_challenge(a, &c, t + 2 * EPOCH_MS), None, "too old");
    let mut relabelled = c;
    relabelled[0] = b'q';
    assert_eq!(m.check_challenge(a, &relabelled, t), None);
    // Two masters from the OS's random source do not share a key.
    let (x, y) = (
        Master::new(Config::default()),
        Master::new(Config::default()),
    );
    assert_ne!(x.challenge(a, 1, b'q'), y.challenge(a, 1, b'q'));
}

#[test]
fn config_checks_refuse_what_would_never_list_or_would_panic() {
    assert!(Config::default().check().is_ok());
    // More servers than a reply holds: their lists are cut to the reply cap.
    let big = Config {
        max_servers: 65_536,
        ..Config::default()
    };
    assert!(big.check().is_ok());
    let with_lists = |lists: crate::budget::ListBudget| Config {
        limits: LimitConfig {
            lists,
            ..LimitConfig::default()
        },
        ..Config::default()
    };
    let d = crate::budget::ListBudget::default();
    let tiny_reply = with_lists(crate::budget::ListBudget {
        max_reply: 100,
        ..d
    });
    assert!(tiny_reply.check().unwrap_err().contains("one datagram"));
    // A burst that cannot hold one reply would never send the longest list.
    let narrow = with_lists(crate::budget::ListBudget {
        uplink: crate::limits::Rate {
            per_sec: 64.0 * 1024.0,
            burst: 64.0 * 1024.0,
        },
        ..d
    });
    assert!(narrow
        .check()
        .unwrap_err()
        .contains("does not hold one reply"));
    let unlimited = Config {
        max_servers: 1_000_000,
        limits: LimitConfig::unlimited(),
        ..Config::default()
    };
    assert!(unlimited.check().is_ok());
    let forever = Config {
        expiry: Duration::from_secs(u64::MAX),
        ..Config::default()
    };
    assert!(forever.check().is_err());
    assert!(longest_list(16_384) < 320 * 1024);
}

#[test]
fn caps_take_the_hosts_from_max_per_address_and_never_narrow() {
    let c = Config::default().caps();
    assert_eq!(c.v4, [32, 256, 1024]);
    assert_eq!(c.v6, [32, 128, 512, 2048]);
    let raised = Config {
        max_per_address: 1_000,
        ..Config::default()
    }
    .caps();
    assert_eq!(raised.v4, [1_000, 1_000, 1024]);
    assert_eq!(raised.v6, [1_000, 1_000, 1_000, 2048]);
    assert!(Config {
        max_per_address: 1_000_000,
        ..Config::default()
    }
    .check()
    .is_ok());
}

#[test]
fn addresses_are_listable_by_kind() {
    let strict = Config::default();
    let at = |s: &str| -> SocketAddr { s.parse().unwrap() };
    assert_eq!(listable(&strict, at("1.2.3.4:27960")), Ok(()));
    assert_eq!(listable(&strict, at("10.0.0.1:27960")), Err(Drop::Private));
    assert_eq!(
        listable(&strict, at("[64:ff9b::1.2.3.4]:27960")),
        Err(Drop::Private)
    );
    assert_eq!(
        listable(&strict, at("127.0.0.1:27960")),
        Err(Drop::Unroutable)
    );
    assert_eq!(listable(&strict, at("1.2.3.4:0")), Err(Drop::Unroutable));
    let lan = Config {
        allow_private: true,
        ..Config::default()
    };
    assert_eq!(listable(&lan, at("10.0.0.1:27960")), Ok(()));
    assert_eq!(listable(&lan, at("127.0.0.1:27960")), Err(Drop::Unroutable));
    assert_eq!(listable(&lan, at("224.0.0.1:27960")), Err(Drop::Unroutable));
    let local = Config {
        allow_loopback: true,
        ..Config::default()
    };
    assert_eq!(listable(&local, at("[::1]:27960")), Ok(()));
    assert_eq!(
        listable(&local, at("192.168.0.1:27960")),
        Err(Drop::Private)
    );
}
