//! Output off the receive path: records go to a writer thread over a channel, so a slow
//! reader (a pipe, a terminal) never stalls the runtime that receives replies. NDJSON lines
//! go to the writer in pieces of 256 KiB, and at most [`FLUSH_AFTER`] after they were made
//! (the writer flushes whenever its channel runs dry); tables and JSON arrays are printed
//! when the scan ends or is interrupted, in the order the servers were given.

use std::io::{self, Write};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use fragstat::core::model::MasterEntry;
use fragstat::core::record::Record;

use crate::table::Totals;
use crate::view::{Filter, Sort};
use crate::Format;

/// What is shown and how (the scan's display options).
#[derive(Clone, Debug, Default)]
pub struct View {
    /// Player rows (table), player lines (csv, tsv).
    pub players: bool,
    /// Server variables (table; a `rules` column in csv, tsv).
    pub rules: bool,
    /// ANSI colours in the table.
    pub color: bool,
    /// A header line (table, csv, tsv).
    pub header: bool,
    /// Sort keys; empty: input order.
    pub sort: Vec<Sort>,
    /// Which servers are shown.
    pub filter: Filter,
}

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
    /// The scan was interrupted: `total` servers, `unasked` of them never answered or asked.
    Interrupted { total: usize, unasked: usize },
    /// What the table's footer counts (every server, shown or not).
    Totals(Totals),
}

/// The writer thread and its channel.
///
/// NDJSON is serialized where the records are made and only the bytes cross to the writer:
/// records are then freed on the thread that allocated them (freeing them on the writer
/// defeated the allocator's per-thread caches: 5 % fewer instructions and about a fifth less
/// CPU per scan of 10,000 servers, docs/benchmarks.md), and the writer only writes.
pub struct Output {
    filter: Filter,
    /// Every record counted, before the filters.
    totals: Totals,
    /// Lines are written as they come (NDJSON without --sort).
    streaming: bool,
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
    /// Starts the writer thread. `masters`: the reports of the masters the servers came from
    /// (`fragstat master --probe`): JSON writes them beside the servers
    /// (`{"masters": […], "servers": […]}`), NDJSON as one line each first.
    pub fn start(format: Format, view: View, masters: Option<&[fragstat::MasterReport]>) -> Output {
        let (tx, rx) = mpsc::channel::<Chunk>();
        let (spare_tx, spare) = mpsc::channel::<Vec<u8>>();
        let streaming = format == Format::Ndjson && view.sort.is_empty();
        let reports: Option<Vec<serde_json::Value>> =
            masters.map(|m| m.iter().map(fragstat::MasterReport::to_json).collect());
        let filter = view.filter;
        let thread = std::thread::spawn(move || -> Result<(), Stop> {
            let stdout = io::stdout();
            let mut out = io::BufWriter::with_capacity(1 << 16, stdout.lock());
            if let (Format::Ndjson, Some(reports)) = (format, &reports) {
                for r in reports {
                    serde_json::to_writer(&mut out, &serde_json::json!({ "master": r }))
                        .map_err(io::Error::from)?;
                    out.write_all(b"\n")?;
                }
                out.flush()?;
            }
            let mut all: Vec<(usize, Record)> = Vec::new();
            let mut interrupted = None;
            let mut totals = Totals::default();
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
                        Chunk::Interrupted { total, unasked } => {
                            interrupted = Some((total, unasked));
                        }
                        Chunk::Totals(t) => totals = t,
                    }
                    next = rx.try_recv().ok();
                }
                if streaming {
                    out.flush()?;
                }
            }
            if view.sort.is_empty() {
                all.sort_by_key(|(pos, _)| *pos);
            } else {
                crate::view::sort(&mut all, &view.sort);
            }
            let records: Vec<Record> = all.into_iter().map(|(_, r)| r).collect();
            match format {
                Format::Ndjson => {
                    for r in &records {
                        let mut line = Vec::new();
                        r.write_json(&mut line);
                        line.push(b'\n');
                        out.write_all(&line)?;
                    }
                }
                Format::Json => {
                    match &reports {
                        Some(masters) => serde_json::to_writer_pretty(
                            &mut out,
                            &serde_json::json!({"masters": masters, "servers": records}),
                        ),
                        None => serde_json::to_writer_pretty(&mut out, &records),
                    }
                    .map_err(io::Error::from)?;
                    out.write_all(b"\n")?;
                }
                Format::Csv | Format::Tsv => {
                    let delimiter = if format == Format::Csv { b',' } else { b'\t' };
                    let bytes = crate::view::delimited(
                        &records,
                        delimiter,
                        view.header,
                        view.players,
                        view.rules,
                    )
                    .map_err(|e| io::Error::other(e.to_string()))?;
                    out.write_all(&bytes)?;
                }
                Format::Table => {
                    out.write_all(crate::table::servers(&records, &view).as_bytes())?;
                    // No footer without the header (qstat -nh): a script reading the rows
                    // gets rows only.
                    if view.header {
                        out.write_all(totals.footer().as_bytes())?;
                    }
                }
            }
            out.flush()?;
            // The summary goes with the table; for the other formats (and a table without
            // its header) to stderr, so a pipe gets only data.
            if format == Format::Table && view.header {
                if let Some((total, unasked)) = interrupted {
                    writeln!(
                        out,
                        "interrupted: {unasked} of {total} servers not asked or not answered yet"
                    )?;
                    out.flush()?;
                }
            } else if let Some((total, unasked)) = interrupted {
                eprintln!(
                    "interrupted: {unasked} of {total} servers not asked or not answered yet"
                );
            }
            Ok(())
        });
        Output {
            filter,
            totals: Totals::default(),
            streaming,
            tx: Some(tx),
            thread: Some(thread),
            pending: Vec::new(),
            lines: Vec::new(),
            since: None,
            spare,
            writer_gone: false,
        }
    }

    /// Says the scan was interrupted: of `total` servers, `unasked` have no result.
    pub fn interrupted(&mut self, total: usize, unasked: usize) {
        if let Some(tx) = &self.tx {
            let _ = tx.send(Chunk::Interrupted { total, unasked });
        }
    }

    /// Queues one record (at position `pos` of the input) for the writer; [`Output::send`]
    /// hands NDJSON lines over when they are [`Output::due`].
    pub fn record(&mut self, pos: usize, r: Record) {
        let keep = self.filter.keeps(&r);
        self.totals.add(&r, keep);
        if !keep {
            return;
        }
        if self.streaming {
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
            let _ = tx.send(Chunk::Totals(self.totals));
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

/// Prints a master's merged list (no probing): JSON is always `{"masters": […], "servers":
/// […]}` (an empty list when every master failed), NDJSON a line per master
/// (`{"master": {…}}`) and then one per server; each server with `listed_by`, the masters
/// that listed it.
pub fn master_list(
    game: &str,
    format: Format,
    list: &fragstat::MasterList,
    view: &View,
) -> Result<(), Stop> {
    let mut out = io::BufWriter::new(io::stdout().lock());
    let servers: Vec<&MasterEntry> = list.entries().iter().map(|l| &l.entry).collect();
    let masters = list.reports().len();
    let from = format!(
        "{} from {}",
        crate::scan::count(servers.len(), "server"),
        crate::scan::count(masters, "master")
    );
    match format {
        // Lists that carry each server's info (DDNet's HTTP master) show as a browser table.
        Format::Table | Format::Csv | Format::Tsv
            if !servers.is_empty() && servers.iter().all(|s| s.info.is_some()) =>
        {
            let mut totals = Totals::default();
            let records: Vec<Record> = servers
                .iter()
                .filter_map(|s| {
                    let info = s.info.clone()?;
                    Some(Record::online(Some(s.addr.to_string()), game, info, None))
                })
                .filter(|r| {
                    let keep = view.filter.keeps(r);
                    totals.add(r, keep);
                    keep
                })
                .collect();
            if format == Format::Table {
                out.write_all(crate::table::servers(&records, view).as_bytes())?;
                if view.header {
                    out.write_all(totals.footer().as_bytes())?;
                }
            } else {
                let d = if format == Format::Csv { b',' } else { b'\t' };
                let bytes =
                    crate::view::delimited(&records, d, view.header, view.players, view.rules)
                        .map_err(|e| io::Error::other(e.to_string()))?;
                out.write_all(&bytes)?;
            }
            out.flush()?;
            eprintln!("{from}");
        }
        Format::Table | Format::Csv | Format::Tsv => {
            if view.header && format != Format::Table {
                writeln!(out, "address")?;
            }
            for s in servers {
                writeln!(out, "{}", s.addr)?;
            }
            out.flush()?;
            eprintln!("{from}");
        }
        Format::Json => {
            serde_json::to_writer_pretty(&mut out, &list.to_json()).map_err(io::Error::from)?;
            writeln!(out)?;
        }
        Format::Ndjson => {
            let mut json = list.to_json();
            let mut each = |k: &str| match json[k].take() {
                serde_json::Value::Array(a) => a,
                _ => Vec::new(),
            };
            for r in each("masters") {
                serde_json::to_writer(&mut out, &serde_json::json!({ "master": r }))
                    .map_err(io::Error::from)?;
                writeln!(out)?;
            }
            for s in each("servers") {
                serde_json::to_writer(&mut out, &s).map_err(io::Error::from)?;
                writeln!(out)?;
            }
        }
    }
    out.flush()?;
    Ok(())
}
