//! Progress on stderr while a scan runs (`--progress`).

use std::time::{Duration, Instant};

use crate::view::When;

/// Progress on stderr: a bar on a terminal, a line a second otherwise (`--progress always`).
pub enum Progress {
    Bar(indicatif::ProgressBar),
    Lines {
        total: usize,
        done: usize,
        started: Instant,
        last: Instant,
        /// `done` when the last line was printed.
        said: usize,
    },
}

impl Progress {
    /// Progress for `total` servers, or none (`when`, and whether stderr is a terminal).
    pub fn new(when: When, total: usize) -> Option<Progress> {
        use std::io::IsTerminal;
        let terminal = std::io::stderr().is_terminal();
        match when {
            When::Never => None,
            When::Auto if total < 10 || !terminal => None,
            When::Always if !terminal => Some(Progress::Lines {
                total,
                done: 0,
                started: Instant::now(),
                last: Instant::now(),
                said: 0,
            }),
            _ => {
                let bar = indicatif::ProgressBar::new(total as u64);
                if let Ok(style) = indicatif::ProgressStyle::with_template(
                    "{bar:40} {pos}/{len} servers ({rate}, {eta} left)",
                )
                .map(|s| {
                    s.with_key(
                        "rate",
                        |state: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                            let _ = write!(w, "{:.0}/s", state.per_sec());
                        },
                    )
                }) {
                    bar.set_style(style);
                }
                Some(Progress::Bar(bar))
            }
        }
    }

    /// One more server done.
    pub fn inc(&mut self) {
        match self {
            Progress::Bar(b) => b.inc(1),
            Progress::Lines {
                total,
                done,
                started,
                last,
                said,
            } => {
                *done += 1;
                if last.elapsed() >= Duration::from_secs(1) {
                    *last = Instant::now();
                    *said = *done;
                    Self::line(*done, *total, *started);
                }
            }
        }
    }

    fn line(done: usize, total: usize, started: Instant) {
        let rate = done as f64 / started.elapsed().as_secs_f64().max(1e-3);
        eprintln!("{done}/{total} servers ({rate:.0}/s)");
    }

    /// Clears the bar; the lines end with one for the whole scan (a scan shorter than a
    /// second printed none before).
    pub fn finish(self) {
        match self {
            Progress::Bar(b) => b.finish_and_clear(),
            Progress::Lines {
                total,
                done,
                started,
                said,
                ..
            } => {
                if said != done {
                    Self::line(done, total, started);
                }
            }
        }
    }
}
