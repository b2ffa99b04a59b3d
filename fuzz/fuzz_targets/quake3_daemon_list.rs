//! Any datagram as a Dæmon `dual` answer packet (links, sequenced list): no panic, offsets
//! inside, round trips, and the `dual` exchange lists each server once.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    fragstat_quake3_oob::fuzzing::check_daemon_list(data);
});
