//! The catalogue's entries, per registry game id. Every entry names its public source:
//! FACT = read in engine or master source code; CLAIM = a curated list (cetteup's
//! GameserverLister, "GSL"), prose or a measurement, not checked against a live host. The
//! request forms and end markers are the ones these sources give; see
//! docs/protocols/quake3.md "Master catalogue" for the notes behind them.

use super::{CatalogueMaster as M, EndOfList as E, ListForm as F};

const Q3: &[M] = &[
    M::udp("master.quake3arena.com", 27950, F::Anonymous, E::Quiet, &[], "CLAIM: cetteup/GameserverLister GameserverLister/games/quake3.py:158-193, :166 (TimeoutReader: no EOT) @223f2c1c"),
    M::udp("master.ioquake3.org", 27950, F::Anonymous, E::LastPacket, &[], "CLAIM: cetteup/GameserverLister GameserverLister/games/quake3.py:158-193 (EOFReader) @223f2c1c"),
    M::udp("dpmaster.deathmask.net", 27950, F::Anonymous, E::LastPacket, &[], "CLAIM: GameserverLister games/quake3.py:158-193 @223f2c1c; FACT for the EOT: kphillisjr/dpmaster doc/techinfo.txt:292-313 @1c1bd46a"),
    M::udp("master0.excessiveplus.net", 27950, F::Anonymous, E::LastPacket, &[], "CLAIM: cetteup/GameserverLister GameserverLister/games/quake3.py:158-193 (EOFReader) @223f2c1c"),
    M::udp("master.huxxer.de", 27950, F::Anonymous, E::LastPacket, &[], "CLAIM: cetteup/GameserverLister GameserverLister/games/quake3.py:158-193 (EOFReader) @223f2c1c"),
    M::udp("master.urbanterror.info", 27900, F::Anonymous, E::Unstated, &[], "CLAIM: cetteup/GameserverLister GameserverLister/games/quake3.py:158-193 @223f2c1c"),
    M::udp("master2.urbanterror.info", 27900, F::Anonymous, E::Unstated, &[], "CLAIM: cetteup/GameserverLister GameserverLister/games/quake3.py:158-193 @223f2c1c"),
];

/// W:ET's masters; ET: Legacy's engine defaults name the first two.
const ET: &[M] = &[
    M::udp("etmaster.idsoftware.com", 27950, F::Anonymous, E::Quiet, &[], "FACT (default sv_master1): etlegacy/etlegacy src/qcommon/common.c:2984-2992 @a8e5f856; CLAIM no EOT: GameserverLister games/quake3.py:318 @223f2c1c"),
    M::udp("master.etlegacy.com", 27950, F::Anonymous, E::LastPacket, &[], "FACT (com_masterServer): etlegacy/etlegacy src/qcommon/qcommon.h:385-408 @a8e5f856; CLAIM EOT: GameserverLister games/quake3.py:310-330 @223f2c1c"),
    M::udp("master0.etmaster.net", 27950, F::Anonymous, E::Quiet, &[], "CLAIM no EOT: cetteup/GameserverLister GameserverLister/games/quake3.py:327 @223f2c1c"),
];

const OPENARENA: &[M] = &[M::udp("dpmaster.deathmask.net", 27950, F::Named("Quake3Arena"), E::LastPacket, &[], "CLAIM: cetteup/GameserverLister GameserverLister/games/quake3.py:113-127 (game_name Quake3Arena) @223f2c1c")];

/// RtCW: both populated protocols (57: 1.0/1.1, 60: 1.4 and iortcw) from every master; id's
/// answers only the short form (nksmnf/iortcw docs/RU/server.md §2-3, measured 2026-09-11).
const RTCW: &[M] = &[
    M::udp("wolfmaster.idsoftware.com", 27950, F::Short, E::Quiet, &[60, 57], "CLAIM (measured 2026-09-11): nksmnf/iortcw docs/RU/server.md §2-3 @7041770d; no EOT: GameserverLister games/quake3.py:202 @223f2c1c"),
    M::udp("master.iortcw.org", 27950, F::Anonymous, E::Unstated, &[60, 57], "CLAIM (measured 2026-09-11): nksmnf/iortcw docs/RU/server.md §2-3 @7041770d"),
    M::udp("dpmaster.deathmask.net", 27950, F::Anonymous, E::LastPacket, &[60, 57], "CLAIM: nksmnf/iortcw docs/RU/server.md §2-3 @7041770d; FACT anonymous RtCW: kphillisjr/dpmaster doc/techinfo.txt:270-273 @1c1bd46a"),
];

const URT: &[M] = &[
    M::udp(
        "master.urbanterror.info",
        27900,
        F::Anonymous,
        E::Unstated,
        &[],
        "CLAIM: cetteup/GameserverLister GameserverLister/games/quake3.py:266-279 @223f2c1c",
    ),
    M::udp(
        "master2.urbanterror.info",
        27900,
        F::Anonymous,
        E::Unstated,
        &[],
        "CLAIM: cetteup/GameserverLister GameserverLister/games/quake3.py:266-279 @223f2c1c",
    ),
];

const JK2: &[M] = &[
    M::udp(
        "masterjk2.ravensoft.com",
        28060,
        F::Anonymous,
        E::Unstated,
        &[16, 15],
        "CLAIM: cetteup/GameserverLister GameserverLister/games/quake3.py:235-250 @223f2c1c",
    ),
    M::udp(
        "master.jkhub.org",
        28060,
        F::Anonymous,
        E::Unstated,
        &[16, 15],
        "CLAIM: cetteup/GameserverLister GameserverLister/games/quake3.py:235-250 @223f2c1c",
    ),
];

const JKA: &[M] = &[
    M::udp(
        "masterjk3.ravensoft.com",
        29060,
        F::Anonymous,
        E::Unstated,
        &[26, 25],
        "CLAIM: cetteup/GameserverLister GameserverLister/games/quake3.py:219-234 @223f2c1c",
    ),
    M::udp(
        "master.jkhub.org",
        29060,
        F::Anonymous,
        E::Unstated,
        &[26, 25],
        "CLAIM: cetteup/GameserverLister GameserverLister/games/quake3.py:219-234 @223f2c1c",
    ),
];

const SOF2: &[M] = &[M::udp("master.sof2.ravensoft.com", 20110, F::Own, E::Unstated, &[2004, 2002, 2001], "CLAIM: cetteup/GameserverLister GameserverLister/games/quake3.py:206-218 (2001 demo, 2002 1.00, 2004 gold) @223f2c1c")];

/// Activision's masters mark every datagram (pyq3serverlist reader.py:70-73); GSL asks CoD
/// with empty keywords: the short form.
const COD: &[M] = &[
    M::udp("codmaster.activision.com", 20510, F::Short, E::EveryPacket, &[6, 5, 4, 2, 1], "CLAIM: cetteup/GameserverLister GameserverLister/games/quake3.py:9-35 @223f2c1c; EOT on every packet: cetteup/pyq3serverlist pyq3serverlist/reader.py:70-73 @b8609149"),
    M::udp("master.cod.pm", 20510, F::Short, E::Unstated, &[6, 5, 4, 2, 1], "CLAIM: cetteup/GameserverLister GameserverLister/games/quake3.py:9-35 @223f2c1c"),
    M::udp("codmaster.comu-mvzg.com", 20510, F::Short, E::Unstated, &[6, 5, 4, 2, 1], "CLAIM: cetteup/GameserverLister GameserverLister/games/quake3.py:9-35 @223f2c1c"),
];

const CODUO: &[M] = &[M::udp("coduomaster.activision.com", 20610, F::Anonymous, E::EveryPacket, &[22, 21], "CLAIM: cetteup/GameserverLister GameserverLister/games/quake3.py:36-50 @223f2c1c; pyq3serverlist reader.py:70-73 @b8609149")];

const COD2: &[M] = &[M::udp("cod2master.activision.com", 20710, F::Anonymous, E::EveryPacket, &[118, 117, 115], "CLAIM: cetteup/GameserverLister GameserverLister/games/quake3.py:51-66 @223f2c1c; pyq3serverlist reader.py:70-73 @b8609149")];

/// Stock CoD4's master, then CoD4X's TCP masters (asked only where a TCP master query
/// exists; the CoD4X client sends `getservers 21 <keywords>\0` over TCP).
const COD4: &[M] = &[
    M::udp("cod4master.activision.com", 20810, F::Anonymous, E::EveryPacket, &[6, 7, 1], "CLAIM: cetteup/GameserverLister GameserverLister/games/quake3.py:67-82 @223f2c1c; pyq3serverlist reader.py:70-73 @b8609149"),
];

/// CoD4X's own masters, over TCP (the `cod4x` game: its servers answer as `cod4`).
const COD4X: &[M] = &[
    M::tcp("cod4master.cod4x.ovh", 20810, F::Anonymous, &[21], "FACT: callofduty4x/CoD4x_Server globalconfig.cfg:2 @75e13984; CoD4x_Client_pub src/cl_main.c:1382-1533, src/q_shared.h:46,61,79 @b4524803"),
    M::tcp("cod4master.ax-servers.hu", 20810, F::Anonymous, &[21], "FACT: callofduty4x/CoD4x_Server globalconfig.cfg:2 @75e13984; CoD4x_Client_pub src/q_shared.h:79 (PORT_MASTER) @b4524803"),
];

const IW4X: &[M] = &[M::http(
    "master.iw4x.io",
    80,
    "http://master.iw4x.io/v1/servers/iw4x?protocol=152",
    "FACT: iw4x/iw4x-client src/Components/Modules/ServerList.cpp:427-428 @c75a6288",
)];

/// Dæmon's masters: the game's own request (`getserversExt UNVANQUISHED 86 …`), no marker.
const UNVANQUISHED: &[M] = &[
    M::udp("master.unvanquished.net", 27950, F::Own, E::Quiet, &[], "FACT: DaemonEngine/Daemon src/common/Defs.h:49-53 @b276137b; no EOT: Unvanquished/unvanquished-master master.py:461-481 @792e5f65"),
    M::udp("master2.unvanquished.net", 27950, F::Own, E::Quiet, &[], "FACT: DaemonEngine/Daemon src/common/Defs.h:49-53 @b276137b; no EOT: Unvanquished/unvanquished-master master.py:461-481 @792e5f65"),
];

const TREMULOUS: &[M] = &[M::udp("master.tremulous.net", 30710, F::Anonymous, E::Quiet, &[], "FACT no EOT: darklegion/tremulous-master master.py:345-421 @20a0675a; host: GameserverLister games/quake3.py:251-265 @223f2c1c")];

const WOP: &[M] = &[M::udp("master.worldofpadman.com", 27955, F::Named("WorldofPadman"), E::Unstated, &[], "CLAIM: client configs `masterServer=master.worldofpadman.com:27955` (find_string, 2026-11-28); port: World of Padman qcommon.h:250-256")];

const SMOKINGUNS: &[M] = &[M::udp("master.smokin-guns.org", 27950, F::Named("smokinguns"), E::Unstated, &[], "CLAIM: qstat-style list `ADD SMOKINGUNSS master://master.smokin-guns.org:27950` (find_string, 2026-11-28); form: Smokin' Guns cl_main.c:4304-4309")];

const Q3RALLY: &[M] = &[M::udp("dpmaster.deathmask.net", 27950, F::Named("Q3Rally"), E::LastPacket, &[], "CLAIM: cetteup/GameserverLister GameserverLister/games/quake3.py:128-142 @223f2c1c; name required: XQF/xqf#104 (2014-11-26)")];

const REACTION: &[M] = &[M::udp("master.rq3.com", 27950, F::Named("Reaction"), E::Unstated, &[], "CLAIM (old qstat list, unverified): `ADD REACTIONS master://master.rq3.com:27950` (find_string, 2026-11-28)")];

const WARSOW: &[M] = &[M::udp(
    "dpmaster.deathmask.net",
    27950,
    F::Named("Warsow"),
    E::LastPacket,
    &[],
    "CLAIM: cetteup/GameserverLister GameserverLister/games/quake3.py:295-309 @223f2c1c",
)];

/// Warfork 2.16 is protocol 27 (`APP_PROTOCOL_VERSION` under `PUBLIC_BUILD`).
const WARFORK: &[M] = &[
    M::udp("master1.forbidden.gg", 27950, F::Named("Warfork"), E::Unstated, &[27], "FACT: TeamForbiddenLLC/warfork-qfusion source/gameshared/q_comref.h (DEFAULT_MASTER_SERVERS_IPS) @a2015c8c, source/qcommon/version.h (27) @073dce79"),
    M::udp("master1.icy.gg", 27950, F::Named("Warfork"), E::Unstated, &[27], "FACT: TeamForbiddenLLC/warfork-qfusion source/gameshared/q_comref.h (DEFAULT_MASTER_SERVERS_IPS) @a2015c8c, source/qcommon/version.h (27) @073dce79"),
    M::udp("dpmaster.deathmask.net", 27950, F::Named("Warfork"), E::LastPacket, &[27], "CLAIM: cetteup/GameserverLister GameserverLister/games/quake3.py:280-294 @223f2c1c (asks 23; 27 per warfork-qfusion version.h)"),
];

const NEXUIZ: &[M] = &[M::udp("dpmaster.deathmask.net", 27950, F::Named("Nexuiz"), E::LastPacket, &[], "CLAIM: cetteup/GameserverLister GameserverLister/games/quake3.py:98-112 @223f2c1c; FACT EOT: DarkPlacesEngine/darkplaces netconn.c:136 @2f25af65")];

/// Xonotic's own configuration: `sv_master1..4`, `sv_masterextra1..2`.
const XONOTIC: &[M] = &[
    M::udp("master1.xonotic.org", 42863, F::Named("Xonotic"), E::LastPacket, &[], "FACT: xonotic/xonotic-data.pk3dir xonotic-common.cfg (sv_masterextra1) @03ad0530; EOT: darkplaces netconn.c:136"),
    M::udp("master2.xonotic.org", 27950, F::Named("Xonotic"), E::LastPacket, &[], "FACT: xonotic/xonotic-data.pk3dir xonotic-common.cfg (sv_masterextra2) @03ad0530"),
    M::udp("master3.xonotic.org", 27950, F::Named("Xonotic"), E::LastPacket, &[], "FACT: xonotic/xonotic-data.pk3dir xonotic-common.cfg (sv_master3) @03ad0530"),
    M::udp("master4.xonotic.org", 42863, F::Named("Xonotic"), E::LastPacket, &[], "FACT: xonotic/xonotic-data.pk3dir xonotic-common.cfg (sv_master4) @03ad0530"),
    M::udp("dpm4.xonotic.xyz", 27777, F::Named("Xonotic"), E::LastPacket, &[], "FACT: xonotic/xonotic-data.pk3dir xonotic-common.cfg (sv_master1) @03ad0530"),
    M::udp("dpm6.xonotic.xyz", 27777, F::Named("Xonotic"), E::LastPacket, &[], "FACT: xonotic/xonotic-data.pk3dir xonotic-common.cfg (sv_master2) @03ad0530"),
];

// idTech 4: each game's client asks its licensee's `IDNET_HOST` at `IDNET_MASTER_PORT`
// (framework/Licensee.h); the `servers` datagrams carry no end marker and are filled before
// the next starts, so a short one ends the list (dhewm3's
// `idAsyncClient::ProcessServersListMessage` reads each datagram to its end: no count, no
// terminator).

const DOOM3: &[M] = &[M::udp(
    "idnet.ua-corp.com",
    27650,
    F::Own,
    E::ShortPacket,
    &[],
    "FACT: dhewm/dhewm3 neo/framework/Licensee.h (IDNET_HOST, IDNET_MASTER_PORT) @d98fd273; qstat doom3.h DOOM3_MASTER_DEFAULT_PORT; XQF's built-in list (ADD DM3S master://idnet.ua-corp.com:27650); no EOT: neo/framework/async/AsyncClient.cpp (ProcessServersListMessage) @d98fd273",
)];

const QUAKE4: &[M] = &[
    M::udp(
        "q4master.idsoftware.com",
        27650,
        F::Own,
        E::ShortPacket,
        &[],
        "FACT: Quake 4 SDK framework/Licensee.h (RAVEN block: IDNET_HOST q4master.idsoftware.com, IDNET_MASTER_PORT 27650); XQF's built-in list (ADD Q4S master://q4master.idsoftware.com)",
    ),
    M::udp(
        "master.quakehub.net",
        27650,
        F::Own,
        E::ShortPacket,
        &[],
        "CLAIM: booskibro/quakehub-q4master README (2026: a community Quake 4 master; says id's host still authorises clients but no longer lists servers)",
    ),
];

/// Prey's SDK points the retail client at 27650 and the demo at 27655 (qstat's default).
const PREY: &[M] = &[
    M::udp(
        "preymaster.humanhead.com",
        27650,
        F::Own,
        E::ShortPacket,
        &[],
        "FACT: Prey SDK 1.2 framework/Licensee.h (IDNET_HOST preymaster.humanhead.com; IDNET_MASTER_PORT 27650)",
    ),
    M::udp(
        "preymaster.humanhead.com",
        27655,
        F::Own,
        E::ShortPacket,
        &[],
        "FACT: Prey SDK 1.2 framework/Licensee.h (IDNET_MASTER_PORT 27655 under ID_DEMO_BUILD); qstat doom3.h PREY_MASTER_DEFAULT_PORT 27655",
    ),
];

const ETQW: &[M] = &[M::http("etqw-ipgetter.demonware.net", 80, "http://etqw-ipgetter.demonware.net/ipgetter/", "CLAIM: forums.splashdamage.com/t/quake-wars-master-server-o/138305 (as crates/etqw/src/feed.rs cites)")];

const TW06: &str = "FACT: teeworlds/teeworlds src/engine/shared/masterserver.cpp (master%d.teeworlds.com, 1-4), src/mastersrv/mastersrv.h (MASTERSERVER_PORT 8300)";
const TW07: &str = "FACT: teeworlds/teeworlds src/engine/shared/masterserver.cpp:127, src/mastersrv/mastersrv.h:5 @4fc25a17 (0.7.5)";

const TEEWORLDS: &[M] = &[
    M::udp(
        "master1.teeworlds.com",
        8300,
        F::Own,
        E::Unstated,
        &[],
        TW06,
    ),
    M::udp(
        "master2.teeworlds.com",
        8300,
        F::Own,
        E::Unstated,
        &[],
        TW06,
    ),
    M::udp(
        "master3.teeworlds.com",
        8300,
        F::Own,
        E::Unstated,
        &[],
        TW06,
    ),
    M::udp(
        "master4.teeworlds.com",
        8300,
        F::Own,
        E::Unstated,
        &[],
        TW06,
    ),
];

const TEEWORLDS07: &[M] = &[
    M::udp(
        "master1.teeworlds.com",
        8283,
        F::Own,
        E::Unstated,
        &[],
        TW07,
    ),
    M::udp(
        "master2.teeworlds.com",
        8283,
        F::Own,
        E::Unstated,
        &[],
        TW07,
    ),
    M::udp(
        "master3.teeworlds.com",
        8283,
        F::Own,
        E::Unstated,
        &[],
        TW07,
    ),
    M::udp(
        "master4.teeworlds.com",
        8283,
        F::Own,
        E::Unstated,
        &[],
        TW07,
    ),
];

const DDN: &str = "FACT: ddnet/ddnet src/engine/client/serverbrowser_http.cpp:529-532 @28baa427";

const DDNET: &[M] = &[
    M::http(
        "master1.ddnet.org",
        443,
        "https://master1.ddnet.org/ddnet/15/servers.json",
        DDN,
    ),
    M::http(
        "master2.ddnet.org",
        443,
        "https://master2.ddnet.org/ddnet/15/servers.json",
        DDN,
    ),
    M::http(
        "master3.ddnet.org",
        443,
        "https://master3.ddnet.org/ddnet/15/servers.json",
        DDN,
    ),
    M::http(
        "master4.ddnet.org",
        443,
        "https://master4.ddnet.org/ddnet/15/servers.json",
        DDN,
    ),
];

/// Every catalogued game, by registry id.
pub(super) const ALL: &[(&str, &[M])] = &[
    ("q3", Q3),
    ("et", ET),
    ("etl", ET),
    ("openarena", OPENARENA),
    ("rtcw", RTCW),
    ("urt", URT),
    ("jk2", JK2),
    ("jka", JKA),
    ("sof2", SOF2),
    ("cod", COD),
    ("coduo", CODUO),
    ("cod2", COD2),
    ("cod4", COD4),
    ("cod4x", COD4X),
    ("iw4x", IW4X),
    ("unvanquished", UNVANQUISHED),
    ("tremulous", TREMULOUS),
    ("wop", WOP),
    ("smokinguns", SMOKINGUNS),
    ("q3rally", Q3RALLY),
    ("reaction", REACTION),
    ("warsow", WARSOW),
    ("warfork", WARFORK),
    ("nexuiz", NEXUIZ),
    ("xonotic", XONOTIC),
    ("doom3", DOOM3),
    ("quake4", QUAKE4),
    ("prey", PREY),
    ("etqw", ETQW),
    ("teeworlds", TEEWORLDS),
    ("teeworlds07", TEEWORLDS07),
    ("ddnet", DDNET),
];

pub(super) fn of(id: &str) -> &'static [M] {
    ALL.iter().find(|(g, _)| *g == id).map_or(&[], |(_, m)| *m)
}
