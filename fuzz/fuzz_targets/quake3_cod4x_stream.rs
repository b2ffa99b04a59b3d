//! Any bytes as CoD4X's TCP master stream: no panic, offsets inside, and a stream read to
//! its end survives encode → decode.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    fragstat_quake3_oob::fuzzing::check_cod4x_stream(data);
});
