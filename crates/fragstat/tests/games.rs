//! The registry across every family: each game found by its id and every alias, no name
//! claimed twice, and the names qstat users type (its server types) found as the game they
//! mean. One table for all families, so a new game is checked by adding rows.

use std::collections::HashMap;

/// (name as typed, the game's id, its default port, its master port).
const NAMES: &[(&str, &str, u16, Option<u16>)] = &[
    ("q3s", "q3", 27960, Some(27950)),
    ("OA", "openarena", 27960, Some(27950)),
    ("woets", "et", 27960, Some(27950)),
    ("rws", "rtcw", 27960, Some(27950)),
    ("etlegacy", "etl", 27960, Some(27950)),
    ("iourts", "urt", 27960, Some(27900)),
    ("jk2s", "jk2", 28070, Some(28060)),
    ("JK3S", "jka", 29070, Some(29060)),
    ("sof2s", "sof2", 20100, Some(20110)),
    ("cods", "cod", 28960, Some(20510)),
    ("coduo", "coduo", 28960, Some(20610)),
    ("cod2s", "cod2", 28960, Some(20710)),
    ("cod4s", "cod4", 28960, Some(20810)),
    ("cod4x", "cod4x", 28960, Some(20810)),
    ("codmw2", "iw4x", 28960, None),
    ("maqs", "mohaa", 12203, None),
    ("unvanquisheds", "unvanquished", 27960, Some(27950)),
    ("tremulouss", "tremulous", 30720, Some(30710)),
    ("wops", "wop", 27960, Some(27955)),
    ("smokinguns", "smokinguns", 27960, Some(27950)),
    ("q3rallys", "q3rally", 27960, Some(27950)),
    ("reactions", "reaction", 27960, Some(27950)),
    ("dm3s", "doom3", 27666, Some(27650)),
    ("Q4S", "quake4", 28004, Some(27650)),
    ("preys", "prey", 27719, Some(27655)),
    ("ETQWS", "etqw", 27733, None),
    ("WARSOWS", "warsow", 44400, Some(27950)),
    ("warfork", "warfork", 44400, Some(27950)),
    ("nexuizs", "nexuiz", 26000, Some(27950)),
    ("xonotics", "xonotic", 26000, Some(27950)),
    ("Xonotic", "xonotic", 26000, Some(27950)),
    ("tees", "teeworlds", 8303, Some(8300)),
    ("tw07", "teeworlds07", 8303, Some(8283)),
    ("DDNet", "ddnet", 8303, None),
];

#[test]
fn every_id_and_alias_finds_its_game_and_no_name_is_claimed_twice() {
    let mut owner: HashMap<String, String> = HashMap::new();
    for game in fragstat::games() {
        for name in std::iter::once(game.id()).chain(game.aliases().iter().copied()) {
            let found = fragstat::game(&name.to_ascii_uppercase())
                .unwrap_or_else(|| panic!("{name} ({}) not found", game.id()));
            assert_eq!(found.id(), game.id(), "{name}");
            assert_eq!(found.family(), game.family(), "{name}");
            if let Some(other) = owner.insert(name.to_ascii_lowercase(), game.id().to_string()) {
                panic!("{name} names both {other} and {}", game.id());
            }
        }
    }
    let per_family: Vec<(&str, usize)> = fragstat::families()
        .iter()
        .map(|f| (f.id, (f.games)().len()))
        .collect();
    assert_eq!(
        per_family,
        [
            ("quake3", 22),
            ("idtech4", 3),
            ("etqw", 1),
            ("warsow", 4),
            ("teeworlds", 3)
        ]
    );
}

#[test]
fn qstat_names_find_the_game_they_mean_with_its_ports() {
    for &(name, id, port, master) in NAMES {
        let g = fragstat::game(name).unwrap_or_else(|| panic!("{name}"));
        assert_eq!(
            (g.id(), g.default_port(), g.master_port()),
            (id, port, master),
            "{name}"
        );
    }
    // Ids made on the fly: any Quake III protocol by number.
    assert_eq!(fragstat::game("oob:43").unwrap().id(), "oob:43");
    assert_eq!(fragstat::game("oob:43").unwrap().family(), "quake3");
    assert!(fragstat::game("oob:x").is_none());
    assert!(fragstat::game("doom4").is_none());
}
