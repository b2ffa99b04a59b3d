//! Adaptive retransmission timeouts, sans-IO: the smoothed round-trip time and its variation
//! (RFC 6298, as TCP and QUIC compute them), from which the engine derives how long to wait
//! for a reply before retrying.
//!
//! ```
//! use std::time::Duration;
//! use fragstat_core::rto::RttEstimator;
//!
//! let ms = Duration::from_millis;
//! let mut e = RttEstimator::new(ms(10), ms(500));
//! assert_eq!(e.rto(), None, "no sample yet: the caller's fixed timeout applies");
//! e.sample(ms(40));
//! // First sample: SRTT = 40, RTTVAR = 20, RTO = 40 + 4 * 20.
//! assert_eq!(e.rto(), Some(ms(120)));
//! // Each retry waits twice as long, never past the upper bound.
//! assert_eq!(e.backoff(1), Some(ms(240)));
//! assert_eq!(e.backoff(3), Some(ms(500)));
//! ```

use std::time::Duration;

/// The clock granularity added when the variation is tiny (RFC 6298's `G`).
pub const GRANULARITY: Duration = Duration::from_millis(1);

/// Smoothed RTT and RTT variation over the replies of one batch, and the retransmission
/// timeout derived from them: `RTO = SRTT + max(G, 4 · RTTVAR)`, clamped to `[min, max]`.
///
/// Feed it only unambiguous samples (Karn's rule): the RTT of a reply whose attempt is known,
/// or of a query that sent a single attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RttEstimator {
    srtt: Option<Duration>,
    rttvar: Duration,
    min: Duration,
    max: Duration,
}

impl RttEstimator {
    /// An estimator with no sample yet whose timeouts stay within `[min, max]` (`max` wins when
    /// `min > max`).
    pub fn new(min: Duration, max: Duration) -> Self {
        RttEstimator {
            srtt: None,
            rttvar: Duration::ZERO,
            min: min.min(max),
            max,
        }
    }

    /// Adds one round-trip time measurement.
    pub fn sample(&mut self, rtt: Duration) {
        match self.srtt {
            None => {
                self.srtt = Some(rtt);
                self.rttvar = rtt / 2;
            }
            Some(srtt) => {
                let err = srtt.abs_diff(rtt);
                // RTTVAR = 3/4 RTTVAR + 1/4 |SRTT - R|; SRTT = 7/8 SRTT + 1/8 R.
                self.rttvar = (self.rttvar.saturating_mul(3) + err) / 4;
                self.srtt = Some((srtt.saturating_mul(7) + rtt) / 8);
            }
        }
    }

    /// The smoothed round-trip time (`None` before the first sample).
    pub fn srtt(&self) -> Option<Duration> {
        self.srtt
    }

    /// The round-trip time variation.
    pub fn rttvar(&self) -> Duration {
        self.rttvar
    }

    /// The retransmission timeout of a first attempt, `None` before the first sample.
    pub fn rto(&self) -> Option<Duration> {
        self.backoff(0)
    }

    /// The timeout of retry number `retry` (0: the first attempt): the RTO doubled per retry
    /// (exponential back-off), within `[min, max]`. `None` before the first sample.
    pub fn backoff(&self, retry: u32) -> Option<Duration> {
        let srtt = self.srtt?;
        let base = srtt.saturating_add(self.rttvar.saturating_mul(4).max(GRANULARITY));
        let factor = 1u32.checked_shl(retry.min(31)).unwrap_or(u32::MAX);
        Some(base.saturating_mul(factor).clamp(self.min, self.max))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn follows_rfc_6298() {
        let mut e = RttEstimator::new(ms(1), ms(60_000));
        e.sample(ms(100));
        assert_eq!((e.srtt(), e.rttvar()), (Some(ms(100)), ms(50)));
        assert_eq!(e.rto(), Some(ms(300)));
        e.sample(ms(200));
        // RTTVAR = (3·50 + 100) / 4 = 62.5; SRTT = (7·100 + 200) / 8 = 112.5.
        assert_eq!(e.rttvar(), Duration::from_micros(62_500));
        assert_eq!(e.srtt(), Some(Duration::from_micros(112_500)));
        assert_eq!(e.rto(), Some(Duration::from_micros(362_500)));
    }

    #[test]
    fn converges_on_a_steady_rtt_and_adds_the_granularity() {
        let mut e = RttEstimator::new(Duration::ZERO, ms(1000));
        for _ in 0..200 {
            e.sample(ms(20));
        }
        assert_eq!(e.srtt(), Some(ms(20)));
        assert!(e.rttvar() < Duration::from_micros(10), "{:?}", e.rttvar());
        assert_eq!(e.rto(), Some(ms(20) + GRANULARITY));
    }

    #[test]
    fn bounds_and_back_off() {
        let mut e = RttEstimator::new(ms(25), ms(500));
        assert_eq!(e.backoff(2), None);
        e.sample(Duration::from_micros(50));
        assert_eq!(e.rto(), Some(ms(25)), "lower bound");
        assert_eq!(e.backoff(1), Some(ms(25)));
        let mut e = RttEstimator::new(ms(5), ms(500));
        e.sample(ms(10));
        assert_eq!(
            (0..6).map(|r| e.backoff(r).unwrap()).collect::<Vec<_>>(),
            [ms(30), ms(60), ms(120), ms(240), ms(480), ms(500)]
        );
        assert_eq!(e.backoff(u32::MAX), Some(ms(500)), "no overflow");
        e.sample(ms(10_000));
        assert_eq!(e.rto(), Some(ms(500)), "upper bound");
        // A minimum above the maximum gives way.
        let mut e = RttEstimator::new(ms(900), ms(500));
        e.sample(ms(1));
        assert_eq!(e.rto(), Some(ms(500)));
    }
}
