//! `fragstat`: query game servers and masters, decode saved replies, run emulated servers.
//!
//! Every game is reached through the registry (`fragstat::game(id)`): this crate names no
//! family's types.
//!
//! Exit codes: 0 when at least one server answered (or the command ran: decode, serve,
//! games); 1 on a runtime failure (a malformed file for `decode`, a socket that cannot be
//! bound); 2 on a usage error; 3 when no server answered or no master gave a list; 130 when
//! interrupted (what had answered is printed first).
// Doc comments here are clap's --help text (`HOST[:PORT]`), not rustdoc links.
#![allow(rustdoc::broken_intra_doc_links)]

/// jemalloc instead of the system allocator: a scan allocates and frees a few dozen small
/// blocks per server, which glibc's malloc served at about 170 instructions each; jemalloc
/// cut a 10,000-server scan's CPU by about 10 % (docs/benchmarks.md).
#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

mod master_server;
mod output;
mod serve;
mod table;
mod track;

use std::io::{IsTerminal, Read};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::{Args, Parser, Subcommand, ValueEnum};
use fragstat::core::model::{MasterEntry, Record, Status};
use fragstat::core::registry::{Ask, DecodedJson, GameRef};
use fragstat::{defaults, Client};
use futures_util::StreamExt;
use output::{Output, Stop};

/// Exit status when no server answered, or no master gave a list.
pub const EXIT_NO_ANSWER: u8 = 3;
/// Exit status after Ctrl-C.
pub const EXIT_INTERRUPTED: u8 = 130;

#[derive(Parser)]
#[command(
    name = "fragstat",
    version,
    about = "Find and query classic game servers and their masters",
    after_help = "Exit status: 0 when at least one server answered, 1 on a runtime failure, 2 on a usage error, 3 when no server answered or no master gave a list, 130 when interrupted.\nGames: see `fragstat games`."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Query game servers.
    Query(QueryArgs),
    /// List servers from master servers (several are merged, duplicates removed).
    Master(MasterArgs),
    /// Decode one saved datagram (the UDP payload) as JSON.
    Decode {
        /// Game id (see `fragstat games`).
        game: String,
        /// File holding one datagram ('-' for standard input).
        file: PathBuf,
    },
    /// Run emulated game servers (and an emulated master) on real sockets until interrupted.
    Serve(serve::ServeArgs),
    /// Start emulated servers and a master on loopback, discover and probe them, print the table.
    Demo {
        /// Emulated servers to start.
        #[arg(long, default_value_t = 6, value_parser = clap::value_parser!(u16).range(1..=500))]
        count: u16,
        /// Also run the tracker on the farm (SQLite in a temporary file) and print its URL;
        /// runs until interrupted.
        #[arg(long)]
        track: bool,
        /// With --track: the web server's address (port 0: any free port).
        #[arg(long, default_value = "127.0.0.1:8080", requires = "track")]
        listen: SocketAddr,
        /// With --track: seconds between rounds.
        #[arg(long, default_value_t = 10.0, requires = "track")]
        interval_secs: f64,
    },
    /// Poll masters and servers every interval, keep their history (SQLite or PostgreSQL) and
    /// serve a server browser, a JSON API and Prometheus metrics (docs/tracker.md).
    Track(track::TrackArgs),
    /// Run a master server (dpmaster protocol: Q3A, W:ET, OpenArena, Warsow, Nexuiz…) until
    /// interrupted.
    MasterServer(master_server::MasterServerArgs),
    /// List the games this build knows: id, title, family, default ports.
    Games {
        /// Output format.
        #[arg(long, value_enum, default_value = "table")]
        format: Format,
    },
}

/// How results are printed.
#[derive(Clone, Copy, ValueEnum, PartialEq, Eq, Debug)]
pub enum Format {
    /// A browser table.
    Table,
    /// One JSON array at the end.
    Json,
    /// One JSON object per line, as each server answers.
    Ndjson,
}

#[derive(Args, Clone)]
struct ScanArgs {
    /// Ask for the player list.
    #[arg(long)]
    players: bool,
    /// Ask for every server variable (implies the players where they come together, as in
    /// getstatus); the table shows them under each server.
    #[arg(long)]
    rules: bool,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    format: Format,
    /// Milliseconds to wait for a reply to one attempt: the upper bound of the adaptive
    /// timeout, and what the last attempt waits.
    #[arg(long, default_value_t = defaults::TIMEOUT.as_millis() as u64, value_parser = clap::value_parser!(u64).range(1..))]
    timeout_ms: u64,
    /// Wait the whole --timeout-ms on every attempt. By default, once servers have answered,
    /// an attempt that is not the last is retried after the measured round-trip time plus
    /// four times its variation (as TCP does), doubled per retry.
    #[arg(long)]
    fixed_timeout: bool,
    /// The shortest adaptive timeout, in milliseconds.
    #[arg(long, default_value_t = defaults::MIN_TIMEOUT.as_millis() as u64)]
    min_timeout_ms: u64,
    /// Retries after the first attempt. Five, not qstat's three: with adaptive timeouts a
    /// retry costs a few round trips, and at 20 % loss three retries still leave about 16
    /// servers in 10,000 unanswered (0.2^4), five about one (0.2^6).
    #[arg(long, default_value_t = defaults::RETRIES)]
    retries: u32,
    /// Queries in flight at once.
    #[arg(long, default_value_t = defaults::CONCURRENCY as u32, value_parser = clap::value_parser!(u32).range(1..))]
    concurrency: u32,
    /// At most this many packets per second (0: unpaced).
    #[arg(long, default_value_t = 0)]
    rate: u32,
    /// Give up on the whole scan, name lookups included, after this many milliseconds (0: no
    /// limit).
    #[arg(long, default_value_t = 0)]
    deadline_ms: u64,
    /// Master lists: most ports of one IP address probed (a list naming every port of a
    /// host is a port scan waiting to happen).
    #[arg(long, default_value_t = defaults::MAX_PORTS_PER_IP as u64, value_parser = clap::value_parser!(u64).range(1..))]
    max_per_ip: u64,
    /// Master lists: keep private, loopback, link-local, multicast and reserved addresses
    /// (by default only public ones are probed, and loopback ones from a master on
    /// loopback).
    #[arg(long)]
    keep_private: bool,
}

impl ScanArgs {
    /// The client for this command: its options over the shared defaults; `spent` is taken
    /// off the deadline (name lookups count).
    async fn client(&self, master_timeout_ms: Option<u64>) -> anyhow::Result<Client> {
        let mut b = Client::builder()
            .timeout(Duration::from_millis(self.timeout_ms))
            .retries(self.retries)
            .adaptive(!self.fixed_timeout)
            .min_timeout(Duration::from_millis(self.min_timeout_ms))
            .concurrency(usize::try_from(self.concurrency).unwrap_or(usize::MAX))
            .rate((self.rate > 0).then_some(self.rate))
            .deadline(self.deadline())
            .resolve_timeout(self.resolve_timeout());
        if let Some(ms) = master_timeout_ms {
            b = b
                .master_timeout(Duration::from_millis(ms))
                // HTTP lists take a few seconds at least.
                .http_timeout(
                    Duration::from_millis(ms.max(5000))
                        .min(self.deadline().unwrap_or(Duration::MAX)),
                );
        }
        let max_per_ip = usize::try_from(self.max_per_ip).unwrap_or(usize::MAX);
        if max_per_ip != defaults::MAX_PORTS_PER_IP {
            b = b.list_limits(fragstat::ListLimits {
                max_ports_per_ip: max_per_ip,
                ..fragstat::ListLimits::default()
            });
        }
        if self.keep_private {
            b = b.list_filter(fragstat::ListFilter::keep_all());
        }
        b.build().await.context("binding UDP sockets")
    }

    fn deadline(&self) -> Option<Duration> {
        (self.deadline_ms > 0).then(|| Duration::from_millis(self.deadline_ms))
    }

    fn ask(&self) -> Ask {
        Ask::default()
            .with_players(self.players || self.rules)
            .with_rules(self.rules)
    }

    /// How long a name lookup may take: 2 s, within the deadline.
    fn resolve_timeout(&self) -> Duration {
        let cap = defaults::RESOLVE_TIMEOUT;
        self.deadline().map_or(cap, |d| d.min(cap))
    }
}

#[derive(Args)]
struct QueryArgs {
    /// Game id (see `fragstat games`).
    game: String,
    /// Servers: HOST[:PORT], [IPv6]:PORT (default: the game's port).
    addrs: Vec<String>,
    /// Read servers from a file, one per line ('-' for standard input; '#' starts a comment).
    #[arg(short = 'f', long = "file")]
    file: Option<PathBuf>,
    #[command(flatten)]
    scan: ScanArgs,
}

#[derive(Args)]
struct MasterArgs {
    /// Game id (see `fragstat games`).
    game: String,
    /// Masters: HOST[:PORT] (default: the game's master port), or URLs for games with an
    /// HTTP master list (ddnet, etqw). Never a default: fragstat sends nothing to an address
    /// not named.
    masters: Vec<String>,
    /// Query every listed server (implied by --players and --rules).
    #[arg(long)]
    probe: bool,
    /// Ask with the extended request where the game has one (Quake III getserversExt, which
    /// lists IPv6 servers too).
    #[arg(long)]
    ext: bool,
    /// Game name for the extended request (default: the game's own, e.g. Quake3Arena, et).
    #[arg(long)]
    gamename: Option<String>,
    /// Milliseconds to wait for a master's reply (and between the datagrams of its list).
    #[arg(long, default_value_t = defaults::MASTER_TIMEOUT.as_millis() as u64, value_parser = clap::value_parser!(u64).range(1..))]
    master_timeout_ms: u64,
    #[command(flatten)]
    scan: ScanArgs,
}

/// Prints a usage error; exit status 2.
pub fn usage(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("error: {msg}");
    ExitCode::from(2)
}

/// The game named on the command line, or a usage error.
pub fn lookup_game(id: &str) -> Result<GameRef, ExitCode> {
    fragstat::game(id).ok_or_else(|| {
        let ids: Vec<String> = fragstat::games()
            .iter()
            .map(|g| g.id().to_string())
            .collect();
        usage(format!(
            "unknown game {id:?}: one of {} (see `fragstat games`)",
            ids.join(", ")
        ))
    })
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        // Colours only for a person at a terminal: a log file or a journal gets plain text.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    // Clients: one thread. The receive task and the batch driver then hand datagrams over
    // without cross-thread wake-ups, and the other cores stay free (docs/benchmarks.md);
    // output is written by a thread of its own. Emulated servers: `--threads`, default one.
    let mut builder = match &cli.command {
        Command::Serve(a) if a.threads <= 1 => tokio::runtime::Builder::new_current_thread(),
        Command::Serve(a) => {
            let mut b = tokio::runtime::Builder::new_multi_thread();
            b.worker_threads(usize::from(a.threads));
            b
        }
        _ => tokio::runtime::Builder::new_current_thread(),
    };
    let runtime = match builder.enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot start the runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let result = runtime.block_on(async {
        match cli.command {
            Command::Query(a) => query(a).await,
            Command::Master(a) => master(a).await,
            Command::Decode { game, file } => decode_file(&game, &file),
            Command::Serve(a) => serve::serve(a).await,
            Command::Demo {
                count,
                track,
                listen,
                interval_secs,
            } => {
                let track = track.then_some(serve::DemoTrack {
                    listen,
                    interval_secs,
                });
                serve::demo(usize::from(count), track).await
            }
            Command::Track(a) => track::track(a).await,
            Command::Games { format } => games(format),
            Command::MasterServer(a) => master_server::master_server(a).await,
        }
    });
    // Dropping the runtime does not wait for tasks blocked on sockets.
    runtime.shutdown_background();
    match result {
        Ok(code) => code,
        // A reader that went away (`| head`) is not an error.
        Err(e) if output::is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(1)
        }
    }
}

/// ANSI colours for names when stdout is a terminal and `NO_COLOR` is not set.
pub(crate) fn color_stdout() -> bool {
    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

fn progress_bar(n: usize) -> Option<indicatif::ProgressBar> {
    if n < 10 || !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = indicatif::ProgressBar::new(n as u64);
    if let Ok(style) = indicatif::ProgressStyle::with_template(
        "{bar:40} {pos}/{len} servers ({per_sec}, {eta} left)",
    ) {
        bar.set_style(style);
    }
    Some(bar)
}

/// Reads one address per line; `#` starts a comment; `-` is standard input.
fn read_list(path: &std::path::Path) -> std::io::Result<Vec<String>> {
    let text = if path == std::path::Path::new("-") {
        std::io::read_to_string(std::io::stdin())?
    } else {
        std::fs::read_to_string(path)?
    };
    // Lines found eight bytes at a time, and a plain search for `#` on each (a list is
    // thousands of short lines: `lines()` and a `split('#')` per line cost more than the rest
    // of reading it).
    let mut out = Vec::with_capacity(text.len() / 16);
    let mut start = 0;
    let ends =
        fragstat::core::wire::positions(text.as_bytes(), b'\n').chain(std::iter::once(text.len()));
    for end in ends {
        let line = text.get(start..end).unwrap_or_default();
        start = end + 1;
        let line = match line.as_bytes().iter().position(|&b| b == b'#') {
            Some(hash) => line.get(..hash).unwrap_or_default(),
            None => line,
        };
        let line = line.trim();
        if !line.is_empty() {
            out.push(line.to_string());
        }
    }
    Ok(out)
}

/// Probes `targets` (as given, resolved or not) and prints them; exit status 0 when at least
/// one answered, 3 when none did, 130 when interrupted.
async fn probe(
    client: &Client,
    game: &GameRef,
    targets: Vec<(String, Result<SocketAddr, fragstat::Error>)>,
    scan: &ScanArgs,
    started: Instant,
) -> anyhow::Result<ExitCode> {
    let mut out = Output::start(
        scan.format,
        scan.players || scan.rules,
        scan.rules,
        color_stdout(),
    );
    let mut addrs = Vec::with_capacity(targets.len());
    let mut positions = Vec::with_capacity(targets.len());
    for (i, (text, addr)) in targets.into_iter().enumerate() {
        match addr {
            Ok(a) => {
                addrs.push(a);
                positions.push(i);
            }
            Err(e) => {
                let r = Record::failed(Some(text), game.id(), Status::Error, e.to_string());
                out.record(i, r);
            }
        }
    }
    let bar = progress_bar(addrs.len());
    // Each server's query is made when it starts; results come as servers answer.
    let mut results = client
        .scan(game, addrs)
        .ask(scan.ask())
        .dedupe(false)
        // Name lookups and master lists count against --deadline-ms.
        .deadline(scan.deadline().map(|d| d.saturating_sub(started.elapsed())))
        .indexed();
    let mut online = 0usize;
    // One listener for the whole scan, so no Ctrl-C falls between two waits.
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);
    // Wakes the scan when queued NDJSON lines are due for the writer and no reply came.
    let flush = tokio::time::sleep(output::FLUSH_AFTER);
    tokio::pin!(flush);
    let mut flush_at = None;
    let interrupted = loop {
        let due = out.due();
        if let Some(at) = due.filter(|&at| flush_at != Some(at)) {
            flush.as_mut().reset(at.into());
            flush_at = Some(at);
        }
        let next = tokio::select! {
            o = results.next() => o,
            _ = &mut ctrl_c => break true,
            () = &mut flush, if due.is_some() => {
                flush_at = None;
                match out.send(Instant::now()) {
                    Ok(()) => continue,
                    Err(Stop::BrokenPipe) => return Ok(ExitCode::SUCCESS),
                    Err(e) => return Err(e.into()),
                }
            }
        };
        let Some(first) = next else { break false };
        // Everything that finished meanwhile goes to the writer in one message.
        let mut next = Some(first);
        while let Some(item) = next {
            if let Some(b) = &bar {
                b.inc(1);
            }
            let r = fragstat::record(game.id(), item.addr, item.result);
            if r.status == Status::Online {
                online += 1;
            }
            let pos = positions.get(item.index).copied().unwrap_or(item.index);
            out.record(pos, r);
            next = results.try_next();
        }
        match out.send(Instant::now()) {
            Ok(()) => {}
            Err(Stop::BrokenPipe) => return Ok(ExitCode::SUCCESS),
            Err(e) => return Err(e.into()),
        }
    };
    drop(results);
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    match out.finish() {
        Ok(()) | Err(Stop::BrokenPipe) => {}
        Err(e) => return Err(e.into()),
    }
    Ok(if interrupted {
        ExitCode::from(EXIT_INTERRUPTED)
    } else if online == 0 {
        ExitCode::from(EXIT_NO_ANSWER)
    } else {
        ExitCode::SUCCESS
    })
}

async fn query(a: QueryArgs) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    let game = match lookup_game(&a.game) {
        Ok(g) => g,
        Err(code) => return Ok(code),
    };
    let mut texts = a.addrs.clone();
    if let Some(f) = &a.file {
        let list = read_list(f).with_context(|| format!("reading {}", f.display()))?;
        if list.is_empty() {
            return Ok(usage(format!("{} lists no servers", f.display())));
        }
        texts.extend(list);
    }
    if texts.is_empty() {
        return Ok(usage("no servers given (ADDR... or -f FILE)"));
    }
    let client = a.scan.client(None).await?;
    let targets = client.resolve_owned(texts, game.default_port()).await;
    probe(&client, &game, targets, &a.scan, started).await
}

async fn master(a: MasterArgs) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    let game = match lookup_game(&a.game) {
        Ok(g) => g,
        Err(code) => return Ok(code),
    };
    if a.masters.is_empty() {
        return Ok(usage(
            match game.master_query(&fragstat::MasterOptions::default()) {
                Ok(fragstat::core::registry::MasterQuery::Http {
                    default_url: Some(u),
                    ..
                }) => format!("no master URL given (the public list is {u})"),
                _ => "no master given".to_string(),
            },
        ));
    }
    let client = a.scan.client(Some(a.master_timeout_ms)).await?;
    let request = client
        .master_list(&game, a.masters.iter())
        .ext(a.ext)
        .gamename(a.gamename.clone());
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);
    let list = tokio::select! {
        l = request => l,
        _ = &mut ctrl_c => return Ok(ExitCode::from(EXIT_INTERRUPTED)),
    };
    let list = match list {
        Ok(l) => l,
        Err(e @ fragstat::Error::InvalidInput(_)) => return Ok(usage(e)),
        Err(e) => return Err(e.into()),
    };
    let report: Vec<serde_json::Value> = list.reports().iter().map(report_json).collect();
    for r in list.reports() {
        if let Some(e) = &r.error {
            eprintln!("master {}: {} {e}", r.master, r.status);
        }
        for w in &r.warnings {
            eprintln!("master {}: {w}", r.master);
        }
        if r.dropped() > 0 {
            eprintln!(
                "master {}: {} of {} listed left out ({})",
                r.master,
                r.dropped(),
                r.listed,
                dropped_text(r)
            );
        }
    }
    if !list.any_online() {
        eprintln!("no master gave a list");
        return Ok(ExitCode::from(EXIT_NO_ANSWER));
    }
    // Lists that carry each server's info (DDNet's HTTP master) need no probe to be shown.
    if a.probe || a.scan.players || a.scan.rules {
        let targets = list.servers().map(|s| (s.to_string(), Ok(s))).collect();
        return probe(&client, &game, targets, &a.scan, started).await;
    }
    let asked = list.reports().len();
    let servers: Vec<MasterEntry> = list.into_entries().into_iter().map(|l| l.entry).collect();
    output::master_list(game.id(), a.scan.format, &servers, &report, asked)?;
    Ok(ExitCode::SUCCESS)
}

/// A master's report as `--format json` writes it.
fn report_json(r: &fragstat::MasterReport) -> serde_json::Value {
    serde_json::json!({
        "address": r.master,
        "status": r.status,
        "error": r.error.as_ref().map(ToString::to_string),
        "servers": r.is_online().then_some(r.listed),
        "rtt_ms": r.rtt.map(|d| (d.as_secs_f64() * 1e6).round() / 1e3),
        "kept": r.is_online().then_some(r.kept),
        "dropped": r.is_online().then_some(r.dropped()),
    })
}

/// Why entries were left out, in words: `59744 over 256 ports per address, 15 filtered (…)`.
fn dropped_text(r: &fragstat::MasterReport) -> String {
    let mut parts = Vec::new();
    if r.over_ip_cap > 0 {
        parts.push(format!("{} over the per-address port cap", r.over_ip_cap));
    }
    if r.over_entry_cap > 0 {
        parts.push(format!(
            "{} over the per-master entry cap",
            r.over_entry_cap
        ));
    }
    for (reason, n) in &r.filtered {
        parts.push(format!("{n} {reason}"));
    }
    parts.join(", ")
}

fn decode_file(game: &str, file: &std::path::Path) -> anyhow::Result<ExitCode> {
    let game = match lookup_game(game) {
        Ok(g) => g,
        Err(code) => return Ok(code),
    };
    let bytes = if file == std::path::Path::new("-") {
        let mut b = Vec::new();
        std::io::stdin()
            .read_to_end(&mut b)
            .context("reading standard input")?;
        b
    } else {
        std::fs::read(file).with_context(|| format!("reading {}", file.display()))?
    };
    let decoded = match game.decode(&bytes) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("error: {}: {e}", file.display());
            return Ok(ExitCode::from(1));
        }
    };
    let json = serde_json::to_string_pretty(&DecodedJson {
        game: game.id(),
        decoded: &decoded,
    })?;
    output::print_line(&json)?;
    Ok(ExitCode::SUCCESS)
}

fn games(format: Format) -> anyhow::Result<ExitCode> {
    let games = fragstat::games();
    let rows: Vec<serde_json::Value> = games
        .iter()
        .map(|g| {
            serde_json::json!({
                "id": g.id(),
                "title": g.title(),
                "family": g.family(),
                "default_port": g.default_port(),
                "master_port": g.master_port(),
                "aliases": g.aliases(),
            })
        })
        .collect();
    match format {
        Format::Json => output::print_line(&serde_json::to_string_pretty(&rows)?)?,
        Format::Ndjson => {
            for r in &rows {
                output::print_line(&r.to_string())?;
            }
        }
        Format::Table => {
            let mut t = vec![vec![
                "ID".to_string(),
                "FAMILY".into(),
                "PORT".into(),
                "MASTER".into(),
                "TITLE".into(),
            ]];
            for g in &games {
                t.push(vec![
                    g.id().to_string(),
                    g.family().to_string(),
                    g.default_port().to_string(),
                    g.master_port().map_or("-".into(), |p| p.to_string()),
                    g.title().to_string(),
                ]);
            }
            output::print_line(table::columns(&t).trim_end())?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server list: one server per line, `#` starts a comment, blank lines and the spaces
    /// around an entry are ignored, CRLF endings too.
    #[test]
    fn read_list_takes_one_server_per_line_without_comments() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("list.txt");
        std::fs::write(
            &path,
            "# servers\n127.0.0.1:27960\n\n  10.0.0.1 # a comment\r\n#\n[::1]:27961\r\nhost.example:1#x\n   \n",
        )
        .unwrap();
        assert_eq!(
            read_list(&path).unwrap(),
            [
                "127.0.0.1:27960",
                "10.0.0.1",
                "[::1]:27961",
                "host.example:1"
            ]
        );
    }
}
