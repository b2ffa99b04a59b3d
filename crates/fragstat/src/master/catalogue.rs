//! The master catalogue in [`Client::master_list`](crate::Client::master_list): with no
//! master given, every master of the game's catalogue
//! ([`Game::catalogue`](fragstat_core::registry::Game::catalogue)) is asked, each with its
//! own request form, protocols and end of list, and the lists are merged.

use std::net::SocketAddr;
use std::time::Duration;

use fragstat_core::registry::{CatalogueMaster, GameRef, MasterOptions, MasterTransport};

use crate::client::Target;
use crate::error::Error;

/// The masters to ask when none is given: `given` (a substituted catalogue), else the
/// game's; each as a target and its entry.
pub(super) fn masters(
    game: &GameRef,
    given: Option<&[CatalogueMaster]>,
) -> Result<(Vec<Target>, Vec<Option<CatalogueMaster>>), Error> {
    let entries = given.unwrap_or_else(|| game.catalogue());
    if entries.is_empty() {
        return Err(Error::InvalidInput(format!(
            "no master given, and {} has no master in the catalogue",
            game.id()
        )));
    }
    let targets = entries.iter().map(|m| Target::Text(m.address())).collect();
    Ok((targets, entries.iter().cloned().map(Some).collect()))
}

/// Why a catalogue master is not asked, if it is not: a TCP entry under a game whose master
/// query is UDP (the catalogue puts CoD4X's TCP masters under their own game, `cod4x`, whose
/// query is TCP; a caller's own catalogue could still mix them).
pub(super) fn not_asked(spec: Option<&CatalogueMaster>) -> Option<Error> {
    let spec = spec?;
    (spec.transport == MasterTransport::Tcp).then(|| {
        Error::InvalidInput(format!(
            "{}: a TCP master, not asked with this game's UDP query (CoD4X's: `cod4x`)",
            spec.address()
        ))
    })
}

/// The options of each request to one master: one per catalogue protocol (the game's own
/// when the entry names none, or when the caller named one with
/// [`MasterOptions::protocol`]), with the entry's form and end of list, and the client's
/// quiet period.
pub(super) fn requests(
    base: &MasterOptions,
    spec: Option<&CatalogueMaster>,
    quiet: Duration,
) -> Vec<MasterOptions> {
    let base = base.clone().with_quiet((!quiet.is_zero()).then_some(quiet));
    let Some(spec) = spec else {
        return vec![base];
    };
    let base = base.with_form(Some(spec.form)).with_end(Some(spec.end));
    if base.protocol.is_some() || spec.protocols.is_empty() {
        return vec![base];
    }
    spec.protocols
        .iter()
        .map(|p| base.clone().with_protocol(Some(*p)))
        .collect()
}

/// Puts requests in rounds so that no round asks one address twice (a master's replies come
/// from one address, so two requests in flight to it could not be told apart): the first
/// round holds each master's first request, the next its second, and so on.
pub(super) fn rounds<T>(requests: Vec<(usize, SocketAddr, T)>) -> Vec<Vec<(usize, SocketAddr, T)>> {
    let mut rounds: Vec<Vec<(usize, SocketAddr, T)>> = Vec::new();
    for r in requests {
        let free = rounds
            .iter()
            .position(|round| round.iter().all(|(_, a, _)| *a != r.1));
        match free {
            Some(i) => {
                if let Some(round) = rounds.get_mut(i) {
                    round.push(r);
                }
            }
            None => rounds.push(vec![r]),
        }
    }
    rounds
}

/// The game's catalogue with some entries asked at other addresses: each `(entry, addr)`
/// names an entry (`HOST:PORT` as the catalogue lists it, or the host and its default port)
/// to ask at `addr` instead, as `fragstat master --master-at ENTRY=ADDR` does. For
/// [`MasterListRequest::catalogue`](crate::MasterListRequest::catalogue).
///
/// # Errors
/// [`Error::InvalidInput`] when the game has no catalogue or an entry is not in it.
pub fn catalogue_at(
    game: &GameRef,
    at: &[(String, SocketAddr)],
) -> Result<Vec<CatalogueMaster>, Error> {
    let masters = game.catalogue();
    if masters.is_empty() {
        return Err(Error::InvalidInput(format!(
            "no master given, and {} has no master in the catalogue: name one (HOST[:PORT])",
            game.id()
        )));
    }
    let mut out = masters.to_vec();
    for (key, addr) in at {
        let names =
            |m: &CatalogueMaster| m.address() == *key || format!("{}:{}", m.host, m.port) == *key;
        let mut found = false;
        for (m, o) in masters.iter().zip(out.iter_mut()) {
            if names(m) {
                *o = m.clone().pointed_at(*addr);
                found = true;
            }
        }
        if !found {
            return Err(Error::InvalidInput(format!(
                "{key} is not in {}'s catalogue",
                game.id()
            )));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use fragstat_core::registry::{EndOfList, ListForm};

    #[test]
    fn a_master_is_asked_once_per_protocol_and_never_twice_at_once() {
        let rtcw = fragstat_core::registry::catalogue::of("rtcw");
        let quiet = Duration::from_millis(500);
        let reqs = requests(&MasterOptions::default(), rtcw.first(), quiet);
        let protocols: Vec<_> = reqs.iter().map(|o| o.protocol).collect();
        assert_eq!(protocols, [Some(60), Some(57)]);
        assert!(reqs.iter().all(|o| o.form == Some(ListForm::Short)
            && o.end == Some(EndOfList::Quiet)
            && o.quiet == Some(quiet)));
        // A protocol named by the caller wins.
        let one = requests(
            &MasterOptions::default().with_protocol(Some(59)),
            rtcw.first(),
            quiet,
        );
        assert_eq!(one.len(), 1);
        assert_eq!(one[0].protocol, Some(59));
        // A master given by address: the caller's options and the quiet period.
        let given = requests(&MasterOptions::default(), None, Duration::ZERO);
        assert_eq!(given, [MasterOptions::default()]);

        let a: SocketAddr = "127.0.0.1:1".parse().unwrap();
        let b: SocketAddr = "127.0.0.1:2".parse().unwrap();
        let r = rounds(vec![(0, a, 60), (0, a, 57), (1, b, 60), (2, a, 60)]);
        assert_eq!(
            r,
            vec![
                vec![(0, a, 60), (1, b, 60)],
                vec![(0, a, 57)],
                vec![(2, a, 60)]
            ]
        );
    }

    #[test]
    fn tcp_masters_are_reported_not_asked() {
        let cod4x = fragstat_core::registry::catalogue::of("cod4x");
        let tcp = cod4x.iter().find(|m| m.transport == MasterTransport::Tcp);
        assert!(not_asked(tcp).is_some());
        let cod4 = fragstat_core::registry::catalogue::of("cod4");
        assert!(not_asked(cod4.first()).is_none());
        assert!(not_asked(None).is_none());
    }
}
