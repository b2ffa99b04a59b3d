//! Any Teeworlds datagram (0.6, DDNet extended and legacy, 0.7, masters): no panic, error
//! offsets inside the datagram, and what decodes survives encode → decode.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    fragstat_teeworlds::fuzzing::check_decode(data);
});
