//! Any datagram as an ET: Legacy `sv_tracker` push: `decode_push` must not panic, an error's
//! offset is inside the datagram, and what decodes survives encode → decode.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    fragstat_quake3_oob::fuzzing::check_push(data);
});
