//! The last events, kept for `/api/events` clients that come back: a client sends the id of
//! the last event it read (`Last-Event-ID`, which browsers' `EventSource` send by themselves
//! when they reconnect) and gets the events after it that are still kept, then the live ones.
//! Bounded: at most [`SSE_REPLAY`] events and [`SSE_REPLAY_BYTES`] of their JSON; a client
//! whose last event is older than the oldest kept is told how many it missed.

use std::collections::VecDeque;
use std::sync::Arc;

use tokio::sync::broadcast;

use fragstat::events::EventKind;

use super::Published;

/// Events kept for resuming clients at most.
pub const SSE_REPLAY: usize = 1024;
/// Bytes of their JSON kept at most.
pub const SSE_REPLAY_BYTES: usize = 4 << 20;

/// The last events (see the module documentation).
#[derive(Debug)]
pub struct Replay {
    events: VecDeque<Arc<Published>>,
    bytes: usize,
    max_events: usize,
    max_bytes: usize,
    /// The id the next event gets.
    next: u64,
    /// The oldest id not dropped for the bounds: a resuming client missed the events before
    /// it (those [`Replay::forget`] dropped are not counted as missed).
    covered_from: u64,
}

impl Default for Replay {
    fn default() -> Self {
        Replay::new(SSE_REPLAY, SSE_REPLAY_BYTES)
    }
}

/// What a resuming client gets.
#[derive(Debug)]
pub struct Resume {
    /// The kept events after its last one, oldest first.
    pub backlog: Vec<Arc<Published>>,
    /// Events after its last one no longer kept (`Some(0)`: none missed); `None` when its
    /// last id is not one this tracker gave (it restarted, or the id is made up).
    pub missed: Option<u64>,
    /// The events from now on (the backlog's end onwards).
    pub live: broadcast::Receiver<Arc<Published>>,
}

impl Replay {
    /// An empty buffer of at most `max_events` events and `max_bytes` of JSON.
    pub fn new(max_events: usize, max_bytes: usize) -> Replay {
        Replay {
            events: VecDeque::new(),
            bytes: 0,
            max_events: max_events.max(1),
            max_bytes,
            next: 1,
            covered_from: 1,
        }
    }

    /// The next event's id.
    pub fn next_id(&mut self) -> u64 {
        let id = self.next;
        self.next = self.next.saturating_add(1);
        id
    }

    /// Keeps `p`, dropping the oldest past the bounds.
    pub fn keep(&mut self, p: Arc<Published>) {
        self.bytes += p.json.len();
        self.events.push_back(p);
        while self.events.len() > self.max_events
            || (self.bytes > self.max_bytes && self.events.len() > 1)
        {
            if let Some(old) = self.events.pop_front() {
                self.bytes -= old.json.len();
                self.covered_from = old.id.saturating_add(1);
            }
        }
    }

    /// Drops the kept joins and leaves of players who opted out or were forgotten
    /// ([`crate::privacy`]): a client resuming later is not sent their names. How many went.
    /// (Events already sent cannot be recalled.)
    pub fn forget(&mut self, opt_out: &crate::privacy::OptOut) -> usize {
        if opt_out.is_empty() {
            return 0;
        }
        let before = self.events.len();
        self.events.retain(|p| match &p.event.kind {
            EventKind::PlayerJoined(pl) | EventKind::PlayerLeft(pl) => !opt_out.matches(&pl.name),
            _ => true,
        });
        self.bytes = self.events.iter().map(|p| p.json.len()).sum();
        before - self.events.len()
    }

    /// The events kept after `last` (0: from the first), and `live` for the rest.
    pub fn after(&self, last: u64, live: broadcast::Receiver<Arc<Published>>) -> Resume {
        if last >= self.next {
            return Resume {
                backlog: Vec::new(),
                missed: None,
                live,
            };
        }
        let missed = self.covered_from.saturating_sub(last.saturating_add(1));
        Resume {
            backlog: self
                .events
                .iter()
                .filter(|p| p.id > last)
                .cloned()
                .collect(),
            missed: Some(missed),
            live,
        }
    }

    /// Events kept.
    pub fn len(&self) -> usize {
        self.events.len()
    }

    /// True when none is kept.
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fragstat::events::{Event, EventKind};

    fn event(r: &mut Replay, json_len: usize) {
        let id = r.next_id();
        r.keep(Arc::new(Published {
            id,
            event: Event::new(
                1,
                "127.0.0.1:1",
                "q3",
                EventKind::SlotsChanged { from: 1, to: 2 },
            ),
            json: "x".repeat(json_len),
        }));
    }

    #[test]
    fn resumes_after_the_last_id_and_counts_what_is_gone() {
        let (tx, _) = broadcast::channel(4);
        let mut r = Replay::new(5, 1000);
        for _ in 0..8 {
            event(&mut r, 10);
        }
        assert_eq!(r.len(), 5, "ids 4 to 8 kept");
        let ids = |res: &Resume| res.backlog.iter().map(|p| p.id).collect::<Vec<_>>();
        let res = r.after(5, tx.subscribe());
        assert_eq!((ids(&res), res.missed), (vec![6, 7, 8], Some(0)));
        let res = r.after(0, tx.subscribe());
        assert_eq!((ids(&res), res.missed), (vec![4, 5, 6, 7, 8], Some(3)));
        let res = r.after(8, tx.subscribe());
        assert_eq!((ids(&res), res.missed), (vec![], Some(0)));
        let res = r.after(9, tx.subscribe());
        assert_eq!(
            (ids(&res), res.missed),
            (vec![], None),
            "an id not given yet"
        );
        // Bounded in bytes too (the newest always kept).
        let mut b = Replay::new(100, 100);
        for _ in 0..10 {
            event(&mut b, 30);
        }
        assert_eq!(b.len(), 3);
        event(&mut b, 500);
        assert_eq!(b.len(), 1);
    }

    #[test]
    fn forgotten_players_leave_the_buffer_and_are_not_counted_missed() {
        use fragstat::core::model::{Dialect, Text};
        use fragstat::events::EventPlayer;
        let (tx, _) = broadcast::channel(4);
        let mut r = Replay::new(100, 100_000);
        let player =
            |name: &str| EventPlayer::new(Text::new(name.as_bytes().to_vec(), Dialect::Quake));
        for (i, kind) in [
            EventKind::PlayerJoined(player("^1Ali^7ce")),
            EventKind::PlayerJoined(player("Bob")),
            EventKind::SlotsChanged { from: 1, to: 2 },
            EventKind::PlayerLeft(player("alice")),
        ]
        .into_iter()
        .enumerate()
        {
            let id = r.next_id();
            r.keep(Arc::new(Published {
                id,
                event: Event::new(i as i64, "127.0.0.1:1", "q3", kind),
                json: "x".repeat(10),
            }));
        }
        let opt_out = crate::privacy::OptOut::new(["ALICE"]);
        assert_eq!(r.forget(&opt_out), 2);
        assert_eq!(r.forget(&opt_out), 0);
        let res = r.after(0, tx.subscribe());
        let ids: Vec<u64> = res.backlog.iter().map(|p| p.id).collect();
        assert_eq!((ids, res.missed), (vec![2, 3], Some(0)));
    }
}
