//! Output off the receive path: records go to a writer thread over a channel, so a slow
//! reader (a pipe, a terminal) never stalls the runtime that receives replies. NDJSON lines
//! are written as they come (flushed whenever the channel runs dry); tables and JSON arrays
//! are printed when the scan ends or is interrupted, in the order the servers were given.

use std::io::{self, Write};
use std::sync::mpsc;
use std::thread::JoinHandle;

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

/// The writer thread and its channel.
pub struct Output {
    tx: Option<mpsc::Sender<Vec<(usize, Record)>>>,
    thread: Option<JoinHandle<Result<(), Stop>>>,
    /// Records not yet handed over: they go to the writer in one message per burst
    /// ([`Output::send`]), so a burst of replies costs one wake-up of the writer, not one each.
    pending: Vec<(usize, Record)>,
}

impl Output {
    /// Starts the writer thread.
    pub fn start(format: Format, players: bool, rules: bool, color: bool) -> Output {
        let (tx, rx) = mpsc::channel::<Vec<(usize, Record)>>();
        let thread = std::thread::spawn(move || -> Result<(), Stop> {
            let stdout = io::stdout();
            let mut out = io::BufWriter::with_capacity(1 << 16, stdout.lock());
            let mut all: Vec<(usize, Record)> = Vec::new();
            while let Ok(first) = rx.recv() {
                let mut next = Some(first);
                while let Some(chunk) = next {
                    if format == Format::Ndjson {
                        for (_, r) in chunk {
                            serde_json::to_writer(&mut out, &r).map_err(io::Error::from)?;
                            out.write_all(b"\n")?;
                        }
                    } else {
                        all.extend(chunk);
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
            tx: Some(tx),
            thread: Some(thread),
            pending: Vec::new(),
        }
    }

    /// Queues one record (at position `pos` of the input) for the writer; [`Output::send`]
    /// hands the queue over.
    pub fn record(&mut self, pos: usize, r: Record) {
        self.pending.push((pos, r));
    }

    /// Hands the queued records to the writer.
    pub fn send(&mut self) -> Result<(), Stop> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let chunk = std::mem::take(&mut self.pending);
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
        if !self.pending.is_empty() {
            if let Some(tx) = &self.tx {
                let _ = tx.send(std::mem::take(&mut self.pending));
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
