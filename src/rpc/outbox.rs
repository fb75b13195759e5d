//! The host's stdout: the one RPC channel back to Neovim.
//!
//! The reader writes replies to requests through it and the decision thread
//! writes answers as notifications directly, so an answer costs exactly one
//! message and never waits on the async runtime. Both take the same lock
//! and write whole messages, so they never interleave.

use nvim_rs::rpc::model::{encode_sync, RpcMessage};
use rmpv::Value;
use std::fs::File;
use std::io::Write;
use std::sync::{Arc, Mutex};

#[derive(Clone)]
pub struct Outbox {
    out: Arc<Mutex<File>>,
}

impl Outbox {
    /// Unbuffered stdout (a clone of fd 1).
    pub fn stdout() -> std::io::Result<Outbox> {
        Ok(Outbox {
            out: Arc::new(Mutex::new(nvim_rs::create::unbuffered_stdout()?)),
        })
    }

    fn send(&self, message: RpcMessage) -> std::io::Result<()> {
        let mut bytes = Vec::with_capacity(256);
        encode_sync(&mut bytes, message).map_err(|e| std::io::Error::other(e.to_string()))?;
        let mut out = self.out.lock().unwrap_or_else(|e| e.into_inner());
        out.write_all(&bytes)
    }

    /// Sends a msgpack-RPC notification: Neovim runs API method `method`
    /// and sends nothing back (unless it fails: then `nvim_error_event`).
    pub fn notify(&self, method: &str, params: Vec<Value>) -> std::io::Result<()> {
        self.send(RpcMessage::RpcNotification {
            method: method.to_string(),
            params,
        })
    }

    /// Sends the response to request `id`: `error` nil and `result`, or
    /// an error and nil.
    pub fn respond(&self, id: u64, error: Value, result: Value) -> std::io::Result<()> {
        self.send(RpcMessage::RpcResponse {
            msgid: id,
            error,
            result,
        })
    }
}
