//! What runs and how it ends: the window and the jobs, the deadline, unreachable and
//! foreign servers, encode and send failures, routing by id.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use super::*;

/// A counting job source: how many exchanges were made.
fn counted(made: &Arc<AtomicUsize>, count: u16) -> Jobs<Script> {
    let m = Arc::clone(made);
    Jobs::exact((0..count).map(move |p| {
        m.fetch_add(1, Ordering::SeqCst);
        (addr(p + 1), script())
    }))
}

#[test]
fn the_window_bounds_queries_in_flight_and_jobs_are_made_as_it_frees() {
    let made = Arc::new(AtomicUsize::new(0));
    let mut n = Net::new(opts(1000, 0).with_concurrency(3), counted(&made, 10));
    assert_eq!(n.s.total(), Some(10));
    assert_eq!(
        made.load(Ordering::SeqCst),
        0,
        "nothing made before the first poll"
    );
    n.pump(ms(0));
    assert_eq!((n.sent.len(), made.load(Ordering::SeqCst)), (3, 3));
    assert_eq!(n.s.in_flight().count(), 3);
    n.reply(ms(5), addr(2), "done");
    assert_eq!((n.sent.len(), made.load(Ordering::SeqCst)), (4, 4));
    assert_eq!(n.sent[3].to, addr(4));
    for p in [1, 3, 4, 5, 6, 7, 8, 9, 10] {
        n.reply(ms(10), addr(p), "done");
        assert!(n.s.in_flight().count() <= 3);
    }
    assert_eq!(made.load(Ordering::SeqCst), 10);
    assert_eq!(n.outcomes.len(), 10);
    let mut indexes: Vec<_> = n.outcomes.iter().map(|o| o.index).collect();
    indexes.sort_unstable();
    assert_eq!(indexes, (0..10).collect::<Vec<_>>());
    assert!(n.s.is_finished());
}

/// An outcome not taken holds the batch: no query starts until it is.
#[test]
fn no_query_starts_while_an_outcome_waits() {
    let made = Arc::new(AtomicUsize::new(0));
    let t0 = Instant::now();
    let mut s = Scheduler::new(t0, opts(1000, 0).with_concurrency(1), counted(&made, 3));
    let t = s.poll_transmit(t0).unwrap();
    s.on_sent(t.id, t.attempt, t0, None);
    s.handle_datagram(t0, t.destination, b"done", t0, &[t.id]);
    assert!(s.has_outcome());
    assert!(s.poll_transmit(t0).is_none());
    assert_eq!(made.load(Ordering::SeqCst), 1);
    assert!(!s.is_finished());
    assert!(s.poll_outcome().is_some());
    assert_eq!(s.poll_transmit(t0).unwrap().destination, addr(2));
}

/// Jobs of unknown length are taken until the iterator ends.
#[test]
fn jobs_of_unknown_length() {
    let mut n = Net::new(
        opts(100, 0).with_concurrency(2),
        Jobs::iter((1..=5).filter(|p| p % 2 == 1).map(|p| (addr(p), script()))),
    );
    assert_eq!(n.s.total(), None);
    n.advance(ms(1000));
    assert_eq!(n.outcomes.len(), 3);
    assert!(n.s.is_finished());
}

/// Pushed jobs (a channel's): wanted while the window has room, started in order, and the
/// batch ends once closed and drained.
#[test]
fn pushed_jobs_start_as_they_come_until_closed() {
    let mut n: Net<Script> = Net::new(opts(1000, 0).with_concurrency(2), Jobs::pushed());
    n.pump(ms(0));
    assert!(n.s.wants_job() && !n.s.is_finished());
    n.s.push_job(addr(1), script());
    assert!(n.s.wants_job());
    n.s.push_job(addr(2), script());
    assert!(!n.s.wants_job(), "the window is taken by the jobs pushed");
    n.pump(ms(0));
    assert_eq!(n.sent.len(), 2);
    n.reply(ms(5), addr(1), "done");
    assert!(n.s.wants_job());
    n.s.push_job(addr(3), script());
    n.s.close_jobs();
    assert!(!n.s.wants_job());
    n.pump(ms(5));
    n.reply(ms(6), addr(2), "done");
    n.reply(ms(7), addr(3), "done");
    let indexes: Vec<_> = n.outcomes.iter().map(|o| (o.index, o.addr)).collect();
    assert_eq!(indexes, [(0, addr(1)), (1, addr(2)), (2, addr(3))]);
    assert!(n.s.is_finished());
}

/// At the deadline every query in flight and every job not started ends as `Deadline`
/// (an exchange may salvage what it has), and nothing is timed after it.
#[test]
fn the_deadline_ends_the_batch() {
    let o = opts(100, 10)
        .with_deadline(Some(ms(250)))
        .with_concurrency(2);
    let salvaged = Script {
        salvage: true,
        ..Script::default()
    };
    let mut jobs: Vec<_> = (2..6).map(|p| (addr(p), script())).collect();
    jobs.insert(0, (addr(1), salvaged));
    let mut n = Net::of(o, jobs);
    n.pump(ms(0));
    n.reply(ms(10), addr(1), "more:1000");
    n.advance(ms(249));
    assert!(n.outcomes.is_empty());
    assert_eq!(n.s.poll_timeout(), Some(n.at(ms(250))));
    n.advance(ms(250));
    assert_eq!(n.outcomes.len(), 5);
    assert_eq!(n.outcome(addr(1)).result.as_deref().ok(), Some("1 parts"));
    for p in 2..6 {
        assert!(matches!(
            n.outcome(addr(p)).result,
            Err(QueryError::Deadline)
        ));
    }
    assert!(n.s.is_expired() && n.s.is_finished());
    assert!(n.routes.is_empty());
    assert_eq!(n.s.poll_timeout(), None);
    // A job pushed after the deadline ends at once.
    let mut late: Net<Script> = Net::new(o_deadline(), Jobs::pushed());
    late.advance(ms(10));
    late.s.push_job(addr(9), script());
    late.pump(ms(10));
    assert!(matches!(late.outcomes[0].result, Err(QueryError::Deadline)));
}

fn o_deadline() -> Options {
    opts(100, 0).with_deadline(Some(ms(5)))
}

impl<E: Exchange> Net<E> {
    /// The network reports `to` unreachable at `t` (routed by the events so far).
    fn refuse(&mut self, t: Duration, to: SocketAddr) {
        let ids = self.routes.get(&to).cloned().unwrap_or_default();
        self.s.handle_unreachable(self.at(t), to, &ids);
        self.pump(t);
    }
}

/// One ICMP report ends the attempt early (the retry goes at once, not after the 1 s
/// timeout), not the query; the second attempt refused too ends it as unreachable.
#[test]
fn an_unreachable_address_ends_its_queries_after_two_refused_attempts() {
    let mut n = Net::of(
        opts(1000, 3),
        vec![(addr(1), script()), (addr(2), script())],
    );
    n.pump(ms(0));
    let ids = n.routes[&addr(1)].clone();
    // Ids given for another address are not that address's queries.
    n.s.handle_unreachable(n.at(ms(1)), addr(2), &ids);
    n.refuse(ms(1), addr(1));
    n.advance(ms(1));
    assert!(n.outcomes.is_empty(), "one report ended the query");
    assert_eq!(n.sent_at(addr(1)), [ms(0), ms(1)], "the retry went at once");
    assert_eq!(n.sent_at(addr(2)), [ms(0)]);
    // The same attempt reported twice still counts once.
    n.s.handle_unreachable(n.at(ms(1)), addr(1), &ids);
    n.refuse(ms(2), addr(1));
    assert_eq!(n.outcomes.len(), 1);
    let o = n.outcome(addr(1));
    assert!(
        matches!(o.result, Err(QueryError::Unreachable)),
        "{:?}",
        o.result
    );
    assert_eq!(o.attempts, 2);
    assert!(!n.routes.contains_key(&addr(1)));
}

/// A forged report (one, while the server is up) costs a retry; the server's answer to either
/// attempt is taken.
#[test]
fn one_unreachable_report_does_not_hide_the_answer() {
    let mut n = Net::of(opts(1000, 2), vec![(addr(1), script())]);
    n.pump(ms(0));
    n.refuse(ms(1), addr(1));
    n.advance(ms(1));
    n.reply(ms(5), addr(1), "done@0");
    assert!(
        n.outcome(addr(1)).result.is_ok(),
        "{:?}",
        n.outcome(addr(1)).result
    );
}

/// With no retries the one attempt is all there is: its report ends the query as unreachable.
#[test]
fn without_retries_one_report_is_enough() {
    let mut n = Net::of(opts(1000, 0), vec![(addr(1), script())]);
    n.pump(ms(0));
    n.refuse(ms(1), addr(1));
    assert!(matches!(
        n.outcome(addr(1)).result,
        Err(QueryError::Unreachable)
    ));
}

/// Replies from the server on every attempt, none an answer: `Foreign`, not `Timeout`.
#[test]
fn foreign_replies_are_reported_as_foreign() {
    let mut n = Net::of(opts(100, 1), vec![(addr(1), script())]);
    n.pump(ms(0));
    n.reply(ms(10), addr(1), "someone else's");
    n.advance(ms(100));
    n.reply(ms(110), addr(1), "someone else's");
    n.advance(ms(1000));
    assert!(matches!(
        n.outcome(addr(1)).result,
        Err(QueryError::Foreign {
            attempts: 2,
            replies: 2
        })
    ));
}

#[test]
fn an_undecodable_reply_is_reported_instead_of_a_timeout() {
    let mut n = Net::of(opts(100, 0), vec![(addr(1), script())]);
    n.pump(ms(0));
    n.reply(ms(10), addr(1), "bad");
    n.advance(ms(1000));
    assert!(matches!(
        n.outcome(addr(1)).result,
        Err(QueryError::Decode(_))
    ));
}

/// An encode failure ends the query with nothing sent; the batch goes on.
#[test]
fn an_encode_failure_ends_the_query_unsent() {
    let bad = Script {
        unencodable: true,
        ..Script::default()
    };
    let mut n = Net::of(opts(100, 2), vec![(addr(1), bad), (addr(2), script())]);
    n.pump(ms(0));
    assert!(n.sent_at(addr(1)).is_empty());
    assert_eq!(n.sent_at(addr(2)), [ms(0)]);
    let o = n.outcome(addr(1));
    assert!(matches!(
        o.result,
        Err(QueryError::Encode(EncodeError::Invalid(_)))
    ));
    assert_eq!(o.attempts, 0);
    assert!(!n.routes.contains_key(&addr(1)));
}

#[test]
fn a_failed_send_is_reported_as_io_when_nothing_answers() {
    let mut n = Net::of(opts(100, 1), vec![(addr(1), script())]);
    n.send_error = Some(std::io::ErrorKind::NetworkUnreachable);
    n.advance(ms(1000));
    assert_eq!(n.sent.len(), 2, "retried");
    assert!(matches!(n.outcome(addr(1)).result, Err(QueryError::Io(_))));
}

#[test]
fn an_address_family_without_a_socket_is_unsupported() {
    let v6: SocketAddr = "[::1]:5".parse().unwrap();
    let t0 = Instant::now();
    let mut s = Scheduler::new(t0, opts(100, 0), Jobs::exact([(v6, script())].into_iter()))
        .with_families(true, false);
    assert!(s.poll_transmit(t0).is_none());
    assert!(matches!(
        s.poll_outcome().unwrap().result,
        Err(QueryError::Unsupported(a)) if a == v6
    ));
    assert!(s.poll_event().is_none() && s.is_finished());
}

/// A query queued twice (a retry and an `Advance` in one drain) hands out its second attempt
/// only once the first is reported sent.
#[test]
fn a_second_attempt_waits_until_the_first_is_reported() {
    let t0 = Instant::now();
    let mut s = Scheduler::new(
        t0,
        opts(100, 2),
        Jobs::exact([(addr(1), script())].into_iter()),
    );
    let first = s.poll_transmit(t0).unwrap();
    // `step` arrives before the first attempt is reported: the next step is queued.
    s.handle_datagram(t0, addr(1), b"step", t0, &[first.id]);
    assert!(
        s.poll_transmit(t0).is_none(),
        "the first is still being sent"
    );
    s.on_sent(first.id, first.attempt, t0, None);
    let second = s.poll_transmit(t0).unwrap();
    assert!(second.datagrams[0].starts_with(b"step1 "), "the next step");
    // Reporting twice, or an unknown transmit, changes nothing.
    s.on_sent(second.id, second.attempt, t0, None);
    s.on_sent(second.id, second.attempt, t0, None);
    s.on_sent(QueryId(u64::MAX), 0, t0, None);
    assert_eq!(s.in_flight().count(), 1);
}

/// A datagram is handed only to the queries named, and only if they wait on its source: a
/// finished query's id, its slot taken by the next query, finds nothing.
#[test]
fn stale_and_misrouted_ids_are_ignored() {
    let mut n = Net::of(
        opts(1000, 0).with_concurrency(1),
        vec![(addr(1), script()), (addr(2), script())],
    );
    n.pump(ms(0));
    let old = n.routes[&addr(1)].clone();
    n.reply(ms(5), addr(1), "done");
    let new = n.routes[&addr(2)].clone();
    assert_ne!(old, new);
    // The old id from the new query's address, the new id from another address.
    n.s.handle_datagram(n.at(ms(6)), addr(2), b"done", n.at(ms(6)), &old);
    n.s.handle_datagram(n.at(ms(6)), addr(1), b"done", n.at(ms(6)), &new);
    n.pump(ms(6));
    assert_eq!(n.outcomes.len(), 1);
    n.reply(ms(7), addr(2), "done");
    assert_eq!(n.outcomes.len(), 2);
}

/// Several queries of a batch on one address: a datagram one ignores is offered to the next.
#[test]
fn queries_sharing_an_address_each_get_their_answer() {
    let mut n = Net::of(
        opts(1000, 0),
        vec![(addr(1), script()), (addr(1), script())],
    );
    n.pump(ms(0));
    assert_eq!(n.routes[&addr(1)].len(), 2);
    n.reply(ms(3), addr(1), "done");
    n.reply(ms(4), addr(1), "done");
    assert_eq!(n.outcomes.len(), 2);
    assert!(n.routes.is_empty());
}
