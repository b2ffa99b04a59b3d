//! Any body as DDNet's `servers.json`: no panic, error offsets inside the body, and a list
//! that parses survives render → parse.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    fragstat_teeworlds::fuzzing::check_http(data);
});
