//! DDNet's limits on connectionless info replies, for the emulated DDNet server.
//!
//! ddnet `src/engine/server/server.cpp` at 28baa427 (20.0-rc6), lines 2260-2279
//! `CServer::RateLimitServerInfoConnless`: one count for every requester and every info
//! request (0.6 `gie3`, the extended `xe` one, `fstd`, 0.7 `gie3`; lines 2974 and 2989), in
//! a window that starts again when more than a second has passed since it began. Above
//! `sv_server_info_replies_per_second` (500) a request gets no reply; above
//! `sv_server_info_per_second` (50) the info goes out without its clients
//! (`src/engine/shared/config_variables.h` lines 496-497; 0 means no limit).

use std::time::{Duration, Instant};

/// How many info replies a second the server sends in full, and at all; 0: no limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InfoLimits {
    /// `sv_server_info_per_second`: replies with their clients.
    pub per_second: u32,
    /// `sv_server_info_replies_per_second`: replies of any size.
    pub replies_per_second: u32,
}

impl InfoLimits {
    /// DDNet 20's defaults: 50 complete replies, 500 replies a second.
    pub const DDNET: InfoLimits = InfoLimits {
        per_second: 50,
        replies_per_second: 500,
    };

    /// No limit (Teeworlds; `fragstat serve --no-rate-limit`).
    pub const OFF: InfoLimits = InfoLimits {
        per_second: 0,
        replies_per_second: 0,
    };
}

/// What one info request gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// The info with its clients.
    Full,
    /// The info with its counts but no client.
    WithoutClients,
    /// No reply.
    Nothing,
}

/// The one count of the current window (two numbers: bounded whoever sends).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Window {
    first: Option<Instant>,
    requests: u32,
}

impl Window {
    /// Counts a request at `now` and says what it gets.
    pub(crate) fn answer(&mut self, limits: InfoLimits, now: Instant) -> Answer {
        if limits == InfoLimits::OFF {
            return Answer::Full;
        }
        // `if(Now > m_ServerInfoFirstRequest + time_freq())`: a new window.
        if self
            .first
            .is_none_or(|f| now.saturating_duration_since(f) > Duration::from_secs(1))
        {
            self.first = Some(now);
            self.requests = 0;
        }
        self.requests = self.requests.saturating_add(1);
        if limits.replies_per_second != 0 && self.requests > limits.replies_per_second {
            Answer::Nothing
        } else if limits.per_second == 0 || self.requests <= limits.per_second {
            Answer::Full
        } else {
            Answer::WithoutClients
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fifty_full_then_without_clients_then_nothing_then_a_new_second() {
        let t0 = Instant::now();
        let mut w = Window::default();
        let got: Vec<Answer> = (0..600).map(|_| w.answer(InfoLimits::DDNET, t0)).collect();
        assert!(got[..50].iter().all(|a| *a == Answer::Full));
        assert!(got[50..500].iter().all(|a| *a == Answer::WithoutClients));
        assert!(got[500..].iter().all(|a| *a == Answer::Nothing));
        // Still the same window at exactly one second, a new one after it.
        let one = t0 + Duration::from_secs(1);
        assert_eq!(w.answer(InfoLimits::DDNET, one), Answer::Nothing);
        let later = one + Duration::from_millis(1);
        assert_eq!(w.answer(InfoLimits::DDNET, later), Answer::Full);
        let mut off = Window::default();
        assert!((0..1000).all(|_| off.answer(InfoLimits::OFF, t0) == Answer::Full));
        let only_full = InfoLimits {
            per_second: 2,
            replies_per_second: 0,
        };
        let mut w = Window::default();
        let got: Vec<Answer> = (0..4).map(|_| w.answer(only_full, t0)).collect();
        assert_eq!(
            got,
            [
                Answer::Full,
                Answer::Full,
                Answer::WithoutClients,
                Answer::WithoutClients
            ]
        );
    }
}
