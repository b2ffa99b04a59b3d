//! The masters of `fragstat master`: the game's catalogue when none is given (printed by
//! `--list-masters`, substituted by `--master-at`), each given master asked once, and what
//! each answered.

use std::net::SocketAddr;
use std::process::ExitCode;

use fragstat::core::registry::{CatalogueMaster, GameRef};
use fragstat::{Client, MasterList};

use crate::Format;

/// `--list-masters`: the game's catalogue, as a table or JSON (an array of entries:
/// `address`, `transport`, `form`, `end`, `protocols`, `source`, `checked`); nothing is sent.
pub fn print_catalogue(game: &GameRef, format: Format) -> ExitCode {
    let masters = game.catalogue();
    match format {
        Format::Json | Format::Ndjson => {
            let json = if format == Format::Json {
                serde_json::to_string_pretty(masters)
            } else {
                masters
                    .iter()
                    .map(serde_json::to_string)
                    .collect::<Result<Vec<_>, _>>()
                    .map(|l| l.join("\n"))
            };
            match json {
                Ok(j) if !j.is_empty() => println!("{j}"),
                Ok(_) => {}
                Err(e) => eprintln!("{e}"),
            }
        }
        _ => {
            for m in masters {
                let protocols = if m.protocols.is_empty() {
                    "own".to_string()
                } else {
                    m.protocols
                        .iter()
                        .map(i32::to_string)
                        .collect::<Vec<_>>()
                        .join(",")
                };
                println!(
                    "{}\t{}\t{}\t{}\t{}\t{} ({})",
                    m.address(),
                    m.transport,
                    m.form,
                    m.end,
                    protocols,
                    m.source,
                    m.checked
                );
            }
            if masters.is_empty() {
                eprintln!("{} has no master in the catalogue", game.id());
            }
        }
    }
    ExitCode::SUCCESS
}

/// The catalogue to ask when no master is given: the game's, each entry named by a
/// `--master-at MASTER=ADDR` asked at ADDR instead. An error (for a usage message) when the
/// game has none, or a `--master-at` names no entry or no address.
pub fn catalogue(game: &GameRef, at: &[String]) -> Result<Vec<CatalogueMaster>, String> {
    let mut pairs = Vec::with_capacity(at.len());
    for a in at {
        let (key, addr) = a
            .rsplit_once('=')
            .ok_or_else(|| format!("--master-at {a}: expected MASTER=ADDR"))?;
        let addr: SocketAddr = addr
            .parse()
            .map_err(|_| format!("--master-at {a}: {addr} is not an IP:PORT"))?;
        pairs.push((key.to_string(), addr));
    }
    fragstat::catalogue_at(game, &pairs).map_err(|e| {
        let text = e.to_string();
        // An entry not in the catalogue: say which --master-at named it.
        let named = |a: &&String| {
            a.rsplit_once('=')
                .is_some_and(|(k, _)| text.starts_with(&format!("{k} is not in ")))
        };
        match at.iter().find(named) {
            Some(a) if !game.catalogue().is_empty() => {
                format!("--master-at {a}: {text} (see --list-masters)")
            }
            _ => text,
        }
    })
}

/// The masters to ask, each address once ([`Client::dedupe_masters`]), saying on stderr
/// which were left out.
pub async fn dedupe(client: &Client, game: &GameRef, masters: &[String]) -> Vec<String> {
    let (kept, notes) = client.dedupe_masters(game, masters).await;
    for n in notes {
        eprintln!("{n}");
    }
    kept
}

/// Each master's failure, warnings and what was left out of its list, on stderr; a hint
/// when `ext_hint` (the game has `--ext`, not used) and nothing was listed, or a line when
/// no master gave a list.
pub fn print_reports(list: &MasterList, ext_hint: bool) {
    print_each(list);
    let any_online = list.any_online();
    if any_online && ext_hint && list.reports().iter().all(|r| r.listed == 0) {
        eprintln!(
            "hint: no master listed a server for `getservers`, which lists IPv4 servers only; --ext asks with getserversExt, which lists IPv6 servers too"
        );
    }
    if !any_online {
        eprintln!(
            "no master gave a list ({} asked)",
            crate::scan::count(list.reports().len(), "master")
        );
    }
}

/// The merged list without probing (docs/json.md): each server with the masters that
/// listed it.
pub fn print_list(
    game: &GameRef,
    list: MasterList,
    format: Format,
    view: &crate::output::View,
) -> Result<(), crate::output::Stop> {
    let mut list = list;
    list.clear_no_time(game);
    crate::output::master_list(game.id(), format, &list, view)
}

fn print_each(list: &MasterList) {
    for r in list.reports() {
        if let Some(e) = &r.error {
            // An HTTP error names its URL first: not twice when the master was given as one.
            let text = e.to_string();
            match text.strip_prefix(&format!("{}: ", r.master)) {
                Some(rest) => eprintln!("master {}: {rest}", r.master),
                None => eprintln!("master {}: {text}", r.master),
            }
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
}

/// Why entries were left out, in words.
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
    if r.over_total_cap > 0 {
        parts.push(format!(
            "{} over the cap on servers from all masters",
            r.over_total_cap
        ));
    }
    for (reason, n) in &r.filtered {
        parts.push(format!("{n} {reason}"));
    }
    parts.join(", ")
}
