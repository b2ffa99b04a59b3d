//! Each game's gametype names, by the number its servers send (`g_gametype`); the rows of
//! the game table that use them name their sources.

pub(super) const Q3_GAMETYPES: &[&str] = &[
    "ffa",
    "tournament",
    "single",
    "tdm",
    "ctf",
    "oneflag",
    "obelisk",
    "harvester",
];
// OpenArena gamecode `code/game/bg_public.h` gametype_t.
pub(super) const OA_GAMETYPES: &[&str] = &[
    "ffa",
    "tournament",
    "single",
    "tdm",
    "ctf",
    "oneflag",
    "overload",
    "harvester",
    "elimination",
    "ctf_elimination",
    "lms",
    "double_domination",
    "domination",
    "possession",
];
// W:ET `src/game/bg_public.h` (0-5); ET: Legacy adds 6, map voting.
pub(super) const ET_GAMETYPES: &[&str] = &[
    "single",
    "coop",
    "objective",
    "stopwatch",
    "campaign",
    "lms",
    "map_voting",
];
// RTCW-MP `src/game/bg_public.h`.
pub(super) const RTCW_GAMETYPES: &[&str] = &[
    "ffa",
    "tournament",
    "single",
    "tdm",
    "ctf",
    "objective",
    "stopwatch",
    "checkpoint",
    "capture_and_hold",
];
// B3 `b3/parsers/iourt43.py` (Urban Terror's game code is closed).
pub(super) const URT_GAMETYPES: &[&str] = &[
    "ffa", "lms", "single", "tdm", "ts", "ftl", "cah", "ctf", "bomb", "jump", "freeze", "gungame",
];
// JK2MV `src/game/bg_public.h`.
pub(super) const JK2_GAMETYPES: &[&str] = &[
    "ffa",
    "holocron",
    "jedi_master",
    "duel",
    "single",
    "tdm",
    "siege",
    "ctf",
    "cty",
];
// OpenJK `codemp/game/bg_public.h`.
pub(super) const JKA_GAMETYPES: &[&str] = &[
    "ffa",
    "holocron",
    "jedi_master",
    "duel",
    "power_duel",
    "single",
    "tdm",
    "siege",
    "ctf",
    "cty",
];
// OpenMoHAA `code/fgame/bg_public.h`.
pub(super) const MOHAA_GAMETYPES: &[&str] = &[
    "single",
    "ffa",
    "tdm",
    "round_based",
    "objective",
    "tug_of_war",
    "liberation",
];
// World of Padman 1.7 `code/game/bg_public.h` (1.6, protocol 71: [`WOP16_GAMETYPES`]).
pub(super) const WOP_GAMETYPES: &[&str] = &[
    "ffa", "1vs1", "single", "syc", "lps", "ctkd", "tffa", "ft", "ctl", "1lc", "tsyc", "bb",
];
// World of Padman 1.6 (tag v1.6.2) `code/game/bg_public.h`.
pub(super) const WOP16_GAMETYPES: &[&str] = &[
    "ffa", "1vs1", "single", "syc", "lps", "tffa", "ctl", "tsyc", "bb",
];
// Smokin' Guns `code/game/bg_public.h` (SMOKINGUNS branch).
pub(super) const SG_GAMETYPES: &[&str] = &["ffa", "duel", "single", "tdm", "rtp", "br"];
// Q3Rally `engine/code/game/bg_public.h` (explicit values; older releases counted up).
pub(super) const Q3RALLY_GAMETYPES: &[(i64, &str)] = &[
    (0, "racing"),
    (1, "racing_dm"),
    (2, "single"),
    (3, "derby"),
    (4, "lcs"),
    (5, "elimination"),
    (6, "deathmatch"),
    (7, "sprint"),
    (8, "ghost"),
    (16, "team_dm"),
    (17, "team_racing"),
    (18, "team_racing_dm"),
    (19, "ctf"),
    (20, "ctf4"),
    (21, "domination"),
    (22, "koth"),
    (23, "autoball"),
];
// Reaction `code/game/bg_public.h`.
pub(super) const REACTION_GAMETYPES: &[&str] = &[
    "ffa",
    "tournament",
    "single",
    "tdm",
    "teamplay",
    "ctb",
    "oneflag",
    "obelisk",
    "harvester",
];
