//! Which slot each emulated player sits in, with private slots (`sv_privateClients`).
//!
//! ioquake3 (`ioquake/ioq3` @ `5956299e`): a bot takes the lowest free slot from 0
//! (`SV_BotAllocateClient`, `code/server/sv_bot.c:47-58`), so bots fill the private slots
//! first; a human without `sv_privatePassword` takes the lowest free slot from
//! `sv_privateClients` up (`SV_DirectConnect`, `code/server/sv_client.c:477-503`). getstatus
//! lists every occupied slot in slot order (`SVC_Status`, `code/server/sv_main.c:575-589`);
//! getinfo counts `clients` and `g_humanplayers` from `sv_privateClients` up only and sends
//! `sv_maxclients` minus the private slots (`SVC_Info`, `code/server/sv_main.c:634-665`).
//! Tremulous 1.1 does the same in its `SVC_Info` (`darklegion/tremulous` @ `47cd6c14`,
//! `src/server/sv_main.c:409-428`).

use super::{EmuPlayer, ServerConfig};
use crate::game::Quake3Game;
use fragstat_core::registry::EmuError;

/// The games whose emulators take private slots: ioquake3 and the games on its engine, and
/// Tremulous 1.1 (the engines read above).
pub(super) fn has_private_slots(game: Quake3Game) -> bool {
    matches!(
        game,
        Quake3Game::Quake3
            | Quake3Game::OpenArena
            | Quake3Game::WorldOfPadman
            | Quake3Game::SmokinGuns
            | Quake3Game::Q3Rally
            | Quake3Game::Reaction
            | Quake3Game::Tremulous
            | Quake3Game::Other(_)
    )
}

/// Reserves `private` of `c`'s slots, or says why they cannot be: a game whose emulator has
/// none, more than the slots, or a human left without a public slot.
pub(super) fn reserve(c: &mut ServerConfig, private: u32) -> Result<(), EmuError> {
    if private == 0 {
        return Ok(());
    }
    if !has_private_slots(c.game) {
        return Err(EmuError::Unsupported(format!(
            "private slots: not emulated for {}",
            c.game.title()
        )));
    }
    if private > c.max_clients {
        return Err(EmuError::Config(format!(
            "{private} private slots in {} slots",
            c.max_clients
        )));
    }
    c.private_clients = private;
    if let Some(i) = seat(c).iter().position(Option::is_none) {
        return Err(EmuError::Config(format!(
            "player {} finds no slot: humans skip the {private} private slots",
            i + 1
        )));
    }
    Ok(())
}

/// The slot of each player (in `c.players` order), seating them in that order as the engine
/// does; `None` for a player that finds no free slot.
pub(super) fn seat(c: &ServerConfig) -> Vec<Option<usize>> {
    if c.private_clients == 0 {
        // Slot order is join order.
        return (0..c.players.len()).map(Some).collect();
    }
    let max = c.max_clients as usize;
    let private = (c.private_clients as usize).min(max);
    let mut taken = vec![false; max];
    c.players
        .iter()
        .map(|p| {
            let from = if p.bot { 0 } else { private };
            let slot = (from..max).find(|&s| !taken.get(s).copied().unwrap_or(true))?;
            if let Some(t) = taken.get_mut(slot) {
                *t = true;
            }
            Some(slot)
        })
        .collect()
}

/// The players in slot order, each with its slot (players without one left out).
pub(super) fn seated(c: &ServerConfig) -> Vec<(usize, &EmuPlayer)> {
    let mut out: Vec<(usize, &EmuPlayer)> = seat(c)
        .into_iter()
        .zip(&c.players)
        .filter_map(|(s, p)| Some((s?, p)))
        .collect();
    out.sort_by_key(|(s, _)| *s);
    out
}

/// What getinfo counts: (`clients`, humans) in the public slots only.
pub(super) fn public_counts(c: &ServerConfig) -> (usize, usize) {
    let private = c.private_clients as usize;
    let public: Vec<&EmuPlayer> = seated(c)
        .into_iter()
        .filter(|(s, _)| *s >= private)
        .map(|(_, p)| p)
        .collect();
    (public.len(), public.iter().filter(|p| !p.bot).count())
}

/// getinfo's `sv_maxclients`: the slots minus the private ones.
pub(super) fn public_slots(c: &ServerConfig) -> u32 {
    c.max_clients.saturating_sub(c.private_clients)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(private: u32, bots: &[bool]) -> ServerConfig {
        let mut c = ServerConfig::sample(Quake3Game::OpenArena, b"x", bots.len());
        for (p, &b) in c.players.iter_mut().zip(bots) {
            p.bot = b;
        }
        c.max_clients = 12;
        c.private_clients = private;
        c
    }

    /// The cross-check's real OpenArena (`sv_privateClients 2`, three bots): slots 0, 1, 2,
    /// getinfo `clients 1`, `g_humanplayers 0`, `sv_maxclients 10`.
    #[test]
    fn bots_fill_the_private_slots_first() {
        let c = config(2, &[true, true, true]);
        assert_eq!(seat(&c), [Some(0), Some(1), Some(2)]);
        assert_eq!(public_counts(&c), (1, 0));
        assert_eq!(public_slots(&c), 10);
    }

    #[test]
    fn humans_skip_the_private_slots() {
        let c = config(2, &[false, true, false, true]);
        assert_eq!(seat(&c), [Some(2), Some(0), Some(3), Some(1)]);
        let order: Vec<usize> = seated(&c).iter().map(|(s, _)| *s).collect();
        assert_eq!(order, [0, 1, 2, 3]);
        assert_eq!(public_counts(&c), (2, 2));
        // Without private slots every slot is public and the order is the players'.
        let c = config(0, &[false, true, false]);
        assert_eq!(seat(&c), [Some(0), Some(1), Some(2)]);
        assert_eq!(public_counts(&c), (3, 2));
    }

    #[test]
    fn a_human_finds_no_public_slot() {
        let mut c = config(11, &[false, false]);
        c.max_clients = 12;
        assert_eq!(seat(&c), [Some(11), None]);
    }
}
