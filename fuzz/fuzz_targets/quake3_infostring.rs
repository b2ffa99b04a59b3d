//! Any infostring: parse must not panic, and what parses must survive encode → parse.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    fragstat_quake3_oob::fuzzing::check_infostring(data);
});
