//! Output off the receive path: records go to a writer thread over a channel, so a slow
//! reader (a pipe, a terminal) never stalls the runtime that receives replies. NDJSON lines
//! go to the writer in pieces of 256 KiB, and at most [`FLUSH_AFTER`] after they were made
//! (the writer flushes whenever its channel runs dry); tables and JSON arrays are printed
//! when the scan ends or is interrupted, in the order the servers were given.

use std::io::{self, Write};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use fragstat::core::model::{MasterEntry, Record};

use crate::Format;

/// Why output stopped.
#[derive(Debug, thiserror::Error)]
pub enum Stop {
    /// The reader went away (`| head`): stop quietly, exit 0.
    #[error("broken pipe")]
    BrokenPipe,
    /// Any other write error.
    #[error("writing output: {0}")]
    Io(io::Error),
}

impl From<io::Error> for Stop {
    fn from(e: io::Error) -> Self {
        if e.kind() == io::ErrorKind::BrokenPipe {
            Stop::BrokenPipe
        } else {
            Stop::Io(e)
        }
    }
}

/// True when `e` (anywhere in its chain) is a broken pipe.
pub fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<io::Error>()
            .is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
            || matches!(c.downcast_ref::<Stop>(), Some(Stop::BrokenPipe))
    })
}

/// Writes one line to stdout.
pub fn print_line(s: &str) -> Result<(), Stop> {
    let mut out = io::stdout().lock();
    out.write_all(s.as_bytes())?;
    out.write_all(b"\n")?;
    out.flush()?;
    Ok(())
}

/// What the scan hands the writer thread.
enum Chunk {
    /// NDJSON lines, serialized on the scan's thread.
    Lines(Vec<u8>),
    /// Records for a table or JSON array, printed when the scan ends.
    Records(Vec<(usize, Record)>),
}

/// The writer thread and its channel.
///
/// NDJSON is serialized where the records are made and only the bytes cross to the writer:
/// records are then freed on the thread that allocated them (freeing them on the writer
/// defeated the allocator's per-thread caches: 5 % fewer instructions and about a fifth less
/// CPU per scan of 10,000 servers, docs/benchmarks.md), and the writer only writes.
pub struct Output {
    format: Format,
    tx: Option<mpsc::Sender<Chunk>>,
    thread: Option<JoinHandle<Result<(), Stop>>>,
    /// Records for a table or JSON array: kept here until the scan ends ([`Output::finish`]),
    /// since nothing is printed before then.
    pending: Vec<(usize, Record)>,
    /// NDJSON lines not yet handed over: they go when there are [`LINES_CHUNK`] bytes, or
    /// [`FLUSH_AFTER`] after the first of them ([`Output::due`]). Handing over every burst
    /// of replies woke the writer thread hundreds of times per 10,000 servers, which cost
    /// more CPU than the writing (docs/benchmarks.md).
    lines: Vec<u8>,
    /// When the first line of `lines` was made.
    since: Option<Instant>,
    /// Buffers the writer has written, back for reuse.
    spare: mpsc::Receiver<Vec<u8>>,
    /// A hand-over failed: the writer stopped (its error comes from [`Output::finish`]).
    writer_gone: bool,
}

/// NDJSON bytes handed to the writer at most this many at a time (plus one record).
const LINES_CHUNK: usize = 256 << 10;

/// The longest an NDJSON line waits before it goes to the writer: a reader sees each server
/// within this of its answer.
pub const FLUSH_AFTER: Duration = Duration::from_millis(20);

impl Output {
    /// Starts the writer thread.
    pub fn start(format: Format, players: bool, rules: bool, color: bool) -> Output {
        let (tx, rx) = mpsc::channel::<Chunk>();
        let (spare_tx, spare) = mpsc::channel::<Vec<u8>>();
        let thread = std::thread::spawn(move || -> Result<(), Stop> {
            let stdout = io::stdout();
            let mut out = io::BufWriter::with_capacity(1 << 16, stdout.lock());
            let mut all: Vec<(usize, Record)> = Vec::new();
            while let Ok(first) = rx.recv() {
                let mut next = Some(first);
                while let Some(chunk) = next {
                    match chunk {
                        Chunk::Lines(mut bytes) => {
                            out.write_all(&bytes)?;
                            bytes.clear();
                            let _ = spare_tx.send(bytes);
                        }
                        Chunk::Records(records) => all.extend(records),
                    }
                    next = rx.try_recv().ok();
                }
                if format == Format::Ndjson {
                    out.flush()?;
                }
            }
            all.sort_by_key(|(pos, _)| *pos);
            let records: Vec<Record> = all.into_iter().map(|(_, r)| r).collect();
            match format {
                Format::Ndjson => {}
                Format::Json => {
                    serde_json::to_writer_pretty(&mut out, &records).map_err(io::Error::from)?;
                    out.write_all(b"\n")?;
                }
                Format::Table => {
                    out.write_all(
                        crate::table::servers(&records, players, rules, color).as_bytes(),
                    )?;
                }
            }
            out.flush()?;
            Ok(())
        });
        Output {
            format,
            tx: Some(tx),
            thread: Some(thread),
            pending: Vec::new(),
            lines: Vec::new(),
            since: None,
            spare,
            writer_gone: false,
        }
    }

    /// Queues one record (at position `pos` of the input) for the writer; [`Output::send`]
    /// hands NDJSON lines over when they are [`Output::due`].
    pub fn record(&mut self, pos: usize, r: Record) {
        if self.format == Format::Ndjson {
            if self.lines.capacity() == 0 {
                self.lines = self
                    .spare
                    .try_recv()
                    .unwrap_or_else(|_| Vec::with_capacity(LINES_CHUNK + 4096));
            }
            if self.since.is_none() {
                self.since = Some(Instant::now());
            }
            // The bytes serde_json writes for the record, without serde's per-field work
            // (docs/benchmarks.md).
            r.write_json(&mut self.lines);
            self.lines.push(b'\n');
            // A long burst goes over in pieces: buffers stay small enough for the allocator to
            // reuse (a megabyte buffer per burst was mapped, faulted in and unmapped each
            // time), and memory stays bounded.
            if self.lines.len() >= LINES_CHUNK {
                self.since = None;
                let chunk = Chunk::Lines(std::mem::take(&mut self.lines));
                if self.tx.as_ref().is_none_or(|tx| tx.send(chunk).is_err()) {
                    self.writer_gone = true;
                }
            }
        } else {
            self.pending.push((pos, r));
        }
    }

    /// When the NDJSON lines queued here must go to the writer ([`Output::send`] hands them
    /// over from then on); `None` when none wait.
    pub fn due(&self) -> Option<Instant> {
        self.since.map(|t| t + FLUSH_AFTER)
    }

    /// Hands the queued NDJSON lines to the writer if they are due at `now`; reports a writer
    /// that stopped (a closed pipe, a write error).
    pub fn send(&mut self, now: Instant) -> Result<(), Stop> {
        if self.writer_gone {
            return self.finish();
        }
        if self.due().is_none_or(|due| due > now) {
            return Ok(());
        }
        self.since = None;
        let chunk = Chunk::Lines(std::mem::take(&mut self.lines));
        let sent = self.tx.as_ref().is_some_and(|tx| tx.send(chunk).is_ok());
        if sent {
            Ok(())
        } else {
            // The writer ended early: say why.
            self.finish()
        }
    }

    /// Hands over what is queued, closes the channel and waits for the writer to print what
    /// it has.
    pub fn finish(&mut self) -> Result<(), Stop> {
        if let Some(tx) = &self.tx {
            if !self.lines.is_empty() {
                let _ = tx.send(Chunk::Lines(std::mem::take(&mut self.lines)));
            }
            if !self.pending.is_empty() {
                let _ = tx.send(Chunk::Records(std::mem::take(&mut self.pending)));
            }
        }
        self.tx = None;
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(r)) => r,
            Some(Err(_)) => Err(Stop::Io(io::Error::other("output thread failed"))),
            None => Err(Stop::BrokenPipe),
        }
    }
}

/// Prints a master's merged list (no probing).
pub fn master_list(
    game: &str,
    format: Format,
    servers: &[MasterEntry],
    report: &[serde_json::Value],
    masters: usize,
) -> Result<(), Stop> {
    let mut out = io::BufWriter::new(io::stdout().lock());
    match format {
        // Lists that carry each server's info (DDNet's HTTP master) show as a browser table.
        Format::Table if !servers.is_empty() && servers.iter().all(|s| s.info.is_some()) => {
            let records: Vec<Record> = servers
                .iter()
                .filter_map(|s| {
                    let info = s.info.clone()?;
                    Some(Record::online(Some(s.addr.to_string()), game, info, None))
                })
                .collect();
            out.write_all(
                crate::table::servers(&records, false, false, crate::color_stdout()).as_bytes(),
            )?;
            out.flush()?;
            eprintln!("{} servers from {masters} masters", servers.len());
        }
        Format::Table => {
            for s in servers {
                writeln!(out, "{}", s.addr)?;
            }
            out.flush()?;
            eprintln!("{} servers from {masters} masters", servers.len());
        }
        Format::Json => {
            serde_json::to_writer_pretty(
                &mut out,
                &serde_json::json!({"masters": report, "servers": servers}),
            )
            .map_err(io::Error::from)?;
            writeln!(out)?;
        }
        Format::Ndjson => {
            for s in servers {
                serde_json::to_writer(&mut out, s).map_err(io::Error::from)?;
                writeln!(out)?;
            }
        }
    }
    out.flush()?;
    Ok(())
}
