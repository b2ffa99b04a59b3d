//! Any body as IW4x's HTTP server list: no panic, error offsets inside the body, and the
//! servers of a list that parses survive render → parse.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    fragstat_quake3_oob::fuzzing::check_iw4x_list(data);
});
