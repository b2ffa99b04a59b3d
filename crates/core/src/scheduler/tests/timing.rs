//! When things happen: attempts, retries, adaptive timeouts, the verdicts that restart
//! timers, the per-query caps and pacing.

use super::*;

#[test]
fn a_query_is_routed_sent_answered_and_unrouted() {
    let mut n = Net::of(opts(1000, 2), vec![(addr(1), script())]);
    n.pump(ms(0));
    assert_eq!(n.sent.len(), 1);
    assert_eq!(n.sent[0].data, "step0 attempt0");
    assert_eq!(n.s.poll_timeout(), Some(n.at(ms(1000))));
    n.reply(ms(25), addr(1), "done");
    let o = n.outcome(addr(1));
    assert_eq!(o.result.as_deref().ok(), Some("step0 done"));
    assert_eq!((o.rtt, o.attempts, o.index), (Some(ms(25)), 1, 0));
    assert!(n.routes.is_empty(), "unwatched when it finished");
    assert!(n.s.is_finished());
    assert_eq!(n.s.poll_timeout(), None);
}

#[test]
fn retries_go_at_each_timeout_then_the_query_times_out() {
    let mut n = Net::of(opts(100, 2), vec![(addr(1), script())]);
    n.advance(ms(1000));
    assert_eq!(n.sent_at(addr(1)), [ms(0), ms(100), ms(200)]);
    let data: Vec<_> = n.sent.iter().map(|s| s.data.as_str()).collect();
    assert_eq!(data, ["step0 attempt0", "step0 attempt1", "step0 attempt2"]);
    assert!(matches!(
        n.outcome(addr(1)).result,
        Err(QueryError::Timeout { attempts: 3 })
    ));
    assert!(n.s.is_finished());
}

#[test]
fn a_reply_to_an_earlier_attempt_still_counts_and_names_its_rtt() {
    let mut n = Net::of(opts(100, 2), vec![(addr(1), script())]);
    n.advance(ms(150));
    // Attempt 0 went at 0, attempt 1 at 100: the reply says it answers attempt 0.
    n.reply(ms(160), addr(1), "done@0");
    let o = n.outcome(addr(1));
    assert_eq!((o.rtt, o.attempts), (Some(ms(160)), 2));
}

/// One query answered in 20 ms gives SRTT 20, RTTVAR 10: RTO 60 ms. The next query's first
/// attempt waits 60 ms, its second 120 (doubled), its last the whole timeout.
#[test]
fn the_adaptive_timeout_follows_the_sampled_rtt() {
    let o = opts(1000, 2).with_adaptive(true).with_concurrency(1);
    let mut n = Net::of(o, vec![(addr(1), script()), (addr(2), script())]);
    n.pump(ms(0));
    n.reply(ms(20), addr(1), "done");
    assert_eq!(n.sent_at(addr(2)), [ms(20)]);
    n.advance(ms(5000));
    assert_eq!(n.sent_at(addr(2)), [ms(20), ms(80), ms(200)]);
    assert_eq!(n.outcomes.len(), 2);
    // The last attempt waited the whole timeout.
    assert_eq!(n.s.poll_timeout(), None);
    assert!(matches!(
        n.outcome(addr(2)).result,
        Err(QueryError::Timeout { attempts: 3 })
    ));
}

#[test]
fn the_adaptive_timeout_stays_above_the_minimum() {
    let o = opts(1000, 1)
        .with_adaptive(true)
        .with_min_timeout(ms(50))
        .with_concurrency(1);
    let mut n = Net::of(o, vec![(addr(1), script()), (addr(2), script())]);
    n.pump(ms(0));
    // RTO from a 1 ms sample: 1 + 4 · 0.5 = 3 ms, raised to the 50 ms minimum.
    n.reply(ms(1), addr(1), "done");
    n.advance(ms(5000));
    assert_eq!(n.sent_at(addr(2)), [ms(1), ms(51)]);
}

/// With adaptive timeouts off (or before any sample), every attempt waits the timeout.
#[test]
fn without_samples_every_attempt_waits_the_timeout() {
    let o = opts(300, 2).with_adaptive(true);
    let mut n = Net::of(o, vec![(addr(1), script())]);
    n.advance(ms(5000));
    assert_eq!(n.sent_at(addr(1)), [ms(0), ms(300), ms(600)]);
}

/// `Partial` samples the RTT and restarts the timer as for an attempt (adaptive); when it
/// runs out, the rest is asked for again.
#[test]
fn partial_restarts_the_attempt_timer_and_asks_again() {
    let o = opts(1000, 2).with_adaptive(true);
    let mut n = Net::of(o, vec![(addr(1), script())]);
    n.pump(ms(0));
    n.reply(ms(40), addr(1), "part");
    // SRTT 40, RTTVAR 20: RTO 120 ms from the reply.
    assert_eq!(n.s.poll_timeout(), Some(n.at(ms(160))));
    n.advance(ms(160));
    assert_eq!(n.sent_at(addr(1)), [ms(0), ms(160)]);
    n.reply(ms(170), addr(1), "done");
    let o = n.outcome(addr(1));
    assert_eq!(
        (o.rtt, o.attempts),
        (Some(ms(40)), 2),
        "the RTT of the first part"
    );
}

/// `Progress` restarts the timer with its own wait; when it runs out, the exchange may
/// finish with what it has.
#[test]
fn progress_waits_its_own_wait_and_the_timeout_salvages() {
    let ex = Script {
        salvage: true,
        ..Script::default()
    };
    let mut n = Net::of(opts(1000, 2), vec![(addr(1), ex)]);
    n.pump(ms(0));
    n.reply(ms(10), addr(1), "more:30");
    assert_eq!(n.s.poll_timeout(), Some(n.at(ms(40))));
    n.reply(ms(20), addr(1), "more");
    assert_eq!(
        n.s.poll_timeout(),
        Some(n.at(ms(1020))),
        "the attempt timeout"
    );
    n.reply(ms(30), addr(1), "more:30");
    n.advance(ms(60));
    let o = n.outcome(addr(1));
    assert_eq!(o.result.as_deref().ok(), Some("3 parts"));
    assert_eq!(o.rtt, Some(ms(10)));
    assert_eq!(n.sent.len(), 1, "no retry");
}

#[test]
fn advance_sends_the_next_step_at_once_with_its_own_attempts() {
    let mut n = Net::of(opts(100, 2), vec![(addr(1), script())]);
    n.advance(ms(150));
    n.reply(ms(150), addr(1), "step");
    assert_eq!(n.sent.last().unwrap().data, "step1 attempt0");
    assert_eq!(n.sent.last().unwrap().at, ms(150));
    n.advance(ms(260));
    n.reply(ms(270), addr(1), "done");
    let o = n.outcome(addr(1));
    assert_eq!(o.result.as_deref().ok(), Some("step1 done"));
    assert_eq!((o.attempts, o.rtt), (2, Some(ms(20))));
}

fn flood(n: &mut Net<Script>, from: u64, count: u64, every: u64, data: &str) {
    for i in 0..count {
        n.advance(ms(from + i * every));
        n.reply(ms(from + i * every), addr(1), data);
    }
}

#[test]
fn the_datagram_cap_ends_a_query() {
    let mut n = Net::of(
        opts(1000, 0).with_max_datagrams(5),
        vec![(addr(1), script())],
    );
    n.pump(ms(0));
    flood(&mut n, 1, 5, 1, "more");
    assert!(n.outcomes.is_empty());
    n.reply(ms(10), addr(1), "more");
    assert!(matches!(
        n.outcome(addr(1)).result,
        Err(QueryError::Exceeded {
            limit: crate::LimitKind::Datagrams,
            max: 5
        })
    ));
}

/// Every datagram counts, whatever the exchange says of it.
#[test]
fn the_byte_cap_ends_a_query_and_counts_ignored_datagrams() {
    let mut n = Net::of(opts(1000, 0).with_max_bytes(20), vec![(addr(1), script())]);
    n.pump(ms(0));
    flood(&mut n, 1, 2, 1, "ignored!");
    assert!(n.outcomes.is_empty(), "16 bytes");
    n.reply(ms(5), addr(1), "more:10");
    assert!(matches!(
        n.outcome(addr(1)).result,
        Err(QueryError::Exceeded {
            limit: crate::LimitKind::Bytes,
            max: 20
        })
    ));
}

/// A trickle that keeps restarting the attempt timer ends at the query's lifetime, counted
/// from its first send, through the one live timer.
#[test]
fn the_lifetime_ends_a_trickle() {
    let o = opts(100, 0).with_lifetime(ms(250));
    let mut n = Net::of(o, vec![(addr(1), script())]);
    n.pump(ms(0));
    flood(&mut n, 50, 4, 50, "more");
    assert!(n.outcomes.is_empty());
    assert_eq!(
        n.s.poll_timeout(),
        Some(n.at(ms(250))),
        "capped at the lifetime"
    );
    n.advance(ms(250));
    assert!(matches!(
        n.outcome(addr(1)).result,
        Err(QueryError::Exceeded {
            limit: crate::LimitKind::Lifetime,
            max: 250
        })
    ));
}

/// 100 datagrams/s: one every 10 ms, and `poll_timeout` says when the next may go.
#[test]
fn pacing_spaces_transmissions_by_the_rate() {
    let jobs = (0..5).map(|p| (addr(p + 1), script())).collect();
    let mut n = Net::of(opts(1000, 0).with_rate(Some(100)), jobs);
    n.pump(ms(0));
    assert_eq!(n.sent.len(), 1);
    assert_eq!(n.s.poll_timeout(), Some(n.at(ms(10))));
    n.advance(ms(100));
    let at: Vec<_> = n.sent.iter().map(|s| s.at).collect();
    assert_eq!(at, [ms(0), ms(10), ms(20), ms(30), ms(40)]);
}

/// Time saved up while the batch waited is spent at once, but only a few milliseconds'
/// worth (4 datagrams' worth, at least 4 ms): at 1,000/s, a wake-up 10 ms late sends 5.
#[test]
fn pacing_saves_up_only_a_small_burst() {
    let jobs = (0..40).map(|p| (addr(p + 1), script())).collect();
    let mut n = Net::of(opts(1000, 0).with_rate(Some(1000)), jobs);
    n.pump(ms(0));
    assert_eq!(n.sent.len(), 1);
    n.pump(ms(10));
    assert_eq!(n.sent.len(), 6, "the 4 ms saved up, and the one due now");
    n.pump(ms(10));
    assert_eq!(n.sent.len(), 6);
    n.pump(ms(11));
    assert_eq!(n.sent.len(), 7);
}

/// A request of several datagrams uses one interval per datagram.
#[test]
fn pacing_counts_datagrams_not_queries() {
    struct Two;
    impl Exchange for Two {
        type Output = ();
        fn requests(&mut self, _: u32) -> Result<Vec<Vec<u8>>, EncodeError> {
            Ok(vec![b"a".to_vec(), b"b".to_vec()])
        }
        fn on_datagram(&mut self, _: &[u8]) -> Verdict<()> {
            Verdict::Ignore("")
        }
    }
    let jobs = (0..3).map(|p| (addr(p + 1), Two)).collect();
    let mut n = Net::of(opts(1000, 0).with_rate(Some(100)), jobs);
    n.advance(ms(100));
    let at: Vec<_> = n.sent.iter().map(|s| s.at).collect();
    assert_eq!(at, [ms(0), ms(0), ms(20), ms(20), ms(40), ms(40)]);
}
