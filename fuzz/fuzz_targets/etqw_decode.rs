//! Any datagram (and any feed body): `decode` must not panic, errors stay inside the input,
//! and what decodes must survive encode → decode byte for byte.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    fragstat_etqw::fuzzing::check_decode(data);
});
