//! The msgpack-RPC host that Neovim starts as a job (`laya serve`).
//! Knows nothing of tensors: it hands requests to the engine.

/// Runs the host on stdin/stdout until Neovim closes the channel; returns the exit code.
pub fn serve(args: &[String]) -> i32 {
    let _ = args;
    eprintln!("laya serve: not built yet");
    2
}
