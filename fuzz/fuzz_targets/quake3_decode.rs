//! Any datagram: `decode` must not panic, and what decodes must survive encode → decode.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    fragstat_quake3_oob::fuzzing::check_decode(data);
});
