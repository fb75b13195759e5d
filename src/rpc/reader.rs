//! Reads Neovim's messages from stdin and hands each to the handler.
//!
//! `framing` cuts the stream into whole messages (each byte looked at
//! once, a message over the cap skipped without being held); `envelope`
//! decodes each; requests are answered on stdout, notifications go to the
//! handler, which only enqueues. Nothing is queued between the reader and
//! the handler: a message is handled before the next read, so memory is
//! bounded by one read and one message of at most the cap.

use super::envelope::{self, Incoming};
use super::framing::{Frame, Framer};
use super::handler::{Host, NOTICE_LUA};
use super::stats::Stats;
use log::error;
use rmpv::Value;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncReadExt};

const READ_BYTES: usize = 64 * 1024;

/// Why reading ended.
#[derive(Debug)]
pub enum End {
    /// Neovim closed the channel.
    Closed,
    /// The stream cannot be cut into messages any more.
    OutOfSync(String),
    Failed(std::io::Error),
}

/// Reads until the channel closes or goes out of sync. Neovim writes each
/// message whole, so one that stays incomplete for `incomplete_for` means
/// that the stream lost a boundary (a truncated message took in the bytes
/// after it) and nothing after it can be read right.
pub async fn read_messages<R: AsyncRead + Unpin>(
    mut input: R,
    host: &Host,
    max_message_bytes: usize,
    incomplete_for: Duration,
) -> End {
    let mut framer = Framer::new(max_message_bytes);
    let mut chunk = vec![0u8; READ_BYTES];
    let mut frames = Vec::new();
    // When the message still open began (the read that brought its first byte).
    let mut open_since: Option<Instant> = None;
    loop {
        let read = match open_since {
            None => input.read(&mut chunk).await,
            Some(since) => {
                let left = incomplete_for.saturating_sub(since.elapsed());
                // Bytes already waiting are read even past the deadline.
                match tokio::time::timeout(left, input.read(&mut chunk)).await {
                    Ok(r) => r,
                    Err(_) => {
                        return End::OutOfSync(format!(
                            "a message stayed incomplete for {} ms",
                            incomplete_for.as_millis()
                        ))
                    }
                }
            }
        };
        let n = match read {
            Ok(0) => return End::Closed,
            Ok(n) => n,
            Err(e) => return End::Failed(e),
        };
        let before = framer.messages();
        let pushed = framer.push(&chunk[..n], &mut frames);
        for frame in frames.drain(..) {
            dispatch(host, frame);
        }
        if let Err(e) = pushed {
            return End::OutOfSync(e.0);
        }
        open_since = match (framer.in_message(), open_since) {
            (false, _) => None,
            (true, Some(t)) if framer.messages() == before => Some(t),
            (true, _) => Some(Instant::now()),
        };
    }
}

/// Handles one message: a request gets its reply (or an error naming what
/// was wrong), a notification goes to the handler, bad input is counted
/// and logged.
pub fn dispatch(host: &Host, frame: Frame) {
    let bytes = match frame {
        Frame::Message(bytes) => bytes,
        Frame::Oversized { bytes, kind, msgid } => return oversized(host, bytes, kind, msgid),
    };
    match envelope::decode(&bytes) {
        Ok(Incoming::Notification { method, params }) => {
            drop(bytes);
            host.notify(&method, params);
        }
        Ok(Incoming::Request { id, method, .. }) => respond(host, id, host.reply(&method)),
        Ok(Incoming::Response { id }) => host.bad_input(&format!(
            "a response (id {id}) to a request the host never sent"
        )),
        Err(bad) => {
            host.bad_input(&bad.error);
            if let Some(id) = bad.id {
                respond(host, id, Err(Value::from(bad.error)));
            }
        }
    }
}

fn oversized(host: &Host, bytes: u64, kind: u8, msgid: Option<u64>) {
    Stats::bump(&host.stats.oversized);
    let error = format!(
        "a message of {bytes} bytes is over the host's limit of {} bytes (laya serve --max-message-mb); it was skipped",
        host.max_message_bytes
    );
    // Sizes only: the message may be buffer text.
    host.bad_input(&error);
    match (kind, msgid) {
        (0, Some(id)) => respond(host, id, Err(Value::from(error))),
        // A notification has no reply to carry the error: the plugin is
        // told once, so that what it sent is not lost without a word.
        (2, _) if !host.told_oversized.swap(true, Ordering::Relaxed) => {
            let params = vec![
                Value::from(NOTICE_LUA),
                Value::Array(vec![Value::from("oversized"), Value::from(error)]),
            ];
            if let Err(e) = host.outbox.notify("nvim_exec_lua", params) {
                error!("cannot send a notice to Neovim: {e}");
            }
        }
        _ => {}
    }
}

fn respond(host: &Host, id: u64, reply: Result<Value, Value>) {
    let (error, result) = match reply {
        Ok(v) => (Value::Nil, v),
        Err(e) => (e, Value::Nil),
    };
    if let Err(e) = host.outbox.respond(id, error, result) {
        error!("cannot send a reply to Neovim: {e}");
    }
}
