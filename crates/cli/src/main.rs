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

mod args;
mod decode;
mod list;
#[cfg(feature = "master-server")]
mod master_server;
mod masters;
mod output;
mod progress;
mod save;
mod scan;
#[cfg(feature = "serve")]
mod serve;
mod serve_tcp;
mod signal;
mod table;
#[cfg(feature = "track")]
mod track;
mod view;
mod watch;

#[cfg(feature = "serve")]
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand, ValueEnum};
use fragstat::core::registry::GameRef;

/// Exit status when no server answered, or no master gave a list.
pub const EXIT_NO_ANSWER: u8 = 3;
/// Exit status after Ctrl-C.
pub const EXIT_INTERRUPTED: u8 = 130;

#[derive(Parser)]
#[command(
    name = "fragstat",
    version,
    about = "Find and query classic game servers and their masters",
    after_help = "Examples:\n  fragstat query q3 example.org:27960 -P\n  fragstat query -f servers.txt --sort ping --format csv   # qstat server files: TYPE ADDRESS\n  fragstat master q3 master.example.org --probe --online\n\nExit status: 0 when at least one server answered, 1 on a runtime failure, 2 on a usage error, 3 when no server answered or no master gave a list, 130 when interrupted.\nGames: see `fragstat games`."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Query game servers.
    #[command(
        after_help = "Examples:\n  fragstat query q3 example.org -P\n  fragstat query q3 -f list.txt --format ndjson\n  fragstat query -f qstat-servers.txt --online --sort players,ping"
    )]
    Query(scan::QueryArgs),
    /// List servers from master servers (several are merged, duplicates removed).
    #[command(
        after_help = "Examples:\n  fragstat master rtcw   # every master of the catalogue (--list-masters), merged\n  fragstat master q3 master.example.org\n  fragstat master openarena dpmaster.example.org --ext --probe -P\n  fragstat master ddnet master1.ddnet.org   # HTTP: https://HOST/ddnet/15/servers.json"
    )]
    Master(scan::MasterArgs),
    /// Decode saved datagrams (UDP payloads) as JSON: one datagram, or the parts of one
    /// multi-datagram reply (DDNet iext + iex+, dtsf parts, a master's list in pieces);
    /// several replies that are not parts of one (a getinfo and a getstatus reply) give a
    /// JSON array, one object per file; for games with an HTTP master, a saved list body
    /// (DDNet servers.json, the ETQW feed). `query --save-dir` saves what servers send.
    Decode {
        /// Game id (see `fragstat games`).
        game: String,
        /// Files holding the datagrams ('-' for standard input).
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Run emulated game servers (and an emulated master) on real sockets until interrupted.
    #[cfg(feature = "serve")]
    Serve(serve::ServeArgs),
    /// Start emulated servers and a master on loopback, discover and probe them, print the table.
    #[cfg(feature = "serve")]
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
    /// Scan servers (and masters' lists) every interval and print what changed: servers up
    /// and down, maps, names, players joining and leaving (one event a line).
    #[command(
        after_help = "Examples:\n  fragstat watch q3 example.org:27960 --interval-secs 30\n  fragstat watch openarena --master dpmaster.example.org --format table\n  fragstat watch q3 -f servers.txt --rounds 10 --initial   # events of the first scan too"
    )]
    Watch(watch::WatchArgs),
    /// Poll masters and servers every interval, keep their history (SQLite or PostgreSQL) and
    /// serve a server browser, a JSON API and Prometheus metrics (docs/tracker.md).
    #[cfg(feature = "track")]
    Track(track::TrackArgs),
    /// Run a master server (dpmaster protocol: Q3A, W:ET, OpenArena, Warsow, Nexuiz…) until
    /// interrupted.
    #[cfg(feature = "master-server")]
    MasterServer(Box<master_server::MasterServerArgs>),
    /// List the games this build knows: id, title, family, default ports, aliases (qstat's
    /// server types among them), qstat's master types for `fragstat master`, and `oob:NN`.
    Games {
        /// Output format.
        #[arg(long, value_enum, default_value = "table")]
        format: GamesFormat,
    },
    /// Shell completions or the man page, generated from these options (`cargo xtask
    /// completions` writes them all).
    #[command(hide = true)]
    Generate {
        /// `bash`, `zsh`, `fish`, `elvish`, `powershell`, or `man`.
        what: String,
    },
}

/// How results are printed.
#[derive(Clone, Copy, ValueEnum, PartialEq, Eq, Debug)]
pub enum Format {
    /// A browser table.
    Table,
    /// One JSON document at the end: `query`, an array of servers; `master`, an object with
    /// `masters` and `servers`; `games`, an array of games.
    Json,
    /// One JSON object per line, as each server answers.
    Ndjson,
    /// Comma-separated values: a header line, one server per line.
    Csv,
    /// Tab-separated values: a header line, one server per line.
    Tsv,
}

/// How `fragstat games` prints the games.
#[derive(Clone, Copy, ValueEnum, PartialEq, Eq, Debug)]
pub enum GamesFormat {
    /// A table, one game a line, with a closing line about `oob:NN`.
    Table,
    /// One JSON array of games.
    Json,
    /// One JSON object per game, a line each.
    Ndjson,
    /// Comma-separated values: a header line, one game per line.
    Csv,
    /// Tab-separated values: a header line, one game per line.
    Tsv,
}

/// Prints a usage error; exit status 2.
pub fn usage(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("error: {msg}");
    ExitCode::from(2)
}

/// The game named on the command line, or a usage error.
pub fn lookup_game(id: &str) -> Result<GameRef, ExitCode> {
    if let Some(g) = list::qstat_master_type(id) {
        return Err(usage(format!(
            "{id} is qstat's master type: fragstat master {} ADDR lists a master (--probe asks its servers)",
            g.id()
        )));
    }
    unknown_game(id)
}

/// The game `id` names for `master`: a game id or alias, or qstat's master type of it (`q3m`,
/// `woetm`, `rwm`, `dm3m`, `q4m`, `preym`, `openarenam`, `warsowm`, `nexuizm`, `teem`…).
pub fn lookup_master_game(id: &str) -> Result<GameRef, ExitCode> {
    match list::qstat_master_type(id) {
        Some(g) => Ok(g),
        None => unknown_game(id),
    }
}

fn unknown_game(id: &str) -> Result<GameRef, ExitCode> {
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

/// What qstat users type, and fragstat's word for it: a single-dash word is qstat's spelling
/// (clap would read `-json` as `-j -s -o -n`).
fn qstat_hint(arg: &str) -> Option<&'static str> {
    Some(match arg {
        "-json" => "--format json",
        "-xml" => "--format json (fragstat writes no XML)",
        "-raw" => "--format csv or --format tsv",
        "-sort" => "--sort (ping, players, name, map, address, game, list; or p, n, h, i, g, l)",
        "-nh" => "--no-header",
        "-u" => "--online",
        "-ne" => "--not-empty",
        "-nf" => "--not-full",
        "-timeout" => "--timeout-ms",
        "-retry" => "--retries",
        "-maxsim" => "--concurrency",
        "-default" => "the game as the first argument: fragstat query GAME ADDR...",
        "-progress" => "--progress always",
        "-cfg" | "-nocfg" => "nothing: fragstat needs no configuration file",
        "-of" | "-af" => "a shell redirection (> file, >> file)",
        _ => return None,
    })
}

/// Parses the command line; a qstat-style single-dash word gets a pointer to fragstat's
/// option.
fn parse() -> Cli {
    match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            use clap::error::ErrorKind;
            if !matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
                let args: Vec<String> = std::env::args().skip(1).collect();
                let end = args.iter().position(|a| a == "--").unwrap_or(args.len());
                for a in args.iter().take(end) {
                    let word = a.len() > 2
                        && a.starts_with('-')
                        && !a.starts_with("--")
                        && a[1..].chars().all(|c| c.is_ascii_alphanumeric());
                    if !word {
                        continue;
                    }
                    if let Some(hint) = qstat_hint(a) {
                        eprintln!("error: {a} is qstat's option: use {hint}");
                        std::process::exit(2);
                    }
                    // `-q3s` and the like: a qstat game option.
                    if let Some(g) = fragstat::game(&a[1..]) {
                        eprintln!(
                            "error: {a} is qstat's way to name a game: fragstat query {} ADDR...",
                            g.id()
                        );
                        std::process::exit(2);
                    }
                }
            }
            e.exit()
        }
    }
}

fn main() -> ExitCode {
    let cli = parse();
    // A master server logs its registrations, removals and expiries by default.
    let default_filter = match &cli.command {
        #[cfg(feature = "master-server")]
        Command::MasterServer(_) => "warn,fragstat_master_server=info,fragstat_http_guard=info",
        // The tracker says at info whether it writes the rounds, and MMDB reloads.
        #[cfg(feature = "track")]
        Command::Track(_) => "warn,fragstat_tracker=info",
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
    if let Command::Generate { what } = &cli.command {
        return generate(what);
    }
    // Clients: one thread. The receive task and the batch driver then hand datagrams over
    // without cross-thread wake-ups, and the other cores stay free (docs/benchmarks.md);
    // output is written by a thread of its own. Emulated servers: `--threads`, default one.
    let mut builder = match &cli.command {
        #[cfg(feature = "serve")]
        Command::Serve(a) if a.threads <= 1 => tokio::runtime::Builder::new_current_thread(),
        #[cfg(feature = "serve")]
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
            Command::Query(a) => scan::query(a).await,
            Command::Master(a) => scan::master(a).await,
            Command::Decode { game, files } => decode::decode_files(&game, &files),
            #[cfg(feature = "serve")]
            Command::Serve(a) => serve::serve(a).await,
            #[cfg(feature = "serve")]
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
            #[cfg(feature = "track")]
            Command::Track(a) => track::track(a).await,
            Command::Watch(a) => watch::watch(a).await,
            Command::Games { format } => games(format),
            #[cfg(feature = "master-server")]
            Command::MasterServer(a) => master_server::master_server(*a).await,
            Command::Generate { .. } => Ok(ExitCode::SUCCESS),
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
#[cfg(feature = "serve")]
pub(crate) fn color_stdout() -> bool {
    view::When::Auto.color()
}

/// `fragstat generate SHELL|man`: completions or the man page on stdout.
fn generate(what: &str) -> ExitCode {
    use clap_complete::Shell;
    let mut cmd = Cli::command();
    use std::io::Write;
    // Made whole first, then written: a reader that stops early (`| head`) ends the program
    // quietly, as for every other output.
    let mut text = Vec::new();
    if what == "man" {
        if let Err(e) = clap_mangen::Man::new(cmd).render(&mut text) {
            eprintln!("error: {e}");
            return ExitCode::from(1);
        }
    } else {
        let Ok(shell) = what.parse::<Shell>() else {
            return usage(format!(
                "{what:?}: bash, zsh, fish, elvish, powershell or man"
            ));
        };
        clap_complete::generate(shell, &mut cmd, "fragstat", &mut text);
    }
    let mut out = std::io::stdout().lock();
    match out.write_all(&text).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
        _ => ExitCode::SUCCESS,
    }
}

/// qstat's master types that name `g` (`q3m` for `q3s`): each server type alias ending in
/// `s`, with `m` for the `s`, where it leads back to `g`.
fn master_types(g: &GameRef) -> Vec<String> {
    if g.master_port().is_none() {
        return Vec::new();
    }
    g.aliases()
        .iter()
        .filter_map(|a| {
            let m = format!("{}m", a.strip_suffix('s')?);
            list::qstat_master_type(&m)
                .filter(|t| t.id() == g.id())
                .map(|_| m)
        })
        .collect()
}

/// The line under the games table: the `oob:NN` games, which no list can hold.
const OOB_NOTE: &str = "oob:NN: any other Quake III protocol number NN, asked as q3 (`fragstat query oob:71 ADDR`, `fragstat master oob:71 MASTER`)";

fn games(format: GamesFormat) -> anyhow::Result<ExitCode> {
    let games = fragstat::games();
    let rows: Vec<serde_json::Value> = games
        .iter()
        .map(|g| {
            let mut v = fragstat::game_json(g);
            if let Some(obj) = v.as_object_mut() {
                // Before the catalogue, as this command has always printed them.
                let catalogue = obj.remove("catalogue");
                obj.insert("master_types".into(), serde_json::json!(master_types(g)));
                obj.extend(catalogue.map(|c| ("catalogue".to_string(), c)));
            }
            v
        })
        .collect();
    match format {
        GamesFormat::Json => output::print_line(&serde_json::to_string_pretty(&rows)?)?,
        GamesFormat::Ndjson => {
            for r in &rows {
                output::print_line(&r.to_string())?;
            }
        }
        GamesFormat::Table | GamesFormat::Csv | GamesFormat::Tsv => {
            let head = [
                "ID",
                "FAMILY",
                "PORT",
                "MASTER",
                "TITLE",
                "ALIASES",
                "MASTER_TYPES",
            ];
            let rows: Vec<Vec<String>> = games
                .iter()
                .map(|g| {
                    vec![
                        g.id().to_string(),
                        g.family().to_string(),
                        g.default_port().to_string(),
                        g.master_port().map_or("-".into(), |p| p.to_string()),
                        g.title().to_string(),
                        g.aliases().join(" "),
                        master_types(g).join(" "),
                    ]
                })
                .collect();
            if format == GamesFormat::Table {
                let mut t = vec![head.iter().map(|h| (*h).to_string()).collect::<Vec<_>>()];
                t.extend(rows);
                output::print_line(table::columns(&t).trim_end())?;
                output::print_line(OOB_NOTE)?;
            } else {
                let d = if format == GamesFormat::Csv {
                    b','
                } else {
                    b'\t'
                };
                let mut w = csv::WriterBuilder::new()
                    .delimiter(d)
                    .from_writer(Vec::new());
                w.write_record(head.map(str::to_lowercase))?;
                for r in rows {
                    w.write_record(r)?;
                }
                let bytes = w.into_inner().map_err(|e| anyhow::anyhow!("{e}"))?;
                output::print_line(String::from_utf8_lossy(&bytes).trim_end())?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
