//! `fragstat watch`: scan servers and masters every interval and print what changed, one
//! event a line ([`fragstat::events`]; `fragstat::Client::watch`).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, ValueEnum};
use fragstat::events::{Differ, Event};
use fragstat::{defaults, Client, Source};
use futures_util::StreamExt;

use crate::list::Entry;
use crate::usage;

/// How events are printed.
#[derive(Clone, Copy, ValueEnum, PartialEq, Eq, Debug)]
pub enum WatchFormat {
    /// One JSON object per line (docs/json.md, "Events"), flushed as it comes.
    Ndjson,
    /// One line per event: time (UTC), server, game, what happened.
    Table,
}

#[derive(Args)]
pub struct WatchArgs {
    /// Game id (see `fragstat games`; qstat's type and master type names work too). May be
    /// left out with -f FILE when every address in the file has its type (`q3s 1.2.3.4`).
    game: Option<String>,
    /// Servers: HOST[:PORT], [IPv6]:PORT (default: the game's port).
    servers: Vec<String>,
    /// Read servers from a file ('-' for standard input; repeatable): one per line, or
    /// qstat's server files (`TYPE ADDRESS`).
    #[arg(short = 'f', long = "file")]
    file: Vec<PathBuf>,
    /// A master whose list is scanned every round, HOST[:PORT] or a URL for HTTP lists
    /// (repeatable).
    #[arg(long = "master")]
    masters: Vec<String>,
    /// Ask masters with the extended request (Quake III getserversExt).
    #[arg(long)]
    ext: bool,
    /// Seconds from the start of one scan to the start of the next.
    #[arg(long, default_value_t = 60.0, alias = "interval-s")]
    interval_secs: f64,
    /// Output format.
    #[arg(long, value_enum, default_value = "ndjson")]
    format: WatchFormat,
    /// Stop after this many scans (default: until interrupted).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    rounds: Option<u64>,
    /// Events for the first scan too (every server up, every player joined) instead of
    /// taking it as the baseline.
    #[arg(long)]
    initial: bool,
    /// Milliseconds to wait for a reply to one attempt.
    #[arg(long, default_value_t = defaults::TIMEOUT.as_millis() as u64, value_parser = crate::args::timeout_ms, allow_negative_numbers = true)]
    timeout_ms: u64,
    /// Retries after the first attempt.
    #[arg(long, default_value_t = defaults::RETRIES, value_parser = crate::args::count_u32, allow_negative_numbers = true)]
    retries: u32,
    /// Queries in flight at once.
    #[arg(long, default_value_t = defaults::CONCURRENCY as u32, value_parser = crate::args::concurrency, allow_negative_numbers = true)]
    concurrency: u32,
    /// Milliseconds to wait for a master's reply (and between the datagrams of its list).
    #[arg(long, default_value_t = defaults::MASTER_TIMEOUT.as_millis() as u64, value_parser = crate::args::timeout_ms, allow_negative_numbers = true)]
    master_timeout_ms: u64,
    /// Master lists: keep private, loopback, link-local, multicast and reserved addresses.
    #[arg(long)]
    keep_private: bool,
    /// Listen on this UDP address (IP:PORT; port 0: any, printed on standard error) for the
    /// events ET: Legacy servers push (their `sv_tracker` names it): from the servers the
    /// scans see, printed at once with `"pushed": true`; a scan does not repeat them.
    #[arg(long, value_name = "ADDR")]
    push_listen: Option<std::net::SocketAddr>,
}

/// Longest interval taken (a week), as the tracker's.
const MAX_INTERVAL_S: f64 = 7.0 * 86_400.0;

impl WatchArgs {
    /// The sources: the game's masters and servers, and each file's servers by game.
    /// A usage error is said here (the `Err` is the exit status).
    fn sources(&self) -> Result<Vec<Source>, ExitCode> {
        let game = match &self.game {
            Some(id) => Some(crate::lookup_master_game(id)?),
            None if self.file.is_empty() => {
                return Err(usage("no game given (GAME SERVER..., or -f FILE)"))
            }
            None => None,
        };
        crate::args::check_addresses(&self.servers)?;
        let mut sources = Vec::new();
        if let Some(game) = &game {
            sources.push(
                Source::new(game)
                    .masters(self.masters.iter().cloned())
                    .servers(self.servers.iter().cloned())
                    .ext(self.ext),
            );
        } else if !self.servers.is_empty() || !self.masters.is_empty() {
            return Err(usage(
                "servers and --master need GAME (only -f FILE's typed addresses carry their own)",
            ));
        }
        for f in &self.file {
            let read = match crate::list::read_list(f, game.as_ref()) {
                Ok(r) => r,
                Err(crate::list::ListError::Usage(code)) => return Err(code),
                Err(crate::list::ListError::Io(e)) => {
                    return Err(usage(format!("{e:#}")));
                }
            };
            for e in read {
                match e {
                    Entry::Server { game, text, .. } => {
                        match sources.iter_mut().find(|s| s.game.id() == game.id()) {
                            Some(s) => s.servers.push(text),
                            None => sources.push(Source::new(&game).servers([text])),
                        }
                    }
                    Entry::Bad { text, reason } => eprintln!("{text}: {reason}"),
                }
            }
        }
        if sources
            .iter()
            .all(|s| s.masters.is_empty() && s.servers.is_empty())
        {
            return Err(usage("nothing to watch: SERVERS, -f FILE or --master"));
        }
        Ok(sources)
    }

    async fn client(&self) -> anyhow::Result<Client> {
        let mut b = Client::builder()
            .timeout(Duration::from_millis(self.timeout_ms))
            .retries(self.retries)
            .concurrency(usize::try_from(self.concurrency).unwrap_or(usize::MAX))
            .master_timeout(Duration::from_millis(self.master_timeout_ms))
            // Servers probed in one scan cannot learn the next scan's port.
            .new_port_per_scan(true);
        if self.keep_private {
            b = b.list_filter(fragstat::ListFilter::keep_all());
        }
        b.build().context("binding UDP sockets")
    }
}

/// One event as its format prints it.
fn line(e: &Event, format: WatchFormat) -> anyhow::Result<String> {
    Ok(match format {
        WatchFormat::Ndjson => serde_json::to_string(e)?,
        // Names, maps and reasons come from the servers: no control characters (escape
        // sequences) reach the terminal.
        WatchFormat::Table => format!(
            "{} {} {} {}",
            fragstat::time_text(e.at),
            e.server,
            e.game,
            e.describe()
        )
        .chars()
        .filter(|c| !c.is_control())
        .collect(),
    })
}

/// `fragstat watch`.
pub async fn watch(a: WatchArgs) -> anyhow::Result<ExitCode> {
    if !(a.interval_secs.is_finite() && (0.05..=MAX_INTERVAL_S).contains(&a.interval_secs)) {
        return Ok(usage(format!(
            "--interval-secs must be between 0.05 and {MAX_INTERVAL_S}"
        )));
    }
    let sources = match a.sources() {
        Ok(s) => s,
        Err(code) => return Ok(code),
    };
    let client = a.client().await?;
    // Servers that do not resolve are said once, here (each scan resolves them again, so a
    // name that comes to resolve is watched); with none left and no master, nothing to watch.
    let mut watchable = 0usize;
    for s in &sources {
        watchable += s.masters.len();
        for (_, addr) in client.resolve(&s.servers, s.game.default_port()).await {
            match addr {
                Ok(_) => watchable += 1,
                // The error names the address itself.
                Err(e) => eprintln!("warning: {e}"),
            }
        }
    }
    if watchable == 0 {
        return Ok(usage("no server to watch resolved"));
    }
    let mut events = client
        .watch(sources, Duration::from_secs_f64(a.interval_secs))
        .differ(Differ::new().initial(a.initial))
        .scans(a.rounds.unwrap_or(0));
    if let Some(addr) = a.push_listen {
        let socket = std::net::UdpSocket::bind(addr)
            .with_context(|| format!("binding --push-listen {addr}"))?;
        eprintln!(
            "listening for pushed events (ET: Legacy sv_tracker) on udp {}",
            socket.local_addr()?
        );
        events = events.pushes(socket, fragstat::events::push::PushLimits::default());
    }
    let stop = crate::signal::wait_for_signal();
    tokio::pin!(stop);
    loop {
        let e = tokio::select! {
            e = events.next() => e,
            // Ctrl-C (or SIGTERM): 130, as the README's exit statuses say.
            () = &mut stop => return Ok(ExitCode::from(crate::EXIT_INTERRUPTED)),
        };
        let Some(e) = e else { break };
        let text = line(&e, a.format)?;
        let mut out = std::io::stdout().lock();
        out.write_all(text.as_bytes())?;
        out.write_all(b"\n")?;
        out.flush()?;
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use fragstat::core::model::{Dialect, Player, ServerInfo, Text};
    use fragstat::core::record::Record;
    use fragstat::events::Differ;

    use super::{line, WatchFormat};

    fn server(players: &[&[u8]]) -> Record {
        let mut info = ServerInfo::default();
        info.map = Text::new("dm1", Dialect::Plain);
        info.players = Some(
            players
                .iter()
                .map(|p| Player::new(Text::new(p.to_vec(), Dialect::Plain)))
                .collect(),
        );
        Record::online(Some("127.0.0.1:8303".into()), "ddnet", info, None)
    }

    /// A name with an escape sequence prints without its control characters in the table;
    /// NDJSON keeps the bytes (escaped by JSON).
    #[test]
    fn table_lines_carry_no_control_characters() {
        let mut differ = Differ::new();
        assert!(differ.update(1, &[server(&[])]).is_empty());
        let events = differ.update(2, &[server(&[b"\x1b[2Jevil\x07"])]);
        assert_eq!(events.len(), 1, "{events:?}");
        let table = line(&events[0], WatchFormat::Table).unwrap();
        assert!(!table.chars().any(char::is_control), "{table:?}");
        assert!(table.contains("[2Jevil"), "{table:?}");
        let json = line(&events[0], WatchFormat::Ndjson).unwrap();
        assert!(json.contains(r"\u001b[2Jevil\u0007"), "{json}");
    }
}
