//! Any datagram of the qfusion/DarkPlaces family (short `info` query and reply, Quake III
//! out-of-band packets, every registry game's record): no panic, and what decodes survives
//! encode → decode.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    fragstat_warsow::fuzzing::check_decode(data);
});
