//! Ctrl-C and SIGTERM, for every command that runs until interrupted (`watch`, `serve`,
//! `track`, `master-server`), whichever of them this build has (Cargo features).

/// Waits for Ctrl-C or SIGTERM.
pub async fn wait_for_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}
