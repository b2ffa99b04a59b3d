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
use fragstat::core::registry::{Ask, DecodedJson, GameRef, MasterOptions, MasterQuery};
use fragstat::core::resolve::{resolve_all, Target};
use fragstat::core::{Engine, Options, QueryError};
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
    #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u64).range(1..))]
    timeout_ms: u64,
    /// Wait the whole --timeout-ms on every attempt. By default, once servers have answered,
    /// an attempt that is not the last is retried after the measured round-trip time plus
    /// four times its variation (as TCP does), doubled per retry.
    #[arg(long)]
    fixed_timeout: bool,
    /// The shortest adaptive timeout, in milliseconds.
    #[arg(long, default_value_t = 50)]
    min_timeout_ms: u64,
    /// Retries after the first attempt. Five, not qstat's three: with adaptive timeouts a
    /// retry costs a few round trips, and at 20 % loss three retries still leave about 16
    /// servers in 10,000 unanswered (0.2^4), five about one (0.2^6).
    #[arg(long, default_value_t = 5)]
    retries: u32,
    /// Queries in flight at once.
    #[arg(long, default_value_t = 1024, value_parser = clap::value_parser!(u32).range(1..))]
    concurrency: u32,
    /// At most this many packets per second (0: unpaced).
    #[arg(long, default_value_t = 0)]
    rate: u32,
    /// Give up on the whole scan, name lookups included, after this many milliseconds (0: no
    /// limit).
    #[arg(long, default_value_t = 0)]
    deadline_ms: u64,
}

impl ScanArgs {
    fn options(&self, timeout_ms: u64, spent: Duration) -> Options {
        let mut o = Options::default();
        o.timeout = Duration::from_millis(timeout_ms);
        o.retries = self.retries;
        o.adaptive = !self.fixed_timeout;
        o.min_timeout = Duration::from_millis(self.min_timeout_ms);
        o.concurrency = usize::try_from(self.concurrency).unwrap_or(usize::MAX);
        o.rate = (self.rate > 0).then_some(self.rate);
        o.deadline = self.deadline().map(|d| d.saturating_sub(spent));
        o
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
        let cap = Duration::from_secs(2);
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
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..))]
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
    // A master server logs its registrations, removals and expiries by default.
    let default_filter = match &cli.command {
        Command::MasterServer(_) => "warn,fragstat_master_server=info,fragstat_http_guard=info",
        _ => "warn",
    };
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_filter)),
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

/// `addr` as text, as `Display` writes it; IPv4 without the formatting machinery (it was 3 %
/// of a scan's instructions: one address per record).
fn addr_text(addr: SocketAddr) -> String {
    let SocketAddr::V4(v4) = addr else {
        return addr.to_string();
    };
    let mut s = String::with_capacity(21);
    let mut num = itoa::Buffer::new();
    for (i, octet) in v4.ip().octets().into_iter().enumerate() {
        if i > 0 {
            s.push('.');
        }
        s.push_str(num.format(octet));
    }
    s.push(':');
    s.push_str(num.format(v4.port()));
    s
}

fn record_of(
    game: &GameRef,
    addr: SocketAddr,
    result: Result<fragstat::ServerInfo, QueryError>,
    rtt: Option<Duration>,
) -> Record {
    match result {
        Ok(info) => Record::online(Some(addr_text(addr)), game.id(), info, rtt),
        Err(e) => {
            let status = if e.is_timeout() {
                Status::Timeout
            } else {
                Status::Error
            };
            Record::failed(Some(addr_text(addr)), game.id(), status, e.to_string())
        }
    }
}

/// Probes `targets` and prints them; returns how many answered, or `Stop` when the reader
/// went away or the user interrupted.
async fn probe(
    engine: &Engine,
    game: &GameRef,
    targets: Vec<Target>,
    scan: &ScanArgs,
    started: Instant,
) -> anyhow::Result<ExitCode> {
    let ask = scan.ask();
    let mut out = Output::start(
        scan.format,
        scan.players || scan.rules,
        scan.rules,
        color_stdout(),
    );
    let mut addrs = Vec::with_capacity(targets.len());
    let mut positions = Vec::with_capacity(targets.len());
    for (i, t) in targets.iter().enumerate() {
        match &t.addr {
            Ok(a) => {
                addrs.push(*a);
                positions.push(i);
            }
            Err(e) => {
                let r = Record::failed(Some(t.text.clone()), game.id(), Status::Error, e.clone());
                out.record(i, r);
            }
        }
    }
    let bar = progress_bar(addrs.len());
    let options = scan.options(scan.timeout_ms, started.elapsed());
    // Each server's exchange is made when its query starts (see `Engine::run_lazy`).
    let query_game = game.clone();
    let jobs = addrs
        .into_iter()
        .map(move |a| (a, query_game.server_query(ask)));
    let mut batch = engine.run_lazy(jobs, options);
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
            o = batch.next() => o,
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
        while let Some(o) = next {
            if let Some(b) = &bar {
                b.inc(1);
            }
            let r = record_of(game, o.addr, o.result, o.rtt);
            if r.status == Status::Online {
                online += 1;
            }
            let pos = positions.get(o.index).copied().unwrap_or(o.index);
            out.record(pos, r);
            next = batch.try_next();
        }
        match out.send(Instant::now()) {
            Ok(()) => {}
            Err(Stop::BrokenPipe) => return Ok(ExitCode::SUCCESS),
            Err(e) => return Err(e.into()),
        }
    };
    drop(batch);
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
    let targets = resolve_all(&texts, game.default_port(), a.scan.resolve_timeout()).await;
    let engine = Engine::bind().await.context("binding UDP sockets")?;
    probe(&engine, &game, targets, &a.scan, started).await
}

async fn master(a: MasterArgs) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    let game = match lookup_game(&a.game) {
        Ok(g) => g,
        Err(code) => return Ok(code),
    };
    let options = MasterOptions::default()
        .with_ext(a.ext)
        .with_gamename(a.gamename.clone());
    // Build one query first: options that do not fit the game are a usage error.
    let first = match game.master_query(&options) {
        Ok(q) => q,
        Err(e) => return Ok(usage(e)),
    };
    let engine = Engine::bind().await.context("binding UDP sockets")?;
    // (masters as given, resolved where UDP; what each answered)
    let (masters, mut outcomes) = match first {
        MasterQuery::Http { default_url, parse } => {
            let urls = a.masters.clone();
            if urls.is_empty() {
                return Ok(usage(match default_url {
                    Some(u) => format!("no master URL given (the public list is {u})"),
                    None => "no master URL given".to_string(),
                }));
            }
            let timeout = Duration::from_millis(a.master_timeout_ms.max(5000));
            let outcomes = http_lists(&urls, parse, timeout, a.scan.deadline()).await;
            (Vec::new(), outcomes)
        }
        MasterQuery::Udp(first) => {
            if a.masters.is_empty() {
                return Ok(usage("no master given"));
            }
            let Some(port) = game.master_port() else {
                return Ok(usage(format!("{} has no UDP master port", game.id())));
            };
            let masters = resolve_all(&a.masters, port, a.scan.resolve_timeout()).await;
            let mut jobs = Vec::new();
            let mut first = Some(first);
            for m in &masters {
                if let Ok(addr) = m.addr {
                    let ex = match first.take() {
                        Some(ex) => ex,
                        None => match game.master_query(&options) {
                            Ok(MasterQuery::Udp(ex)) => ex,
                            Ok(_) => anyhow::bail!("{}: master query changed kind", game.id()),
                            Err(e) => return Ok(usage(e)),
                        },
                    };
                    jobs.push((addr, ex));
                }
            }
            let opts = a.scan.options(a.master_timeout_ms, started.elapsed());
            let mut batch = engine.run(jobs, opts);
            let mut outcomes = Vec::new();
            let ctrl_c = tokio::signal::ctrl_c();
            tokio::pin!(ctrl_c);
            loop {
                tokio::select! {
                    o = batch.next() => match o {
                        Some(o) => outcomes.push(MasterOutcome {
                            index: o.index,
                            address: o.addr.to_string(),
                            rtt: o.rtt,
                            result: o.result.map_err(|e| (e.is_timeout(), e.to_string())),
                        }),
                        None => break,
                    },
                    _ = &mut ctrl_c => return Ok(ExitCode::from(EXIT_INTERRUPTED)),
                }
            }
            (masters, outcomes)
        }
        _ => return Ok(usage(format!("{}: unknown kind of master", game.id()))),
    };
    let asked = masters.len().max(outcomes.len());
    let unresolved: Vec<&Target> = masters.iter().filter(|t| t.addr.is_err()).collect();
    outcomes.sort_by_key(|o| o.index);
    let mut servers: Vec<MasterEntry> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut report = Vec::new();
    let mut lists = 0;
    for t in unresolved {
        if let Err(e) = &t.addr {
            report.push(serde_json::json!({"address": t.text, "status": "error", "error": e, "servers": null, "rtt_ms": null}));
        }
    }
    for o in outcomes {
        match o.result {
            Ok(list) => {
                lists += 1;
                report.push(serde_json::json!({"address": o.address, "status": "online", "error": null,
                    "servers": list.len(), "rtt_ms": o.rtt.map(|d| (d.as_secs_f64() * 1e6).round() / 1e3)}));
                for s in list {
                    if seen.insert(s.addr) {
                        servers.push(s);
                    }
                }
            }
            Err((timeout, e)) => {
                let status = if timeout { "timeout" } else { "error" };
                report.push(serde_json::json!({"address": o.address, "status": status, "error": e, "servers": null, "rtt_ms": null}));
            }
        }
    }
    for r in &report {
        if r["status"] != "online" {
            eprintln!(
                "master {}: {} {}",
                r["address"].as_str().unwrap_or("?"),
                r["status"].as_str().unwrap_or("?"),
                r["error"].as_str().unwrap_or("")
            );
        }
    }
    if lists == 0 {
        eprintln!("no master gave a list");
        return Ok(ExitCode::from(EXIT_NO_ANSWER));
    }
    // Lists that carry each server's info (DDNet's HTTP master) need no probe to be shown.
    if a.probe || a.scan.players || a.scan.rules {
        let targets = servers
            .iter()
            .map(|s| Target {
                text: s.addr.to_string(),
                addr: Ok(s.addr),
            })
            .collect();
        return probe(&engine, &game, targets, &a.scan, started).await;
    }
    output::master_list(game.id(), a.scan.format, &servers, &report, asked)?;
    Ok(ExitCode::SUCCESS)
}

/// One master's answer, UDP or HTTP.
struct MasterOutcome {
    index: usize,
    address: String,
    rtt: Option<Duration>,
    /// The list, or (is a timeout, why not).
    result: Result<Vec<MasterEntry>, (bool, String)>,
}

/// Most bytes read from an HTTP master list.
const MAX_HTTP_LIST: usize = 64 << 20;

/// Fetches every URL concurrently (HTTP GET) and parses each body; entries the parser skips
/// are reported on stderr, never fatal.
async fn http_lists(
    urls: &[String],
    parse: fn(&[u8]) -> Result<fragstat::core::registry::HttpList, fragstat::core::DecodeError>,
    timeout: Duration,
    deadline: Option<Duration>,
) -> Vec<MasterOutcome> {
    let timeout = deadline.map_or(timeout, |d| d.min(timeout));
    let client = match reqwest::Client::builder()
        .timeout(timeout)
        .user_agent(concat!("fragstat/", env!("CARGO_PKG_VERSION")))
        .build()
    {
        Ok(c) => c,
        Err(e) => {
            return urls
                .iter()
                .enumerate()
                .map(|(index, u)| MasterOutcome {
                    index,
                    address: u.clone(),
                    rtt: None,
                    result: Err((false, format!("HTTP client: {e}"))),
                })
                .collect()
        }
    };
    let fetches = urls.iter().enumerate().map(|(index, url)| {
        let client = client.clone();
        async move {
            let t0 = Instant::now();
            let result = async {
                let mut resp = client
                    .get(url)
                    .send()
                    .await
                    .map_err(|e| (e.is_timeout(), e.to_string()))?
                    .error_for_status()
                    .map_err(|e| (false, e.to_string()))?;
                let mut body = Vec::new();
                while let Some(chunk) = resp
                    .chunk()
                    .await
                    .map_err(|e| (e.is_timeout(), e.to_string()))?
                {
                    if body.len() + chunk.len() > MAX_HTTP_LIST {
                        return Err((false, format!("list larger than {MAX_HTTP_LIST} bytes")));
                    }
                    body.extend_from_slice(&chunk);
                }
                let list = parse(&body).map_err(|e| (false, e.to_string()))?;
                for w in &list.warnings {
                    eprintln!("master {url}: {w}");
                }
                Ok(list.servers)
            }
            .await;
            MasterOutcome {
                index,
                address: url.clone(),
                rtt: result.is_ok().then(|| t0.elapsed()),
                result,
            }
        }
    });
    futures_util::future::join_all(fetches).await
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

    #[test]
    fn addr_text_writes_what_display_writes() {
        for a in [
            "0.0.0.0:0",
            "127.0.0.1:27960",
            "255.255.255.255:65535",
            "10.20.3.40:7",
            "[::1]:27960",
            "[2001:db8::1]:1",
        ] {
            let addr: SocketAddr = a.parse().unwrap();
            assert_eq!(addr_text(addr), addr.to_string(), "{a}");
        }
    }
}
