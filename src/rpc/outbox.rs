//! The host's stdout: the one RPC channel back to Neovim.
//!
//! nvim-rs writes request replies through it (as an async writer) and the
//! decision thread writes answers as notifications directly, so an answer
//! costs exactly one message and never waits on the async runtime. Both paths
//! take the same lock and write whole messages, so they never interleave.

use nvim_rs::rpc::model::{encode_sync, RpcMessage};
use rmpv::Value;
use std::fs::File;
use std::io::Write;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

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

    fn write_whole(&self, bytes: &[u8]) -> std::io::Result<()> {
        let mut out = self.out.lock().unwrap_or_else(|e| e.into_inner());
        out.write_all(bytes)
    }

    /// Sends a msgpack-RPC notification: Neovim runs API method `method`
    /// and sends nothing back (unless it fails: then `nvim_error_event`).
    pub fn notify(&self, method: &str, params: Vec<Value>) -> std::io::Result<()> {
        let mut bytes = Vec::with_capacity(256);
        encode_sync(
            &mut bytes,
            RpcMessage::RpcNotification {
                method: method.to_string(),
                params,
            },
        )
        .map_err(|e| std::io::Error::other(e.to_string()))?;
        self.write_whole(&bytes)
    }
}

/// nvim-rs encodes each message into one buffer and hands it over in one
/// `write_all`; taking all of it in one call keeps messages whole.
impl tokio::io::AsyncWrite for Outbox {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Poll::Ready(self.write_whole(buf).map(|_| buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}
