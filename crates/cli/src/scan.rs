//! `fragstat query` and `fragstat master`: servers given, read from lists (qstat's server files
//! included) or from masters, scanned through a [`fragstat::Client`] and printed.

use std::collections::HashSet;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use fragstat::core::record::{Record, Status};
use fragstat::core::registry::{Ask, GameRef, MasterQuery};
use fragstat::{defaults, Client};
use futures_util::StreamExt;

use crate::list::{self, Entry};
use crate::output::{Output, Stop};
use crate::view::{Filter, SortKey, When};
use crate::{lookup_game, usage, Format, EXIT_INTERRUPTED, EXIT_NO_ANSWER};

#[derive(Args, Clone)]
pub struct ScanArgs {
    /// Ask for the player list (qstat -P).
    #[arg(short = 'P', long)]
    players: bool,
    /// Ask for every server variable (implies the players where they come together, as in
    /// getstatus); the table shows them under each server (qstat -R).
    #[arg(short = 'R', long)]
    rules: bool,
    /// Output format. csv and tsv: a header line, then one server per line; with --players
    /// each player is a line of its own right after its server (kind = player).
    #[arg(long, value_enum, default_value = "table")]
    format: Format,
    /// Sort by: ping, players, name, map, address, game, list (comma-separated; `-ping` the
    /// other way round, e.g. `--sort=-players`; qstat's -sort letters p, n, h, i, g, l too,
    /// capitals the other way round). Servers that did not answer come last. Default: as
    /// given.
    #[arg(long, value_parser = crate::view::parse_sort, default_value = "list", allow_hyphen_values = true)]
    sort: crate::view::SortKeys,
    /// Only servers that answered (qstat -u).
    #[arg(long)]
    online: bool,
    /// Not servers that answered with nobody on them (qstat -ne).
    #[arg(long)]
    not_empty: bool,
    /// Not servers that answered full (qstat -nf).
    #[arg(long)]
    not_full: bool,
    /// No header line (table, csv, tsv; qstat -nh).
    #[arg(long)]
    no_header: bool,
    /// Colours in the table: auto (a terminal, and NO_COLOR not set), always, never.
    #[arg(long, value_enum, default_value = "auto")]
    color: When,
    /// A progress bar on stderr: auto (a terminal, ten servers or more), always (when
    /// stderr is not a terminal, a line at most once a second as servers answer), never.
    #[arg(long, value_enum, default_value = "auto")]
    progress: When,
    /// Milliseconds to wait for a reply to one attempt: the upper bound of the adaptive
    /// timeout, and what the last attempt waits.
    #[arg(long, default_value_t = defaults::TIMEOUT.as_millis() as u64, value_parser = crate::args::timeout_ms, allow_negative_numbers = true)]
    timeout_ms: u64,
    /// Wait the whole --timeout-ms on every attempt. By default, once servers have answered,
    /// an attempt that is not the last is retried after the measured round-trip time plus
    /// four times its variation (as TCP does), doubled per retry.
    #[arg(long)]
    fixed_timeout: bool,
    /// The shortest adaptive timeout, in milliseconds.
    #[arg(long, default_value_t = defaults::MIN_TIMEOUT.as_millis() as u64, value_parser = crate::args::count_u64, allow_negative_numbers = true)]
    min_timeout_ms: u64,
    /// Retries after the first attempt. Five, not qstat's three: with adaptive timeouts a
    /// retry costs a few round trips, and at 20 % loss three retries still leave about 16
    /// servers in 10,000 unanswered (0.2^4), five about one (0.2^6).
    #[arg(long, default_value_t = defaults::RETRIES, value_parser = crate::args::count_u32, allow_negative_numbers = true)]
    retries: u32,
    /// Queries in flight at once.
    #[arg(long, default_value_t = defaults::CONCURRENCY as u32, value_parser = crate::args::concurrency, allow_negative_numbers = true)]
    concurrency: u32,
    /// At most this many packets per second (0: unpaced).
    #[arg(long, default_value_t = 0, value_parser = crate::args::count_u32, allow_negative_numbers = true)]
    rate: u32,
    /// Give up on the whole scan, name lookups included, after this many milliseconds (0: no
    /// limit).
    #[arg(long, default_value_t = 0, value_parser = crate::args::count_u64, allow_negative_numbers = true)]
    deadline_ms: u64,
}

impl ScanArgs {
    /// The client for this command: its options over the shared defaults.
    /// `master`: the master timeout, the per-address cap, whether private addresses are kept
    /// and the quiet period (`None` for `query`).
    async fn client(&self, master: Option<(u64, u64, bool, u64)>) -> anyhow::Result<Client> {
        let mut b = Client::builder()
            .timeout(Duration::from_millis(self.timeout_ms))
            .retries(self.retries)
            .adaptive(!self.fixed_timeout)
            .min_timeout(Duration::from_millis(self.min_timeout_ms))
            .concurrency(usize::try_from(self.concurrency).unwrap_or(usize::MAX))
            .rate((self.rate > 0).then_some(self.rate))
            .deadline(self.deadline())
            .resolve_timeout(self.resolve_timeout());
        if let Some((ms, max_per_ip, keep_private, quiet)) = master {
            // HTTP lists take a few seconds at least.
            let http = Duration::from_millis(ms.max(5000));
            b = b
                .master_timeout(Duration::from_millis(ms))
                .master_quiet(Duration::from_millis(quiet))
                .http_timeout(self.deadline().map_or(http, |d| d.min(http)));
            let max_per_ip = usize::try_from(max_per_ip).unwrap_or(usize::MAX);
            if max_per_ip != defaults::MAX_PORTS_PER_IP {
                b = b.list_limits(fragstat::ListLimits {
                    max_ports_per_ip: max_per_ip,
                    ..fragstat::ListLimits::default()
                });
            }
            if keep_private {
                b = b.list_filter(fragstat::ListFilter::keep_all());
            }
        }
        b.build().context("binding UDP sockets")
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

    fn view(&self) -> crate::output::View {
        crate::output::View {
            players: self.players || self.rules,
            rules: self.rules,
            color: self.color.color(),
            header: !self.no_header,
            sort: self
                .sort
                .0
                .iter()
                .copied()
                .filter(|k| k.key != SortKey::List)
                .collect(),
            filter: Filter {
                online: self.online,
                not_empty: self.not_empty,
                not_full: self.not_full,
            },
        }
    }

    /// Checks what clap cannot: options that contradict each other.
    fn check(&self) -> Result<(), ExitCode> {
        if self.min_timeout_ms > self.timeout_ms {
            return Err(usage(format!(
                "--min-timeout-ms {} is above --timeout-ms {}",
                self.min_timeout_ms, self.timeout_ms
            )));
        }
        Ok(())
    }
}

#[derive(Args)]
pub struct QueryArgs {
    /// Game id (see `fragstat games`; qstat's type names work too). May be left out with
    /// -f FILE when every address in the file has its type (`q3s 1.2.3.4`).
    game: Option<String>,
    /// Servers: HOST[:PORT], [IPv6]:PORT (default: the game's port).
    addrs: Vec<String>,
    /// Read servers from a file ('-' for standard input; repeatable): one per line, or
    /// qstat's server files (`TYPE ADDRESS` with qstat's type names, several games in one
    /// file, separated by white space); '#' starts a comment. Duplicates are asked once.
    #[arg(short = 'f', long = "file")]
    file: Vec<PathBuf>,
    /// Ask with the game's short query instead (Warsow/Warfork `info <protocol> full
    /// empty`: name, map, counts, game type; no players or rules). Games without one are
    /// refused.
    #[arg(long, conflicts_with_all = ["players", "rules"])]
    short: bool,
    /// The protocol the short query names (default: the game's own, e.g. 22 for Warsow
    /// 2.1; Warsow 0.3 is 9).
    #[arg(long, value_name = "N", requires = "short", value_parser = clap::value_parser!(i32).range(0..))]
    protocol: Option<i32>,
    /// Write every datagram the servers send to DIR (`ADDRESS-N.bin`, in the order
    /// received), for `fragstat decode` or a bug report. The servers are asked one query
    /// each, with --timeout-ms and --retries (not --rate or --concurrency).
    #[arg(long, value_name = "DIR")]
    save_dir: Option<PathBuf>,
    #[command(flatten)]
    scan: ScanArgs,
}

#[derive(Args)]
pub struct MasterArgs {
    /// Game id (see `fragstat games`; qstat's master type names work too, e.g. q3m).
    game: String,
    /// Masters: HOST[:PORT] (default: the game's master port); for games with an HTTP master
    /// list (ddnet, etqw) a URL, or HOST[:PORT] for the list's standard path. None given:
    /// every master of the game's catalogue (see --list-masters), merged.
    masters: Vec<String>,
    /// Print the game's catalogue (the masters asked when none is given: address,
    /// transport, request form, end of list, protocols, source and the date it was checked)
    /// and exit, sending nothing.
    #[arg(long)]
    list_masters: bool,
    /// Ask ADDR instead of the catalogue master MASTER (HOST:PORT, or an HTTP list's URL, as
    /// --list-masters prints it), with the same request form and protocols: a local mirror,
    /// a test. Repeatable; only when no master is given.
    #[arg(long, value_name = "MASTER=ADDR", conflicts_with = "masters")]
    master_at: Vec<String>,
    /// Milliseconds a master may stay quiet after a datagram of its list before the list is
    /// whole: the end of lists without an end-of-list marker (id's, etmaster.net's,
    /// Tremulous' masters). 0: the master timeout.
    #[arg(long, default_value_t = defaults::MASTER_QUIET.as_millis() as u64)]
    master_quiet_ms: u64,
    /// Query every listed server (implied by --players and --rules).
    #[arg(long)]
    probe: bool,
    /// Ask with the extended request where the game has one (Quake III getserversExt, which
    /// lists IPv6 servers too).
    #[arg(long)]
    ext: bool,
    /// Game name for the extended request (default: the game's own, e.g. Quake3Arena, et).
    #[arg(long, requires = "ext")]
    gamename: Option<String>,
    /// The protocol to ask the master for (default: the game's own; e.g. `fragstat master
    /// warsow M --protocol 9` sends `getservers Warsow 9 full empty`, Warsow 0.3's list).
    /// Games whose master request names no protocol ignore it.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(i32).range(0..))]
    protocol: Option<i32>,
    /// Milliseconds to wait for a master's reply (and between the datagrams of its list).
    #[arg(long, default_value_t = defaults::MASTER_TIMEOUT.as_millis() as u64, value_parser = crate::args::timeout_ms, allow_negative_numbers = true)]
    master_timeout_ms: u64,
    /// Most ports of one IPv4 address or IPv6 /64 probed (a list naming every port of a
    /// host, or every address of a network, is a scan waiting to happen).
    #[arg(long, default_value_t = defaults::MAX_PORTS_PER_IP as u64, value_parser = crate::args::max_per_ip, allow_negative_numbers = true)]
    max_per_ip: u64,
    /// Keep private, loopback, link-local, multicast and reserved addresses (by default
    /// only public ones are probed, and loopback ones from a master on loopback).
    #[arg(long)]
    keep_private: bool,
    #[command(flatten)]
    scan: ScanArgs,
}

/// A server to probe, or an entry that cannot be (with why), at its position in the input.
pub type Target = (GameRef, String, Result<SocketAddr, String>);

/// Probes `targets` (in input order; the unreadable and unresolvable ones become records at
/// their places) and prints them. Exit status 0 when at least one answered, 3 when none did,
/// 130 when interrupted.
async fn probe(
    client: &Client,
    targets: Vec<Target>,
    scan: &ScanArgs,
    ask: Ask,
    started: Instant,
    masters: Option<&[fragstat::MasterReport]>,
) -> anyhow::Result<ExitCode> {
    let mut out = Output::start(scan.format, scan.view(), masters);
    let total = targets.len();
    let mut jobs = Vec::with_capacity(targets.len());
    let mut positions = Vec::with_capacity(targets.len());
    for (i, (game, text, addr)) in targets.into_iter().enumerate() {
        match addr {
            Ok(a) => {
                jobs.push((game, a));
                positions.push(i);
            }
            Err(e) => out.record(i, Record::failed(Some(text), game.id(), Status::Error, e)),
        }
    }
    let mut progress = crate::progress::Progress::new(scan.progress, jobs.len());
    let asked_max = jobs.len();
    // Each server's query is made when it starts; results come as servers answer.
    let mut results = client
        .scan_each(jobs)
        .ask(ask)
        .dedupe(false)
        // Name lookups and master lists count against --deadline-ms.
        .deadline(scan.deadline().map(|d| d.saturating_sub(started.elapsed())))
        .indexed();
    let mut online = 0usize;
    let mut answered = 0usize;
    // One listener for the whole scan, so no Ctrl-C falls between two waits.
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);
    // Wakes the scan when queued NDJSON lines are due for the writer and no reply came.
    let flush = tokio::time::sleep(crate::output::FLUSH_AFTER);
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
            if let Some(p) = &mut progress {
                p.inc();
            }
            answered += 1;
            let r = fragstat::record(&item.game, item.addr, item.result);
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
    if let Some(p) = progress {
        p.finish();
    }
    if interrupted {
        out.interrupted(total, asked_max.saturating_sub(answered));
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

pub async fn query(a: QueryArgs) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    if let Err(code) = a.scan.check() {
        return Ok(code);
    }
    let game = match &a.game {
        Some(id) => match lookup_game(id) {
            Ok(g) => Some(g),
            Err(code) => return Ok(code),
        },
        None => None,
    };
    // A mistyped address is a usage error, said before anything is sent.
    if let Err(code) = crate::args::check_addresses(&a.addrs) {
        return Ok(code);
    }
    let mut entries: Vec<Entry> = Vec::new();
    if !a.addrs.is_empty() {
        let Some(g) = &game else {
            return Ok(usage("no game given (GAME ADDR..., or -f FILE)"));
        };
        entries.extend(a.addrs.iter().map(|t| Entry::Server {
            game: g.clone(),
            text: t.clone(),
            addr: t.parse().ok(),
        }));
    }
    for f in &a.file {
        match list::read_list(f, game.as_ref()) {
            Ok(read) => entries.extend(read),
            Err(list::ListError::Usage(code)) => return Ok(code),
            Err(list::ListError::Io(e)) => return Err(e),
        }
    }
    if entries.is_empty() {
        return Ok(usage(if game.is_some() {
            "no servers given (ADDR... or -f FILE)"
        } else {
            "no game and no servers given (GAME ADDR..., or -f FILE)"
        }));
    }
    let ask = a.scan.ask().with_short(a.short).with_protocol(a.protocol);
    // Every game asked must have what is asked for (a server file may name several).
    let mut checked: HashSet<String> = HashSet::new();
    for e in &entries {
        if let Entry::Server { game, .. } = e {
            if checked.insert(game.id().to_string()) {
                if let Err(e) = game.check_ask(ask) {
                    return Ok(usage(format!("--short: {e}")));
                }
            }
        }
    }
    let client = a.scan.client(None).await?;
    let targets = resolve(&client, entries, game.as_ref()).await;
    if let Some(dir) = &a.save_dir {
        let asking = crate::save::Asking {
            ask,
            timeout: Duration::from_millis(a.scan.timeout_ms),
            retries: a.scan.retries,
        };
        let out = Output::start(a.scan.format, a.scan.view(), None);
        return crate::save::run(dir, targets, asking, out).await;
    }
    probe(&client, targets, &a.scan, ask, started, None).await
}

/// Resolves every server of `entries` with its game's default port (all at once), and asks
/// each server once: a repeated one (same game, same address once resolved) is left out.
/// Literal addresses were read by the list already; only names go to the resolver.
async fn resolve(client: &Client, entries: Vec<Entry>, default: Option<&GameRef>) -> Vec<Target> {
    // The names of each game resolve with that game's port.
    let mut by_game: Vec<(GameRef, Vec<usize>)> = Vec::new();
    let mut slots: Vec<Option<Target>> = Vec::with_capacity(entries.len());
    // Which of `by_game` each slot's game is (for telling repeats apart without its id).
    let mut game_of: Vec<Option<usize>> = Vec::with_capacity(entries.len());
    let fallback = default
        .cloned()
        .or_else(|| fragstat::games().into_iter().next());
    for (i, e) in entries.into_iter().enumerate() {
        match e {
            Entry::Server { game, text, addr } => {
                let g = match by_game.iter().position(|(g, _)| g.id() == game.id()) {
                    Some(g) => g,
                    None => {
                        by_game.push((game.clone(), Vec::new()));
                        by_game.len() - 1
                    }
                };
                game_of.push(Some(g));
                let addr = match addr {
                    Some(a) if a.port() != 0 => Ok(a),
                    // A bad name (or port 0) is said without asking a resolver.
                    _ => match crate::args::check_address(&text) {
                        Err(e) => Err(e),
                        Ok(()) => {
                            if let Some((_, idx)) = by_game.get_mut(g) {
                                idx.push(i);
                            }
                            Err(String::new())
                        }
                    },
                };
                slots.push(Some((game, text, addr)));
            }
            Entry::Bad { text, reason } => {
                game_of.push(None);
                match &fallback {
                    Some(g) => slots.push(Some((g.clone(), text, Err(reason)))),
                    None => slots.push(None),
                }
            }
        }
    }
    for (game, idx) in by_game.iter().filter(|(_, idx)| !idx.is_empty()) {
        let texts: Vec<String> = idx
            .iter()
            .map(|&i| {
                // Every index is a server's slot: one text per index keeps the zip aligned.
                slots
                    .get(i)
                    .and_then(Option::as_ref)
                    .map(|t| t.1.clone())
                    .unwrap_or_default()
            })
            .collect();
        let resolved = client.resolve_owned(texts, game.default_port()).await;
        for (&i, (text, r)) in idx.iter().zip(resolved) {
            if let Some(Some(t)) = slots.get_mut(i) {
                t.2 = r.map_err(|e| fragstat::resolve_error(&text, &e));
            }
        }
    }
    let mut seen: HashSet<(usize, SocketAddr)> = HashSet::with_capacity(slots.len());
    slots
        .into_iter()
        .zip(game_of)
        .filter_map(|(t, g)| Some((t?, g)))
        .filter(|((_, _, a), g)| match (a, g) {
            (Ok(addr), Some(g)) => seen.insert((*g, *addr)),
            _ => true,
        })
        .map(|(t, _)| t)
        .collect()
}

pub async fn master(a: MasterArgs) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    if let Err(code) = a.scan.check() {
        return Ok(code);
    }
    let game = match crate::lookup_master_game(&a.game) {
        Ok(g) => g,
        Err(code) => return Ok(code),
    };
    if a.list_masters {
        return Ok(crate::masters::print_catalogue(&game, a.scan.format));
    }
    // No master given: the catalogue (with --master-at's substitutions).
    let catalogue = if a.masters.is_empty() {
        match crate::masters::catalogue(&game, &a.master_at) {
            Ok(c) => Some(c),
            Err(e) => return Ok(usage(e)),
        }
    } else {
        None
    };
    let udp = matches!(
        game.master_query(&fragstat::MasterOptions::default()),
        Ok(MasterQuery::Udp(_))
    );
    if udp {
        if let Err(code) =
            crate::args::check_addresses(a.masters.iter().filter(|m| !m.contains("://")))
        {
            return Ok(code);
        }
    }
    let client = a
        .scan
        .client(Some((
            a.master_timeout_ms,
            a.max_per_ip,
            a.keep_private,
            a.master_quiet_ms,
        )))
        .await?;
    let masters = if udp {
        crate::masters::dedupe(&client, &game, &a.masters).await
    } else {
        a.masters.clone()
    };
    let mut request = client
        .master_list(&game, masters.iter())
        .ext(a.ext)
        .gamename(a.gamename.clone())
        .protocol(a.protocol);
    if let Some(c) = catalogue {
        request = request.catalogue(c);
    }
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
    crate::masters::print_reports(&list, !a.ext && has_ext(&game));
    let any_online = list.any_online();
    // Lists that carry each server's info (DDNet's HTTP master) need no probe to be shown.
    if any_online && (a.probe || a.scan.players || a.scan.rules) {
        let targets: Vec<Target> = list
            .servers()
            .map(|s| (game.clone(), s.to_string(), Ok(s)))
            .collect();
        let ask = a.scan.ask();
        return probe(
            &client,
            targets,
            &a.scan,
            ask,
            started,
            Some(list.reports()),
        )
        .await;
    }
    crate::masters::print_list(&game, list, a.scan.format, &a.scan.view())?;
    Ok(if any_online {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_NO_ANSWER)
    })
}

/// Whether `game`'s master has an extended request (`--ext`).
fn has_ext(game: &GameRef) -> bool {
    matches!(
        game.master_query(&fragstat::MasterOptions::default().with_ext(true)),
        Ok(MasterQuery::Udp(_))
    )
}

/// `n thing` or `n things`.
pub fn count(n: usize, thing: &str) -> String {
    if n == 1 {
        format!("1 {thing}")
    } else {
        format!("{n} {thing}s")
    }
}
