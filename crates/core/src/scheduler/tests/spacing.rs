//! Spacing queries to one server to its engine's limit ([`crate::manners`]), and replies to
//! sibling queries.

use super::*;
use crate::manners::{Ledger, Spacing};

/// A [`Script`] to a server that takes `burst` queries at once, then one per 100 ms; a
/// datagram `sibling` is the game's reply to another query.
struct Limited(Script, u32);

impl Exchange for Limited {
    type Output = String;
    fn requests(&mut self, attempt: u32) -> Result<Vec<Vec<u8>>, EncodeError> {
        self.0.requests(attempt)
    }
    fn on_datagram(&mut self, d: &[u8]) -> Verdict<String> {
        self.0.on_datagram(d)
    }
    fn spacing(&self) -> Option<Spacing> {
        Some(Spacing {
            burst: self.1,
            interval: ms(100),
        })
    }
    fn answers_another_query(&self, d: &[u8]) -> bool {
        d == b"sibling"
    }
}

fn limited(burst: u32) -> Limited {
    Limited(script(), burst)
}

#[test]
fn queries_to_one_server_wait_for_its_budget_and_others_do_not() {
    let (a, b) = (addr(1), addr(2));
    let mut jobs: Vec<_> = (0..5).map(|_| (a, limited(2))).collect();
    jobs.push((b, limited(2)));
    let mut net = Net::of(opts(1000, 0), jobs);
    net.pump(ms(0));
    assert_eq!(net.sent_at(a), vec![ms(0), ms(0)]);
    assert_eq!(net.sent_at(b), vec![ms(0)], "another server is not held up");
    net.advance(ms(350));
    assert_eq!(
        net.sent_at(a),
        vec![ms(0), ms(0), ms(100), ms(200), ms(300)]
    );
    // Each is answered: none was sent to be dropped.
    for _ in 0..5 {
        net.reply(ms(360), a, "done");
    }
    assert_eq!(net.outcomes.iter().filter(|o| o.result.is_ok()).count(), 5);
}

#[test]
fn batches_sharing_a_ledger_space_their_queries_together() {
    let a = addr(1);
    let ledger = Ledger::new();
    let o = opts(1000, 0).with_ledger(Some(ledger.clone()));
    let mut first = Net::of(o.clone(), vec![(a, limited(2)), (a, limited(2))]);
    first.pump(ms(0));
    let mut second = Net::new(o, Jobs::exact(vec![(a, limited(2))].into_iter()));
    second.t0 = first.t0;
    second.pump(ms(0));
    assert_eq!(second.sent_at(a), vec![], "the first batch used the budget");
    second.advance(ms(150));
    assert_eq!(second.sent_at(a), vec![ms(100)]);
}

#[test]
fn a_held_attempt_still_ends_at_the_deadline() {
    let a = addr(1);
    let o = opts(1000, 0).with_deadline(Some(ms(50)));
    let mut net = Net::of(o, vec![(a, limited(1)), (a, limited(1))]);
    net.pump(ms(0));
    net.advance(ms(60));
    assert_eq!(net.sent_at(a), vec![ms(0)]);
    assert!(net
        .outcomes
        .iter()
        .all(|o| matches!(o.result, Err(QueryError::Deadline))));
}

#[test]
fn a_reply_to_a_sibling_query_is_not_foreign() {
    let a = addr(1);
    let mut net = Net::of(opts(100, 1), vec![(a, limited(5))]);
    net.pump(ms(0));
    net.reply(ms(10), a, "sibling");
    net.advance(ms(100));
    net.reply(ms(110), a, "sibling");
    net.advance(ms(300));
    assert!(
        matches!(
            net.outcome(a).result,
            Err(QueryError::Timeout { attempts: 2 })
        ),
        "{:?}",
        net.outcome(a).result
    );
    // Another game's datagram still is.
    let mut net = Net::of(opts(100, 0), vec![(a, limited(5))]);
    net.pump(ms(0));
    net.reply(ms(10), a, "hello");
    net.advance(ms(200));
    assert!(matches!(
        net.outcome(a).result,
        Err(QueryError::Foreign { replies: 1, .. })
    ));
}
