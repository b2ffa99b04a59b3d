//! `fragstat`: query game servers and masters, decode saved replies, run emulated servers.
//!
//! Exit codes: 0 when the command ran (whatever servers answered), 1 on a runtime failure
//! (a malformed file for `decode`, a socket that cannot be bound), 2 on a usage error.
// Doc comments here are clap's --help text (`HOST[:PORT]`), not rustdoc links.
#![allow(rustdoc::broken_intra_doc_links)]

mod record;
mod serve;
mod targets;

use std::io::{IsTerminal, Write};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, Parser, Subcommand, ValueEnum};
use fragstat::core::{Engine, Options, Outcome};
use fragstat::quake3::client::{Client, MasterExchange, ServerReply};
use fragstat::quake3::{decode, Game, GetServers, Packet, Summary};
use record::ServerRecord;
use targets::Target;

#[derive(Parser)]
#[command(
    name = "fragstat",
    version,
    about = "Find and query classic game servers (Quake III family)"
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
    /// Decode one saved reply payload (the bytes after the UDP header).
    Decode {
        /// Game: q3, et, openarena, rtcw or oob:PROTOCOL.
        game: String,
        /// File holding one datagram.
        file: PathBuf,
    },
    /// Run emulated game servers (and an emulated master) on real sockets until interrupted.
    Serve(serve::ServeArgs),
    /// Start emulated servers and a master on loopback, discover and probe them, print the table.
    Demo {
        /// Emulated servers to start.
        #[arg(long, default_value_t = 6)]
        count: usize,
    },
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
enum Format {
    Table,
    Json,
    Ndjson,
}

#[derive(Args, Clone)]
struct ScanArgs {
    /// Ask for the player list.
    #[arg(long)]
    players: bool,
    /// Ask for every server variable (getstatus).
    #[arg(long)]
    rules: bool,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    format: Format,
    /// Milliseconds to wait for a reply to one attempt.
    #[arg(long, default_value_t = 500)]
    timeout_ms: u64,
    /// Retries after the first attempt.
    #[arg(long, default_value_t = 3)]
    retries: u32,
    /// Queries in flight at once.
    #[arg(long, default_value_t = 1024)]
    concurrency: usize,
    /// At most this many packets per second (0: unpaced).
    #[arg(long, default_value_t = 0)]
    rate: u32,
    /// Give up on the whole scan after this many milliseconds (0: no limit).
    #[arg(long, default_value_t = 0)]
    deadline_ms: u64,
}

impl ScanArgs {
    fn options(&self) -> Options {
        Options::default()
            .with_timeout(Duration::from_millis(self.timeout_ms.max(1)))
            .with_retries(self.retries)
            .with_concurrency(self.concurrency.max(1))
            .with_rate((self.rate > 0).then_some(self.rate))
            .with_deadline((self.deadline_ms > 0).then(|| Duration::from_millis(self.deadline_ms)))
    }
}

#[derive(Args)]
struct QueryArgs {
    /// Game: q3, et, openarena, rtcw or oob:PROTOCOL.
    game: String,
    /// Servers: HOST[:PORT], [IPv6]:PORT (default port 27960).
    addrs: Vec<String>,
    /// Read servers from a file, one per line ('-' for standard input; '#' starts a comment).
    #[arg(short = 'f', long = "file")]
    file: Option<PathBuf>,
    #[command(flatten)]
    scan: ScanArgs,
}

#[derive(Args)]
struct MasterArgs {
    /// Game: q3, et, openarena, rtcw or oob:PROTOCOL.
    game: String,
    /// Masters: HOST[:PORT] (default port 27950).
    masters: Vec<String>,
    /// Query every listed server.
    #[arg(long)]
    probe: bool,
    /// Ask with getserversExt (dpmaster >= 2.0; lists IPv6 servers too).
    #[arg(long)]
    ext: bool,
    /// Game name for getserversExt (default: the game's own, e.g. Quake3Arena, et, wolfmp).
    #[arg(long)]
    gamename: Option<String>,
    #[command(flatten)]
    scan: ScanArgs,
}

fn usage(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("error: {msg}");
    ExitCode::from(2)
}

fn parse_game(s: &str) -> Result<Game, ExitCode> {
    s.parse::<Game>().map_err(usage)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    // Clients: one thread. The receive task and the batch driver then hand datagrams over
    // without cross-thread wake-ups, and the other cores stay free (docs/benchmarks.md:
    // 10,000-server scan 0.26 s and 0.25 s CPU, against 0.33 s and 0.39 s multi-threaded).
    // Emulated servers: `--threads`, default one.
    let mut builder = match &cli.command {
        Command::Serve(a) if a.threads <= 1 => tokio::runtime::Builder::new_current_thread(),
        Command::Serve(a) => {
            let mut b = tokio::runtime::Builder::new_multi_thread();
            b.worker_threads(a.threads);
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
            Command::Demo { count } => serve::demo(count).await,
        }
    });
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(1)
        }
    }
}

fn client(scan: &ScanArgs, engine: Engine) -> Client {
    Client::with_engine(engine).with_options(scan.options())
}

/// Runs a scan and prints it in the chosen format; NDJSON lines go out as servers answer.
async fn probe(
    client: &Client,
    game: Game,
    targets: Vec<Target>,
    scan: &ScanArgs,
) -> anyhow::Result<()> {
    let with_players = scan.players || scan.rules;
    let mut records: Vec<Option<ServerRecord>> = vec![None; targets.len()];
    let mut resolved = Vec::new();
    let mut positions = Vec::new();
    let mut stdout = std::io::stdout().lock();
    for (i, t) in targets.iter().enumerate() {
        match t.addr {
            Some(a) => {
                resolved.push(a);
                positions.push(i);
            }
            None => {
                let r = ServerRecord::unresolved(
                    &t.text,
                    game,
                    t.error.as_deref().unwrap_or("cannot resolve"),
                );
                if scan.format == Format::Ndjson {
                    writeln!(stdout, "{}", serde_json::to_string(&r)?)?;
                }
                records[i] = Some(r);
            }
        }
    }
    drop(stdout);
    let bar = progress_bar(resolved.len());
    let mut batch = client.scan(resolved, with_players);
    // NDJSON lines stream out as servers answer; they are buffered while more results are
    // ready at once, and flushed whenever the scan has to wait.
    let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    while let Some(first) = batch.next().await {
        let mut next = Some(first);
        while let Some(o) = next {
            let index = o.index;
            let r = outcome_record(game, o, scan.players);
            if let Some(b) = &bar {
                b.inc(1);
            }
            if scan.format == Format::Ndjson {
                serde_json::to_writer(&mut out, &r)?;
                out.write_all(b"\n")?;
            }
            if let Some(&pos) = positions.get(index) {
                records[pos] = Some(r);
            }
            next = batch.try_next();
        }
        match &bar {
            Some(b) => b.suspend(|| out.flush())?,
            None => out.flush()?,
        }
    }
    drop(out);
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let records: Vec<ServerRecord> = records.into_iter().flatten().collect();
    match scan.format {
        Format::Ndjson => {}
        Format::Json => println!("{}", serde_json::to_string_pretty(&records)?),
        Format::Table => print!("{}", record::table(&records, scan.players, color_stdout())),
    }
    Ok(())
}

fn outcome_record(game: Game, o: Outcome<ServerReply>, players: bool) -> ServerRecord {
    match o.result {
        Ok(reply) => {
            let with_players = players && reply.status.is_some();
            ServerRecord::online(
                Some(o.addr),
                game,
                reply.into_summary(),
                with_players,
                o.rtt,
            )
        }
        Err(e) => ServerRecord::failed(o.addr, game, &e),
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

async fn query(a: QueryArgs) -> anyhow::Result<ExitCode> {
    let game = match parse_game(&a.game) {
        Ok(g) => g,
        Err(code) => return Ok(code),
    };
    let mut texts = a.addrs.clone();
    if let Some(f) = &a.file {
        texts.extend(targets::read_list(f).with_context(|| format!("reading {}", f.display()))?);
    }
    if texts.is_empty() {
        return Ok(usage("no servers given (ADDR... or -f FILE)"));
    }
    let targets = targets::resolve(&texts, game.default_port()).await;
    let engine = Engine::bind().await.context("binding UDP sockets")?;
    probe(&client(&a.scan, engine), game, targets, &a.scan).await?;
    Ok(ExitCode::SUCCESS)
}

async fn master(a: MasterArgs) -> anyhow::Result<ExitCode> {
    let game = match parse_game(&a.game) {
        Ok(g) => g,
        Err(code) => return Ok(code),
    };
    if a.masters.is_empty() {
        return Ok(usage("no master given"));
    }
    let request = if a.ext {
        let Some(name) = a
            .gamename
            .clone()
            .or_else(|| game.master_gamename().map(str::to_string))
        else {
            return Ok(usage("--ext needs --gamename for this game"));
        };
        GetServers::ext(&name, game.protocol())
    } else {
        game.getservers()
    };
    let masters = targets::resolve(&a.masters, game.master_port()).await;
    let engine = Engine::bind().await.context("binding UDP sockets")?;
    let mut master_opts = a.scan.options();
    // Lists span many datagrams; give masters qstat's longer per-attempt wait.
    master_opts.timeout = master_opts.timeout.max(Duration::from_millis(1000));
    let mut jobs = Vec::new();
    for m in masters.iter().filter_map(|t| t.addr) {
        jobs.push((
            m,
            MasterExchange::new(&request).context("encoding the master request")?,
        ));
    }
    let outcomes = engine.run(jobs, master_opts).collect_sorted().await;
    let mut servers: Vec<SocketAddr> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut report = Vec::new();
    for t in masters.iter().filter(|t| t.addr.is_none()) {
        report.push(serde_json::json!({"address": t.text, "status": "error", "error": t.error, "servers": null}));
    }
    for o in &outcomes {
        match &o.result {
            Ok(list) => {
                for s in list {
                    if seen.insert(*s) {
                        servers.push(*s);
                    }
                }
                report.push(serde_json::json!({"address": o.addr.to_string(), "status": "online", "error": null,
                    "servers": list.len(), "rtt_ms": o.rtt.map(|d| (d.as_secs_f64() * 1e6).round() / 1e3)}));
            }
            Err(e) => {
                let status = if e.is_timeout() { "timeout" } else { "error" };
                report.push(serde_json::json!({"address": o.addr.to_string(), "status": status, "error": e.to_string(), "servers": null}));
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
    if a.probe {
        let targets = servers
            .iter()
            .map(|s| Target {
                text: s.to_string(),
                addr: Some(*s),
                error: None,
            })
            .collect();
        probe(&client(&a.scan, engine), game, targets, &a.scan).await?;
        return Ok(ExitCode::SUCCESS);
    }
    let list: Vec<String> = servers.iter().map(ToString::to_string).collect();
    match a.scan.format {
        Format::Table => {
            for s in &list {
                println!("{s}");
            }
            eprintln!("{} servers from {} masters", list.len(), report.len());
        }
        Format::Json => println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({"masters": report, "servers": list}))?
        ),
        Format::Ndjson => {
            for s in &list {
                println!("{}", serde_json::json!({"address": s}));
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn decode_file(game: &str, file: &std::path::Path) -> anyhow::Result<ExitCode> {
    let game = match parse_game(game) {
        Ok(g) => g,
        Err(code) => return Ok(code),
    };
    let bytes = std::fs::read(file).with_context(|| format!("reading {}", file.display()))?;
    let packet = match decode(&bytes) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: {}: {e}", file.display());
            return Ok(ExitCode::from(1));
        }
    };
    let value = match &packet {
        Packet::InfoResponse(i) => serde_json::to_value(ServerRecord::online(
            None,
            game,
            Summary::new(Some(i), None),
            false,
            None,
        ))?,
        Packet::StatusResponse(s) => {
            let mut v = serde_json::to_value(ServerRecord::online(
                None,
                game,
                Summary::new(None, Some(s)),
                true,
                None,
            ))?;
            if !s.skipped.is_empty() || s.truncated {
                v["skipped_lines"] = s.skipped.iter().map(|l| serde_json::json!({"offset": l.offset, "line": fragstat::quake3::text::latin1(&l.line)})).collect();
                v["truncated"] = s.truncated.into();
            }
            v
        }
        Packet::ServersResponse(l) => serde_json::json!({
            "servers": l.servers.iter().map(ToString::to_string).collect::<Vec<_>>(),
            "terminator": l.terminator.map(|t| format!("{t:?}")),
            "ext": l.ext,
        }),
        other => serde_json::json!({"packet": format!("{other:?}")}),
    };
    println!("{}", serde_json::to_string_pretty(&value)?);
    Ok(ExitCode::SUCCESS)
}
