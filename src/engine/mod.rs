//! The typing decision: text before the cursor → candidates.
//!
//! Knows nothing of Neovim. `Engine::predict` is called by the RPC layer (and
//! by the CLI's protocol/eval/bench) once per keystroke.
