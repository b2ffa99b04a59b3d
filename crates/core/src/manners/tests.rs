use super::*;

fn addr(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

const MS: Duration = Duration::from_millis(1);

#[test]
fn ioq3_spacing_lets_eight_go_then_one_per_interval() {
    let sp = ServerEngine::Ioq3.spacing().unwrap();
    assert_eq!(sp.burst, 10 - GLOBAL_RESERVE);
    assert!(sp.interval > Duration::from_millis(1000));
    let ledger = Ledger::new();
    let a = addr("127.0.0.1:27960");
    let t0 = Instant::now();
    for i in 0..8 {
        assert_eq!(ledger.reserve(a, sp, 1, t0), Ok(()), "query {i}");
    }
    let next = ledger.reserve(a, sp, 1, t0).unwrap_err();
    assert_eq!(next, t0 + sp.interval);
    assert_eq!(ledger.reserve(a, sp, 1, next - MS), Err(next));
    assert_eq!(ledger.reserve(a, sp, 1, next), Ok(()));
    assert_eq!(ledger.reserve(a, sp, 1, next), Err(next + sp.interval));
    // Another server has its own budget.
    assert_eq!(ledger.reserve(addr("127.0.0.1:27961"), sp, 1, t0), Ok(()));
}

#[test]
fn a_pair_of_requests_costs_two() {
    let sp = ServerEngine::Ioq3.spacing().unwrap();
    let ledger = Ledger::new();
    let a = addr("127.0.0.1:27960");
    let t0 = Instant::now();
    for _ in 0..4 {
        assert_eq!(ledger.reserve(a, sp, 2, t0), Ok(()));
    }
    assert!(ledger.reserve(a, sp, 1, t0).is_err());
    // Two more need two intervals.
    assert_eq!(
        ledger.reserve(a, sp, 2, t0 + sp.interval),
        Err(t0 + sp.interval * 2)
    );
}

#[test]
fn darkplaces_spacing_is_one_per_second() {
    let sp = ServerEngine::DarkPlaces.spacing().unwrap();
    let ledger = Ledger::new();
    let a = addr("[::1]:26000");
    let t0 = Instant::now();
    assert_eq!(ledger.reserve(a, sp, 1, t0), Ok(()));
    let at = ledger.reserve(a, sp, 1, t0 + MS).unwrap_err();
    assert!(at >= t0 + Duration::from_millis(1000) + SPACING_MARGIN);
    // More datagrams than the burst wait for a full budget and owe the rest.
    assert_eq!(ledger.reserve(a, sp, 2, at), Ok(()));
    assert_eq!(
        ledger.reserve(a, sp, 1, at + sp.interval),
        Err(at + sp.interval * 2)
    );
}

#[test]
fn engines_without_limits_have_no_spacing() {
    for e in [
        ServerEngine::Qfusion,
        ServerEngine::IdTech4,
        ServerEngine::Teeworlds,
        ServerEngine::Unknown,
    ] {
        assert_eq!(e.spacing(), None, "{}", e.name());
        assert_eq!(e.limits(), EngineLimits::default());
    }
    let dd = ServerEngine::Ddnet.spacing().unwrap();
    // Under 50 in any one-second window.
    let per_second = dd.burst + (Duration::from_secs(1).as_nanos() / dd.interval.as_nanos()) as u32;
    assert!(per_second <= 50, "{per_second}");
}

#[test]
fn the_ledger_forgets_servers_whose_budget_is_full_again() {
    let sp = ServerEngine::DarkPlaces.spacing().unwrap();
    let ledger = Ledger::new();
    let t0 = Instant::now();
    for port in 1..=2000u16 {
        let _ = ledger.reserve(addr(&format!("127.0.0.1:{port}")), sp, 1, t0);
    }
    assert!(ledger.len() >= 1024);
    let later = t0 + Duration::from_secs(5);
    for port in 3000..3100u16 {
        let _ = ledger.reserve(addr(&format!("127.0.0.1:{port}")), sp, 1, later);
    }
    assert!(ledger.len() < 2100, "{}", ledger.len());
}

#[test]
fn ioq3_guard_answers_ten_per_address_then_one_a_second() {
    let mut g = Guard::new(ServerEngine::Ioq3);
    let a = addr("127.0.0.1:5000");
    let same_ip = addr("127.0.0.1:5001");
    let t0 = Instant::now();
    for i in 0..10 {
        assert!(g.allow(if i % 2 == 0 { a } else { same_ip }, t0), "{i}");
    }
    assert!(!g.allow(a, t0), "the port is not looked at");
    assert!(!g.allow(a, t0 + Duration::from_millis(300)));
    assert!(g.allow(a, t0 + Duration::from_millis(1000)));
    assert!(!g.allow(a, t0 + Duration::from_millis(1001)));
    // The global bucket: another address is limited by what the first used of it.
    let b = addr("127.0.0.2:5000");
    let t1 = t0 + Duration::from_millis(1100);
    let answered = (0..10).filter(|_| g.allow(b, t1)).count();
    assert_eq!(answered, 10, "the global bucket drained 11 by 1.1 s");
    assert!(!g.allow(addr("127.0.0.3:5000"), t1));
}

#[test]
fn darkplaces_guard_blocks_a_second_query_within_a_second() {
    let mut g = Guard::new(ServerEngine::DarkPlaces);
    let a = addr("127.0.0.1:5000");
    let t0 = Instant::now();
    assert!(g.allow(a, t0));
    assert!(!g.allow(a, t0 + Duration::from_millis(100)));
    assert!(!g.allow(a, t0 + Duration::from_millis(999)));
    assert!(g.allow(a, t0 + Duration::from_millis(1000)));
    assert!(g.allow(addr("127.0.0.2:5000"), t0), "per address");
}

#[test]
fn ddnet_guard_drops_past_500_a_second() {
    let mut g = Guard::new(ServerEngine::Ddnet);
    let t0 = Instant::now();
    let answered = (0..600u16)
        .filter(|i| g.allow(addr(&format!("127.0.0.1:{}", 1000 + i)), t0))
        .count();
    assert_eq!(answered, 500);
    assert!(g.allow(addr("127.0.0.1:1"), t0 + Duration::from_millis(1001)));
}

#[test]
fn guarded_services_drop_what_the_guard_refuses() {
    let echo = crate::serve::from_fn(|from: SocketAddr, d: &[u8]| vec![(from, d.to_vec())]);
    let mut s = Guarded::wrap(ServerEngine::DarkPlaces, Box::new(echo));
    let mut out = Outbox::new();
    let t0 = Instant::now();
    let a = addr("127.0.0.1:5000");
    s.handle(t0, a, b"getinfo", &mut out);
    s.handle(t0, a, b"getstatus", &mut out);
    assert_eq!(out.len(), 1);
}
