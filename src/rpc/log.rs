//! Leveled log lines on stderr (stdout is the RPC channel and never logged to).
//!
//! The Lua side reads the host's stderr and appends each line to
//! `stdpath('log')/laya.log`; the first word of a line is its level.

use std::io::Write;
use std::sync::atomic::{AtomicU8, Ordering};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Error = 0,
    Warn = 1,
    Info = 2,
    Debug = 3,
}

impl Level {
    pub fn parse(s: &str) -> Option<Level> {
        match s.to_ascii_lowercase().as_str() {
            "error" => Some(Level::Error),
            "warn" | "warning" => Some(Level::Warn),
            "info" => Some(Level::Info),
            "debug" | "trace" => Some(Level::Debug),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Level::Error => "ERROR",
            Level::Warn => "WARN",
            Level::Info => "INFO",
            Level::Debug => "DEBUG",
        }
    }
}

static MAX_LEVEL: AtomicU8 = AtomicU8::new(Level::Info as u8);

pub fn set_level(level: Level) {
    MAX_LEVEL.store(level as u8, Ordering::Relaxed);
}

pub fn enabled(level: Level) -> bool {
    level as u8 <= MAX_LEVEL.load(Ordering::Relaxed)
}

/// Writes one line; a message with newlines stays one line so the Lua side
/// can forward line by line.
pub fn write(level: Level, args: std::fmt::Arguments) {
    if !enabled(level) {
        return;
    }
    let msg = args.to_string().replace('\n', "\\n");
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{} {}", level.name(), msg);
}

/// Logs every panic by its place only: a panic's message can quote the
/// text it was given (buffer text), which must never reach the log.
pub fn log_panics_without_text() {
    std::panic::set_hook(Box::new(|info| {
        let place = info
            .location()
            .map_or_else(String::new, |l| format!(" at {}:{}", l.file(), l.line()));
        let thread = std::thread::current();
        write(
            Level::Error,
            format_args!(
                "panic in thread {}{place} (message withheld: it may quote buffer text)",
                thread.name().unwrap_or("unnamed")
            ),
        );
    }));
}

macro_rules! log_error { ($($t:tt)*) => { $crate::rpc::log::write($crate::rpc::log::Level::Error, format_args!($($t)*)) } }
macro_rules! log_warn { ($($t:tt)*) => { $crate::rpc::log::write($crate::rpc::log::Level::Warn, format_args!($($t)*)) } }
macro_rules! log_info { ($($t:tt)*) => { $crate::rpc::log::write($crate::rpc::log::Level::Info, format_args!($($t)*)) } }
macro_rules! log_debug { ($($t:tt)*) => { $crate::rpc::log::write($crate::rpc::log::Level::Debug, format_args!($($t)*)) } }
pub(crate) use {log_debug as debug, log_error as error, log_info as info, log_warn as warn};
