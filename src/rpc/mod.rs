//! The msgpack-RPC host that Neovim starts as a job (`laya serve`).
//! Knows nothing of tensors: it hands requests to the engine.
