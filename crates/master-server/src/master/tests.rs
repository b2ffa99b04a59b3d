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
