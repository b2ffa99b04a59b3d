//! The colour-dialect table: every vector of the colour research (docs/protocols/colours.md
//! §"Test vectors": the core cases and real names from public captures), each with the
//! dialect, what its engine draws, the colour runs, and the engine source line that decides
//! it — a failure names the line.

use fragstat_core::model::{Dialect, Dialect::*};
use fragstat_core::text::Run;

/// One expected run: colour (`None`: the default), text; an icon has `icon` set.
#[derive(Debug, Clone, PartialEq)]
struct R {
    color: Option<u32>,
    text: &'static str,
    icon: Option<&'static str>,
    half_alpha: bool,
}

/// A run in a colour (`0xRRGGBB`).
fn c(rgb: u32, text: &'static str) -> R {
    R {
        color: Some(rgb),
        text,
        icon: None,
        half_alpha: false,
    }
}

/// A run in the default colour.
fn d(text: &'static str) -> R {
    R {
        color: None,
        text,
        icon: None,
        half_alpha: false,
    }
}

/// An icon, drawn in the current colour.
fn icon(color: Option<u32>, name: &'static str) -> R {
    R {
        color,
        text: "",
        icon: Some(name),
        half_alpha: false,
    }
}

struct Row {
    input: &'static [u8],
    dialects: &'static [Dialect],
    visible: &'static str,
    runs: Vec<R>,
    source: &'static str,
}

fn row(
    input: &'static [u8],
    dialects: &'static [Dialect],
    visible: &'static str,
    runs: Vec<R>,
    source: &'static str,
) -> Row {
    Row {
        input,
        dialects,
        visible,
        runs,
        source,
    }
}

/// Every dialect with colour codes.
const CODED: &[Dialect] = &[
    Quake,
    IdTech3,
    Wet,
    Etl,
    Ioq3,
    UrbanTerror,
    JediKnight,
    OpenJk,
    DarkPlaces,
    Daemon,
    Idtech4,
    Quake4,
    Qfusion,
    CallOfDuty,
];

fn rows() -> Vec<Row> {
    vec![
        // §4.1 core cases.
        row(b"^1Red^7 W", CODED, "Red W", vec![c(0xFF0000, "Red"), c(0xFFFFFF, " W")],
            "#1: every rule accepts ^1 and ^7"),
        row(b"^1Red^7 W", &[Plain], "^1Red^7 W", vec![d("^1Red^7 W")],
            "#1: Teeworlds has no colour codes"),
        row(b"^^1x", &[IdTech3, Wet, Etl, Ioq3, UrbanTerror, JediKnight, OpenJk, Quake4], "^x",
            vec![d("^"), c(0xFF0000, "x")],
            "#2: Q3 q_shared.h:533 (!= '^'); IOQ3 q_shared.c:42 (^ not alnum); Q4SDK Str.cpp:1775"),
        row(b"^^1x", &[Quake4], "^x", vec![d("^"), c(0xFF0000, "x")],
            "#2 quake4 strip: Q4SDK RemoveEscapes Str.cpp:1757-1760 gives ^1x; fragstat shows \
             what the renderer draws (Q4DEC devicecontext.cpp DrawText)"),
        row(b"^^1x", &[DarkPlaces, Qfusion, Daemon, Quake], "^1x", vec![d("^1x")],
            "#2: DP common.c:1326-1331 / gl_draw.c:1213-1217; QF q_libc.cpp:137-140; \
             DAE Color.cpp:169-172; fragstat's generic rule"),
        row(b"^^1x", &[Idtech4], "1x", vec![c(0x000000, "1x")],
            "#2: D3 Str.h:1016 (^ allowed), Str.h:1067 ('^' & 15 = 14, black)"),
        row(b"^^1x", &[CallOfDuty], "x", vec![c(0xFF0000, "x")],
            "#2 cod (best effort): the ^^ + digit idiom of CoD names, colours.md §1.13"),
        row(b"^^", &[IdTech3, Wet, Etl, Ioq3, UrbanTerror, JediKnight, OpenJk, Quake4, CallOfDuty],
            "^^", vec![d("^^")], "#3: as #2 (Q3 q_shared.h:533, IOQ3 q_shared.c:42, Q4SDK Str.cpp:1775)"),
        row(b"^^", &[DarkPlaces, Qfusion, Daemon, Quake], "^", vec![d("^")],
            "#3: DP common.c:1326-1331; QF q_libc.cpp:137-140; DAE Color.cpp:169-172"),
        row(b"^^", &[Idtech4], "", vec![], "#3: D3 Str.h:1016"),
        row(b"a^", CODED, "a^", vec![d("a^")],
            "#4: NUL check Q3 q_shared.h:533; DP common.c:1319-1325; QF q_libc.cpp:142; DAE Color.cpp:214"),
        row(b"a^", &[Plain], "a^", vec![d("a^")], "#4: no codes"),
        row(b"^x12", &[IdTech3, Ioq3, Quake], "12", vec![c(0x000000, "12")],
            "#5: Q3 q_shared.h:533/543; IOQ3 q_shared.c:42 (x is alnum): ('x'-'0')&7 = 0"),
        row(b"^x12", &[Wet, Etl], "12", vec![c(0xFF8000, "12")],
            "#5: ET q_shared.h:547 (('x'-'0')&31 = 8)"),
        row(b"^x12", &[DarkPlaces, Daemon], "^x12", vec![d("^x12")],
            "#5: DP common.c:1307-1318 (needs 3 hex); DAE Color.cpp:181-190 then 214"),
        row(b"^x12", &[Idtech4], "12", vec![c(0x808080, "12")], "#5: D3 Str.h:1016,1067 ('x'&15 = 8)"),
        row(b"^x12", &[UrbanTerror, JediKnight, OpenJk, Qfusion, Quake4], "^x12", vec![d("^x12")],
            "#5: digit-only rules; Q4SDK Str.cpp:1833"),
        row(b"^xF80Orange", &[DarkPlaces, Daemon, Quake], "Orange", vec![c(0xFF8800, "Orange")],
            "#6: DP gl_draw.c:902-923, 885-891; DAE Color.cpp:181-190"),
        row(b"^xF80Orange", &[IdTech3, Ioq3], "F80Orange", vec![c(0x000000, "F80Orange")],
            "#6: Q3 q_shared.h:533"),
        row(b"^xF80Orange", &[Wet, Etl], "F80Orange", vec![c(0xFF8000, "F80Orange")],
            "#6: ET q_shared.h:547"),
        row(b"^#ff8000Or", &[Daemon], "Or", vec![c(0xFF8000, "Or")], "#7: DAE Color.cpp:191-211"),
        row(b"^#ff8000Or", &[IdTech3], "ff8000Or", vec![c(0xFFFF00, "ff8000Or")],
            "#7: Q3 q_shared.h:533/543 ('#'&7 = 3)"),
        row(b"^#ff8000Or", &[Wet, Etl], "ff8000Or", vec![c(0x800080, "ff8000Or")],
            "#7: ET q_shared.h:547 (index 19)"),
        row(b"^#ff8000Or", &[Ioq3, DarkPlaces, Qfusion], "^#ff8000Or", vec![d("^#ff8000Or")],
            "#7: IOQ3 q_shared.c:42 (# not alnum); DP common.c:1335-1338"),
        row(b"^ spaced", &[IdTech3], "spaced", vec![c(0x000000, "spaced")],
            "#8: Q3 q_shared.h:533 ((32-48)&7 = 0)"),
        row(b"^ spaced", &[Wet], "spaced", vec![c(0x804000, "spaced")],
            "#8: ET q_shared.h:522,547 (index 16)"),
        row(b"^ spaced", &[Etl, Ioq3, Idtech4, DarkPlaces, Daemon, Qfusion, Quake4], "^ spaced",
            vec![d("^ spaced")],
            "#8: ETL q_shared.h:924-927 (isgraph); IOQ3 q_shared.c:42; D3 Str.h:1016 (!= ' ')"),
        row(b"^*Star", &[Wet, Etl, Daemon], "Star", vec![d("Star")],
            "#9: ET cl_scrn.c:235-236; ETL q_shared.h:822; DAE Color.cpp:173-176"),
        row(b"^*Star", &[IdTech3], "Star", vec![c(0x00FF00, "Star")], "#9: Q3 q_shared.h:543 ('*'&7 = 2)"),
        row(b"^*Star", &[Ioq3, DarkPlaces, Qfusion, UrbanTerror, JediKnight, Quake4], "^*Star",
            vec![d("^*Star")], "#9: not a code in these rules"),
        row(b"^[br", &[IdTech3], "br", vec![c(0xFFFF00, "br")], "#10: Q3 q_shared.h:533 (0x5B&7 = 3)"),
        row(b"^[br", &[Wet, Etl], "br", vec![c(0xBFBFBF, "br")], "#10: ET q_shared.h:547 (index 11)"),
        row(b"^[br", &[Daemon], "^[br", vec![d("^[br")],
            "#10: DAE Color.cpp:177 ('[' is past 'O'); pre-2015 Daemon (1a2d2a1d Color.h:317) \
             drew it as a colour: not modelled"),
        row(b"^8^9", &[UrbanTerror, OpenJk, DarkPlaces, Qfusion, IdTech3, Ioq3, Wet, Etl, Daemon,
            Idtech4, Quake4], "", vec![], "#11: digit rules"),
        row(b"^8^9", &[JediKnight], "^8^9", vec![d("^8^9")],
            "#11: OJK 14cea1563:codemp/game/q_shared.h:1147 (<= '7'); OpenArena's own engine \
             (^[0-8]) is not a dialect of its own"),
        row(b"caf^\xE9!", &[IdTech3], "caf!", vec![d("caf"), c(0xFF0000, "!")],
            "#12: Q3 q_shared.h:533 (0xE9&7 = 1); its Q_CleanStr (q_shared.c:855-861) also \
             gives caf!"),
        row(b"caf^\xE9!", &[Wet, Etl], "caf!", vec![d("caf"), c(0xFF0033, "!")],
            "#12: ETL q_shared.h:929 (bytes >= 0x80 are codes; index 25)"),
        row(b"caf^\xE9!", &[Ioq3, DarkPlaces, Daemon, Qfusion], "caf^\u{e9}!", vec![d("caf^\u{e9}!")],
            "#12: IOQ3 q_shared.c:39-40 (negative: not a code)"),
        row(b"^:x", &[Wet, Etl, Daemon], "x", vec![c(0xBFBFBF, "x")], "#13: ET table index 10"),
        row(b"^:x", &[Quake4], "x", vec![c(0xF09E0D, "x")], "#13: Q4SDK Str.cpp:1784, 36"),
        row(b"^:x", &[Ioq3, DarkPlaces, Qfusion, UrbanTerror], "^:x", vec![d("^:x")],
            "#13: not alnum / not a digit"),
        row(b"^c900Red^c999 Srv", &[Quake4], "Red Srv", vec![c(0xFF0000, "Red"), c(0xFFFFFF, " Srv")],
            "#14: Q4SDK Str.cpp:1802-1813; Q4DEC devicecontext.cpp:1433-1438"),
        row(b"^c900Red^c999 Srv", &[IdTech3, Ioq3, Idtech4], "900Red999 Srv",
            vec![c(0xFFFF00, "900Red999 Srv")], "#14: Q3 q_shared.h:533/543; D3 Str.h:1067 ('c' = 3)"),
        row(b"^iw07frag", &[Quake4], "frag", vec![icon(None, "w07"), d("frag")],
            "#15: Q4SDK Str.cpp:1824-1831; Q4DEC devicecontext.cpp:1450-1476 (strip: \
             Str.cpp:1751-1755 also gives frag)"),
        row(b"^^^1x", &[IdTech3, Ioq3], "^^x", vec![d("^^"), c(0xFF0000, "x")], "#16: as #2"),
        row(b"^^^1x", &[DarkPlaces, Qfusion, Daemon], "^x", vec![d("^"), c(0xFF0000, "x")],
            "#16: ^^ shows ^, then ^1"),
        row(b"^^^1x", &[Idtech4], "x", vec![c(0xFF0000, "x")], "#16: ^^ a code, ^1 a code"),
        row(b"^0Zero", &[IdTech3, Ioq3, DarkPlaces, Qfusion, Wet], "Zero", vec![c(0x000000, "Zero")],
            "#17: table entry 0"),
        row(b"^0Zero", &[Daemon], "Zero", vec![c(0x333333, "Zero")], "#17: DAE Color.cpp:39"),
        row(b"^0Zero", &[Idtech4, Quake4], "Zero", vec![d("Zero")],
            "#17: D3 DeviceContext.cpp:836-837 (C_COLOR_DEFAULT); Q4DEC devicecontext.cpp:1403-1411"),
        row(b"^Qq", &[IdTech3, Ioq3, Wet, Etl, Idtech4], "q", vec![c(0xFF0000, "q")],
            "#18: 'Q': (0x51-0x30)&7 = 1; &31 = 1; &15 = 1"),
        row(b"^Qq", &[Daemon], "^Qq", vec![d("^Qq")], "#18: DAE Color.cpp:177; ColorTest.cpp:40"),
        // §4.2 real names from public captures.
        row(b"^w*ES*^3Bro^7chillin", &[IdTech3, Ioq3, Idtech4], "*ES*Brochillin",
            vec![c(0xFFFFFF, "*ES*"), c(0xFFFF00, "Bro"), c(0xFFFFFF, "chillin")],
            "GameQ Quake3/1_response.txt (Q3 1.32c): Q3 q_shared.h:533 ('w'&7 = 7)"),
        row(b"^w*ES*^3Bro^7chillin", &[DarkPlaces, Qfusion, UrbanTerror], "^w*ES*Brochillin",
            vec![d("^w*ES*"), c(0xFFFF00, "Bro"), c(0xFFFFFF, "chillin")],
            "GameQ Quake3/1_response.txt: digit-only rules (DP common.c:1335-1338)"),
        row(b"^&^*i'm baby Gr^_oo^*T", &[IdTech3], "i'm baby GrooT",
            vec![c(0x00FF00, "i'm baby Gr"), c(0xFFFFFF, "oo"), c(0x00FF00, "T")],
            "GameQ Jedioutcast/2_response.txt (JK2 1.02): JK2MV q_shared.h:711 Q_IsColorString_1_02"),
        row(b"^&^*i'm baby Gr^_oo^*T", &[JediKnight], "^&^*i'm baby Gr^_oo^*T",
            vec![d("^&^*i'm baby Gr^_oo^*T")], "GameQ Jedioutcast/2_response.txt: JK2MV q_shared.h:710 (1.04, ^0-7)"),
        row(b"^Kf^Et^=W^2}{^qJ^*e^:V^K,^*aRa", &[IdTech3], "ftW}{JeV,aRa",
            vec![c(0xFFFF00, "f"), c(0x00FFFF, "tW"), c(0x00FF00, "}{"), c(0xFF0000, "J"),
                 c(0x00FF00, "eV"), c(0xFFFF00, ","), c(0x00FF00, "aRa")],
            "GameQ Sof2/1_response.txt (SoF2 1.00): SOF2SDK q_shared.h:666, 676 (& 7)"),
        row(b"^Kf^Et^=W^2}{^qJ^*e^:V^K,^*aRa", &[Wet], "ftW}{JeV,aRa",
            vec![c(0x993300, "f"), c(0x8000FF, "t"), c(0x808000, "W"), c(0x00FF00, "}{"),
                 c(0xFF0000, "J"), d("e"), c(0xBFBFBF, "V"), c(0x993300, ","), d("aRa")],
            "GameQ Sof2/1_response.txt shown with ET's table: ET q_shared.h:543,547"),
        row(b"^9[^1OUT^9LAW^1]^9Ms^1Storm^7", &[IdTech3, CallOfDuty], "[OUTLAW]MsStorm",
            vec![c(0xFF0000, "[OUTLAW]MsStorm")],
            "GameQ Cod2/2_response.txt: Q3 q_shared.h:543; C4X q_shared.h:161 (^9 & 7 = 1)"),
        row(b"^9[^1OUT^9LAW^1]^9Ms^1Storm^7", &[UrbanTerror], "[OUTLAW]MsStorm",
            vec![c(0x4A4D30, "["), c(0xFF0000, "OUT"), c(0x4A4D30, "LAW"), c(0xFF0000, "]"),
                 c(0x4A4D30, "Ms"), c(0xFF0000, "Storm")],
            "GameQ Cod2/2_response.txt with a 10-colour rule: URT q_shared.h:364, q_math.c:50-62"),
        row(b"^^00East^^22|^^00wood^^11.", &[IdTech3], "^0East^2|^0wood^1.",
            vec![d("^"), c(0x000000, "0East^"), c(0x00FF00, "2|^"), c(0x000000, "0wood^"),
                 c(0xFF0000, "1.")],
            "GameQ Cod/1_response.txt: Q3 q_shared.h:533"),
        row(b"^^00East^^22|^^00wood^^11.", &[CallOfDuty], "East|wood.",
            vec![c(0x000000, "East"), c(0x00FF00, "|"), c(0x000000, "wood"), c(0xFF0000, ".")],
            "GameQ Cod/1_response.txt, best effort: C2R q_shared.cpp:1120-1156 I_CleanStr also \
             gives East|wood."),
        row(b"^^5Hemmo^^0UnRuLy", &[CallOfDuty], "HemmoUnRuLy",
            vec![c(0x00FFFF, "Hemmo"), c(0x000000, "UnRuLy")],
            "GameQ Cod/1_response.txt, best effort: the ^^ + digit idiom, colours.md §1.13"),
        row("^x555[^x0BF力^x777] ^xBBBIn^1t^7eger".as_bytes(), &[DarkPlaces], "[力] Integer",
            vec![c(0x555555, "["), c(0x00BBFF, "力"), c(0x777777, "] "), c(0xBBBBBB, "In"),
                 c(0xFF0000, "t"), c(0xFFFFFF, "eger")],
            "xrcon tests/library_test.py (Xonotic 0.7.0): DP gl_draw.c:902-923"),
        row("^x555[^x0BF力^x777] ^xBBBIn^1t^7eger".as_bytes(), &[IdTech3, Ioq3], "555[0BF力777] BBBInteger",
            vec![c(0x000000, "555[0BF力777] BBBIn"), c(0xFF0000, "t"), c(0xFFFFFF, "eger")],
            "xrcon tests/library_test.py: Q3 q_shared.h:533/543 ('x'&7 = 0)"),
        row(b"^z0^7UnnamedPlayer", &[Ioq3, IdTech3], "0UnnamedPlayer",
            vec![c(0x00FF00, "0"), c(0xFFFFFF, "UnnamedPlayer")],
            "pyq3serverlist tests/server_test.py:153 (ioq3 + CPMA): IOQ3 q_shared.h:412-413 \
             ('z'&7 = 2; CPMA's own cgame colours are not modelled)"),
        row(b"^7RUSWARS ^2HARD^1#2^7^\x01//\x10cardicon_harrier", &[CallOfDuty], "RUSWARS HARD#2",
            vec![c(0xFFFFFF, "RUSWARS "), c(0x00FF00, "HARD"), c(0xFF0000, "#2"),
                 icon(Some(0xFFFFFF), "cardicon_harrier")],
            "GameQ Codmw2/3_response.txt (IW4x 0.6.6): the IW material escape, inferred from \
             the capture (colours.md §1.13)"),
        row(b"^:<chris32.de> ^7Vanilla | ^1FFA^7", &[CallOfDuty], "<chris32.de> Vanilla | FFA",
            vec![d("<chris32.de> "), c(0xFFFFFF, "Vanilla | "), c(0xFF0000, "FFA")],
            "GameQ Codmw2/2_response.txt (IW4x 0.7.2): ^: is IW4x's own colour, drawn as the \
             default here (cod, best effort, unverified)"),
        row(b"^7RUSWARS ^2HARD^1#2^7^\x01//\x10cardicon_harrier", &[IdTech3],
            "RUSWARS HARD#2//\u{10}cardicon_harrier",
            vec![c(0xFFFFFF, "RUSWARS "), c(0x00FF00, "HARD"), c(0xFF0000, "#2//\u{10}cardicon_harrier")],
            "GameQ Codmw2/3_response.txt: Q3 q_shared.h:533 (^ 0x01 is colour 1)"),
    ]
}

fn expected(r: &R) -> Run {
    let mut run = Run::new(
        r.color.map(|v| [(v >> 16) as u8, (v >> 8) as u8, v as u8]),
        r.text,
    );
    run.icon = r.icon.map(str::to_owned);
    run.half_alpha = r.half_alpha;
    run
}

#[test]
fn every_vector_in_every_dialect_it_names() {
    let mut failures = Vec::new();
    let mut checked = 0;
    for row in rows() {
        for &dialect in row.dialects {
            checked += 1;
            let shown = dialect.display(row.input);
            let runs = dialect.runs(row.input);
            let want: Vec<Run> = row.runs.iter().map(expected).collect();
            if shown != row.visible || runs != want {
                failures.push(format!(
                    "{:?} in {dialect}: shown {shown:?}, want {:?}; runs {runs:?}, want {want:?} \
                     [decided by {}]",
                    String::from_utf8_lossy(row.input),
                    row.visible,
                    row.source
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(checked > 150, "{checked}");
}

/// Dæmon's own test vectors (DAE `src/common/ColorTest.cpp:37-60`).
#[test]
fn daemon_engine_test_vectors() {
    let d = Daemon;
    let none = b"^Q^q^~^xgff^x1$3^xa1W^##23456^#1j3456^#12 456^#123.56^#1234m6^#12345G^";
    assert_eq!(d.strip(none), none, "ColorTest.cpp: no valid code");
    assert_eq!(d.strip(b"^xF1A^1^0^O^9^a^;^*^xeE2^#123Aa5^#3903ff"), b"");
    assert_eq!(d.strip(b"^6foo^^bar"), b"foo^bar");
    assert_eq!(d.strip(b"dretc^#123456h"), b"dretch");
}

/// DarkPlaces `^8` is white at half alpha (DP gl_draw.c:852-877).
#[test]
fn darkplaces_half_alpha() {
    let r = DarkPlaces.runs(b"^8ghost^9grey");
    assert_eq!(r.len(), 2);
    assert_eq!(
        (r[0].color, r[0].half_alpha, r[0].text.as_str()),
        (Some([255; 3]), true, "ghost")
    );
    assert_eq!(
        (r[1].color, r[1].half_alpha, r[1].text.as_str()),
        (Some([128; 3]), false, "grey")
    );
}

/// Quake 4 `^+`/`^-` add a tenth to each component of the colour (Q4DEC devicecontext.cpp
/// DrawText, `drawTextColorAdjust`), until the next colour code; `^n` + a byte draws nothing.
#[test]
fn quake4_brightness_and_commands() {
    let r = Quake4.runs(b"^c500a^+b^-^-c^1d^n3e");
    let got: Vec<(Option<[u8; 3]>, &str)> = r.iter().map(|r| (r.color, r.text.as_str())).collect();
    assert_eq!(
        got,
        [
            (Some([142, 0, 0]), "a"),
            (Some([168, 26, 26]), "b"),
            (Some([117, 0, 0]), "c"),
            (Some([255, 0, 0]), "de"),
        ]
    );
    // Steps on the default colour are unknown here: the run stays in the default colour.
    assert_eq!(Quake4.runs(b"^+x"), [Run::new(None, "x")]);
    // `^c` with non-digits: clamped components; with fewer than three bytes: not a code.
    assert_eq!(Quake4.display(b"^cz!0x"), "x");
    assert_eq!(Quake4.runs(b"^cz!0x")[0].color, Some([255, 0, 0]));
    assert_eq!(Quake4.display(b"^c12"), "^c12");
}
