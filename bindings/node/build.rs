//! napi-rs's link settings for a Node.js addon.
fn main() {
    napi_build::setup();
}
