//! Waiting for an observable state, never for a fixed time.
//!
//! A test that needs a server to be up, a line to be printed or a record to be listed polls
//! for exactly that with [`until`] and a deadline. Deadlines are generous — they are the
//! point where a test gives up and says what it waited for, not how long things take: the
//! suite runs on a loaded 2-core machine, sometimes as two copies at once.

use std::fmt::Display;
use std::time::{Duration, Instant};

/// How long a real server (OpenArena, DDNet, Nexuiz, PostgreSQL…) may take to start and
/// answer.
pub const STARTUP: Duration = Duration::from_secs(120);

/// How long a state that follows from something the test did (a server listed after its
/// heartbeat, a line printed after a request) may take to be seen.
pub const SETTLE: Duration = Duration::from_secs(60);

/// How often [`until`] asks.
pub const POLL: Duration = Duration::from_millis(50);

/// Calls `probe` every [`POLL`] until it returns `Some`, and returns that.
///
/// # Panics
/// After `cap`, naming `what`.
pub fn until<T>(what: impl Display, cap: Duration, probe: impl FnMut() -> Option<T>) -> T {
    until_every(what, cap, POLL, probe)
}

/// [`until`], asking at most once every `every` (for servers that limit how often one
/// address may ask).
///
/// # Panics
/// After `cap`, naming `what`.
pub fn until_every<T>(
    what: impl Display,
    cap: Duration,
    every: Duration,
    mut probe: impl FnMut() -> Option<T>,
) -> T {
    let deadline = Instant::now() + cap;
    loop {
        let asked = Instant::now();
        if let Some(v) = probe() {
            return v;
        }
        assert!(Instant::now() < deadline, "{what}: not seen within {cap:?}");
        std::thread::sleep(
            every
                .saturating_sub(asked.elapsed())
                .max(Duration::from_millis(5)),
        );
    }
}

/// [`until`] for a condition.
///
/// # Panics
/// After `cap`, naming `what`.
pub fn until_true(what: impl Display, cap: Duration, mut ok: impl FnMut() -> bool) {
    until(what, cap, || ok().then_some(()));
}
