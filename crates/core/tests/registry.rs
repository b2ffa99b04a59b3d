//! The registry's generic parts with a family of two made-up games: `Family::of` lists and
//! finds them, `Entry` reads its `GameMeta`, `decode_parts` merges a list's parts, and a game
//! built without emulators says which feature is missing.

use fragstat_core::model::{MasterEntry, ServerInfo};
use fragstat_core::registry::{
    emulator, Ask, AskError, Decoded, Entry, Family, FamilyGame, Game, GameMeta, MasterOptions,
    MasterQuery, MasterQueryError,
};
use fragstat_core::{DecodeError, EncodeError, Exchange, Verdict};

#[derive(Debug, Clone, Copy, PartialEq)]
enum Toy {
    Small,
    Large,
}

impl FamilyGame for Toy {
    const FAMILY: &'static str = "toy";
    const FAMILY_TITLE: &'static str = "Toy games";
    const ALL: &'static [Self] = &[Toy::Small, Toy::Large];

    fn meta(self) -> GameMeta {
        match self {
            Toy::Small => GameMeta::new(Self::FAMILY, "small", "Small", 1000).aliases(&["sm"]),
            Toy::Large => GameMeta::new(Self::FAMILY, "large", "Large", 2000)
                .master_port(2001)
                .echoes_challenge(false)
                .short_query(true)
                .join_scheme("large://join/")
                .race_gametypes(&["race"])
                .declares_score_kind(true),
        }
    }

    /// Only the refusal of a short query reaches a request in these tests.
    fn server_query(self, _ask: Ask) -> Box<dyn Exchange<Output = ServerInfo>> {
        Box::new(Never)
    }

    fn master_query(self, _options: &MasterOptions) -> Result<MasterQuery, MasterQueryError> {
        Err(MasterQueryError::option("toy", "toy games have no master"))
    }

    /// A datagram of text addresses, one per line, is a part of a master's list.
    fn decode(self, datagram: &[u8]) -> Result<Decoded, DecodeError> {
        let text = std::str::from_utf8(datagram).map_err(|_| DecodeError::Invalid {
            field: "list",
            offset: 0,
            reason: "not text",
        })?;
        let servers = text
            .lines()
            .map(|l| {
                l.parse()
                    .map(MasterEntry::new)
                    .map_err(|_| DecodeError::Invalid {
                        field: "address",
                        offset: 0,
                        reason: "not an address",
                    })
            })
            .collect::<Result<_, _>>()?;
        Ok(Decoded::Servers {
            servers,
            details: None,
        })
    }
}

/// A query that sends one datagram and never finishes.
struct Never;

impl Exchange for Never {
    type Output = ServerInfo;
    fn requests(&mut self, _attempt: u32) -> Result<Vec<Vec<u8>>, EncodeError> {
        Ok(vec![b"ask".to_vec()])
    }
    fn on_datagram(&mut self, _datagram: &[u8]) -> Verdict<ServerInfo> {
        Verdict::Ignore("never")
    }
}

const FAMILY: Family = Family::of::<Toy>();

#[test]
fn family_of_lists_and_finds_the_games_by_id_and_alias() {
    assert_eq!((FAMILY.id, FAMILY.title), ("toy", "Toy games"));
    let ids: Vec<String> = (FAMILY.games)()
        .iter()
        .map(|g| g.id().to_string())
        .collect();
    assert_eq!(ids, ["small", "large"]);
    let g = (FAMILY.find)("SM").expect("alias, any case");
    assert_eq!((g.id(), g.title(), g.family()), ("small", "Small", "toy"));
    assert_eq!(
        (g.default_port(), g.master_port(), g.echoes_challenge()),
        (1000, None, true)
    );
    assert_eq!(g.join_url("127.0.0.1:1"), None, "no scheme, no link");
    assert!(!g.meta().scores_are_times(Some("race"), None));
    let g = (FAMILY.find)("large").unwrap();
    assert_eq!((g.master_port(), g.echoes_challenge()), (Some(2001), false));
    // What a front end needs beyond queries comes with the game, not from the front end.
    assert_eq!(
        g.join_url("[::1]:2000").as_deref(),
        Some("large://join/[::1]:2000")
    );
    assert!(g.meta().scores_are_times(Some("Race 2"), None));
    assert!(g.meta().declares_score_kind);
    assert!((FAMILY.find)("medium").is_none());
}

#[test]
fn decode_parts_merges_a_lists_parts_in_order_each_server_once() {
    let g = Entry::new(Toy::Small);
    let Decoded::Servers { servers, .. } = g
        .decode_parts(&[b"127.0.0.1:1\n127.0.0.1:2", b"127.0.0.1:2\n127.0.0.1:3"])
        .unwrap()
    else {
        panic!("a list")
    };
    let addrs: Vec<String> = servers.iter().map(|s| s.addr.to_string()).collect();
    assert_eq!(addrs, ["127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"]);
    assert!(g.decode_parts(&[]).is_err());
}

#[test]
fn a_game_without_emulators_says_which_feature_is_missing() {
    let g = Entry::new(Toy::Large);
    assert!(g.emulator().is_none());
    let err = emulator(&g).err().expect("no emulators");
    assert_eq!(
        err.to_string(),
        "large: built without emulators (the toy crate's `emulate` feature)"
    );
    assert!(g.master_query(&MasterOptions::default()).is_err());
}

#[test]
fn a_short_query_is_refused_naming_the_game_unless_it_has_one() {
    let small = Entry::new(Toy::Small);
    assert!(!small.has_short_query());
    assert_eq!(
        small.check_ask(Ask::short().with_protocol(Some(9))),
        Err(AskError::NoShortQuery {
            game: "small".into(),
            title: "Small".into()
        })
    );
    assert_eq!(
        small.check_ask(Ask::short()).unwrap_err().to_string(),
        "small (Small) has no short query"
    );
    assert!(small.check_ask(Ask::everything()).is_ok());
    // Through the registry the refused query fails at its first request: nothing is sent.
    let err = small.server_query(Ask::short()).requests(0).unwrap_err();
    assert_eq!(err.to_string(), "the game has no short query (Ask::short)");
    assert_eq!(
        small.server_query(Ask::players()).requests(0).unwrap(),
        [b"ask".to_vec()]
    );
    let large = Entry::new(Toy::Large);
    assert!(large.has_short_query());
    assert!(large.check_ask(Ask::short()).is_ok());
    assert_eq!(
        large.server_query(Ask::short()).requests(0).unwrap(),
        [b"ask".to_vec()]
    );
}
