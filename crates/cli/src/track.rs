//! `fragstat track`: the tracker (crates/tracker) from a TOML file or flags, and the demo
//! farm's tracker for `fragstat demo --track`.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Subcommand};
use fragstat_tracker::config::{Config, Source};
use fragstat_tracker::round::RoundReport;
use fragstat_tracker::Tracker;

use crate::usage;

#[derive(Args)]
pub struct TrackArgs {
    /// Read the configuration from this TOML file (docs/tracker.md); flags override it.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Game of the --master and --server flags (see `fragstat games`).
    #[arg(long)]
    game: Option<String>,
    /// A master to poll each round, HOST[:PORT] (repeatable).
    #[arg(long = "master")]
    masters: Vec<String>,
    /// A server to poll each round whatever the masters say, HOST[:PORT] (repeatable).
    #[arg(long = "server")]
    servers: Vec<String>,
    /// Ask masters with the extended request (Quake III getserversExt).
    #[arg(long)]
    ext: bool,
    /// Database: an SQLite file path (created when missing) or a postgres:// URL. Without
    /// it: $FRAGSTAT_DB, then the configuration file's `database`, then $DATABASE_URL, then
    /// fragstat-track.db. A password is best given in the environment (never printed).
    #[arg(long, env = "FRAGSTAT_DB", hide_env_values = true)]
    db: Option<String>,
    /// Web server address, HOST:PORT (default 127.0.0.1:8080; port 0: any free port).
    #[arg(long)]
    listen: Option<std::net::SocketAddr>,
    /// Seconds from one round's start to the next's (default 60).
    #[arg(long)]
    interval_secs: Option<f64>,
    /// Hours of history kept (default 168; 0 keeps everything).
    #[arg(long)]
    retention_hours: Option<f64>,
    /// Milliseconds to wait for one attempt (default 500).
    #[arg(long)]
    timeout_ms: Option<u64>,
    /// Retries after the first attempt (default 2).
    #[arg(long)]
    retries: Option<u32>,
    /// Stop after this many rounds (default: run until interrupted).
    #[arg(long)]
    rounds: Option<u64>,
    /// POST each round's events (servers up and down, maps, players joining and leaving) to
    /// this URL; retried with backoff, never delaying a round (docs/tracker.md, "Events").
    #[arg(long, value_name = "URL")]
    webhook: Option<String>,
    /// The webhook's form: json, or discord (`{"content", "embeds"}`).
    #[arg(long, value_name = "FORMAT", requires = "webhook", value_parser = ["json", "discord"])]
    webhook_format: Option<String>,
    /// A read replica: serve the web from the database, never poll or write (another
    /// tracker on the same database writes the rounds; config `web_only = true`).
    #[arg(long)]
    web_only: bool,
    /// Listen on this UDP address for the events ET: Legacy servers push (their `sv_tracker`
    /// names it; config `[push] listen`): heard from the servers the rounds know, published
    /// at once (docs/tracker.md, "Pushed events").
    #[arg(long, value_name = "ADDR")]
    push_listen: Option<std::net::SocketAddr>,
    /// An administration command instead of tracking.
    #[command(subcommand)]
    action: Option<TrackAction>,
}

/// `fragstat track …`'s administration commands.
#[derive(Subcommand)]
enum TrackAction {
    /// Forget a player everywhere (docs/tracker.md, "Privacy"): delete every identity of the
    /// name (colours stripped, any case), its sessions and its search entries, and never
    /// store it again (a running tracker drops it at its next round).
    Forget(ForgetArgs),
}

#[derive(Args)]
struct ForgetArgs {
    /// The player's name as the site shows it (colours stripped; compared in any case).
    name: String,
    /// The tracker's configuration (its `database`).
    #[arg(long)]
    config: Option<PathBuf>,
    /// The database, as `fragstat track --db` takes it (over the configuration's).
    #[arg(long, env = "FRAGSTAT_DB", hide_env_values = true)]
    db: Option<String>,
}

impl ForgetArgs {
    /// The database: --db, the configuration's `database`, $DATABASE_URL, the default.
    fn database(&self) -> Result<String, String> {
        if let Some(db) = &self.db {
            return Ok(db.clone());
        }
        if let Some(path) = &self.config {
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("reading {}: {e}", path.display()))?;
            let c = Config::parse(&text).map_err(|e| format!("{}: {e}", path.display()))?;
            if text
                .parse::<toml::Table>()
                .is_ok_and(|t| t.contains_key("database"))
            {
                return Ok(c.database);
            }
        }
        match std::env::var("DATABASE_URL") {
            Ok(url) if !url.is_empty() => Ok(url),
            _ => Ok(Config::default().database),
        }
    }
}

/// `fragstat track forget NAME`.
async fn forget(a: ForgetArgs) -> anyhow::Result<ExitCode> {
    if a.name.trim().is_empty() {
        return Ok(usage("forget: the player's name is empty"));
    }
    let database = match a.database() {
        Ok(d) => d,
        Err(e) => return Ok(usage(e)),
    };
    let store = fragstat_tracker::store::Store::open(&database)
        .await
        .context("opening the database")?;
    let done = store.forget(&a.name).await.context("forgetting")?;
    store.close().await;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "forgot {:?}: {} players and {} sessions deleted from {}; never stored again",
        a.name,
        done.players,
        done.sessions,
        fragstat_tracker::store::redact(&database)
    );
    Ok(ExitCode::SUCCESS)
}

impl TrackArgs {
    /// The configuration: the file's, then the flags.
    fn config(&self) -> Result<Config, String> {
        self.config_with(std::env::var("DATABASE_URL").ok())
    }

    /// [`Self::config`] with `database_url` as $DATABASE_URL.
    fn config_with(&self, database_url: Option<String>) -> Result<Config, String> {
        let (mut c, file_names_database) = match &self.config {
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .map_err(|e| format!("reading {}: {e}", path.display()))?;
                let c = Config::parse(&text).map_err(|e| format!("{}: {e}", path.display()))?;
                let names = text
                    .parse::<toml::Table>()
                    .is_ok_and(|t| t.contains_key("database"));
                (c, names)
            }
            None => (Config::default(), false),
        };
        // $DATABASE_URL (shared with other programs) only where nothing more specific says.
        if let (false, Some(url)) = (file_names_database, database_url) {
            if !url.is_empty() {
                c.database = url;
            }
        }
        if !self.masters.is_empty() || !self.servers.is_empty() {
            let Some(game) = &self.game else {
                return Err("--master and --server need --game".into());
            };
            c.sources.push(Source {
                game: game.clone(),
                masters: self.masters.clone(),
                servers: self.servers.clone(),
                ext: self.ext,
            });
        } else if self.game.is_some() {
            return Err("--game needs --master or --server".into());
        }
        if let Some(v) = &self.db {
            c.database = v.clone();
        }
        if let Some(v) = self.listen {
            c.listen = v;
        }
        if let Some(v) = self.interval_secs {
            c.interval_secs = v;
        }
        if let Some(v) = self.retention_hours {
            c.retention_hours = v;
        }
        if let Some(v) = self.timeout_ms {
            c.timeout_ms = v;
        }
        if let Some(v) = self.retries {
            c.retries = v;
        }
        if self.web_only {
            c.web_only = true;
        }
        if let Some(addr) = self.push_listen {
            match &mut c.push {
                Some(p) => p.listen = addr,
                None => c.push = Some(fragstat_tracker::push::PushConfig::on(addr)),
            }
        }
        if let Some(v) = self.rounds {
            c.rounds = v;
        }
        if let Some(v) = &self.webhook {
            c.webhook = Some(v.clone());
        }
        if let Some(v) = &self.webhook_format {
            c.webhook_format = if v == "discord" {
                fragstat_tracker::config::WebhookFormat::Discord
            } else {
                fragstat_tracker::config::WebhookFormat::Json
            };
        }
        c.check().map_err(|e| e.to_string())?;
        Ok(c)
    }
}

/// One line per round on stdout: its number and start time, then what it saw.
fn print_round(number: u64, r: &RoundReport) {
    let online = r
        .data
        .records
        .iter()
        .filter(|r| r.status == fragstat::core::record::Status::Online)
        .count();
    let players: u64 = r
        .data
        .records
        .iter()
        .filter_map(|r| r.info.as_ref())
        .map(|i| u64::from(i.num_players))
        .sum();
    let masters: Vec<String> = r
        .masters
        .iter()
        .map(|m| match (m.servers, &m.error) {
            (Some(n), _) => format!("{} listed {n}", m.master),
            (None, Some(e)) => format!("{}: {e}", m.master),
            (None, None) => m.master.clone(),
        })
        .collect();
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "round {number} ({}): {online} of {} servers online, {players} players in {:.0} ms, written in {:.0} ms{}{}",
        fragstat_tracker::web::time_text(r.data.at),
        r.data.records.len(),
        r.elapsed.as_secs_f64() * 1e3,
        r.write.as_secs_f64() * 1e3,
        if masters.is_empty() {
            ""
        } else {
            "; masters: "
        },
        masters.join(", ")
    );
    let _ = out.flush();
}

/// Runs the tracker until its rounds are done or Ctrl-C / SIGTERM; prints the URL first.
pub async fn run_tracker(config: Config) -> anyhow::Result<ExitCode> {
    let tracker = Tracker::open(config)
        .await
        .context("starting the tracker")?;
    let database = fragstat_tracker::store::redact(&tracker.config().database);
    let listener = fragstat_tracker::web::bind(tracker.config().listen)
        .await
        .with_context(|| format!("binding {}", tracker.config().listen))?;
    let addr = listener.local_addr()?;
    {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(
            out,
            "tracking into {database} ({}); browse http://{addr}{}/",
            tracker.store().backend(),
            tracker.config().web.base()
        );
        let _ = out.flush();
    }
    let rounds = std::cell::Cell::new(0u64);
    let stop = until_stopped_reloading_on_hangup(&tracker)?;
    tracker
        .run(listener, stop, |r| {
            rounds.set(rounds.get() + 1);
            print_round(rounds.get(), r);
        })
        .await?;
    tracker.store().close().await;
    Ok(ExitCode::SUCCESS)
}

/// Resolves on Ctrl-C or SIGTERM; meanwhile each SIGHUP reloads the MMDB file
/// ([`Tracker::reload_geoip`]; SIGHUP would otherwise end the process).
fn until_stopped_reloading_on_hangup(
    tracker: &Tracker,
) -> anyhow::Result<impl std::future::Future<Output = ()> + '_> {
    #[cfg(unix)]
    let mut hangup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())
        .context("installing the SIGHUP handler")?;
    Ok(async move {
        let stop = crate::signal::wait_for_signal();
        tokio::pin!(stop);
        loop {
            #[cfg(unix)]
            tokio::select! {
                () = &mut stop => return,
                _ = hangup.recv() => {
                    // Logged either way; the tracker goes on.
                    let _ = tracker.reload_geoip();
                }
            }
            #[cfg(not(unix))]
            {
                let _ = tracker;
                return stop.await;
            }
        }
    })
}

/// `fragstat track`.
pub async fn track(mut a: TrackArgs) -> anyhow::Result<ExitCode> {
    if let Some(TrackAction::Forget(f)) = a.action.take() {
        return forget(f).await;
    }
    let config = match a.config() {
        Ok(c) => c,
        Err(e) => return Ok(usage(e)),
    };
    run_tracker(config).await
}
