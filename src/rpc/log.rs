//! The `log` facade's one logger: levelled lines on stderr (stdout is the
//! RPC channel and never logged to). Library code logs with `log::warn!`
//! and friends and prints nothing itself; `laya serve` and `laya lsp` set the
//! level from `--log-level`, the other subcommands log at info.
//!
//! The Lua side reads the host's stderr and appends each line to
//! `stdpath('log')/laya.log` (lua/laya/log.lua also bounds lines and limits
//! repeats); the first word of a line is its level.

use std::io::Write;

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

    fn filter(self) -> log::LevelFilter {
        match self {
            Level::Error => log::LevelFilter::Error,
            Level::Warn => log::LevelFilter::Warn,
            Level::Info => log::LevelFilter::Info,
            Level::Debug => log::LevelFilter::Trace,
        }
    }
}

/// Most bytes of one message: a log line stays readable, and a message
/// that grew by accident (a long path, a long error chain) cannot flood it.
pub const MAX_LINE: usize = 1000;

struct StderrLog;

impl log::Log for StderrLog {
    // Only this crate's records: dependencies (nvim-rs) log whole messages
    // at debug, buffer text included, which must never reach the log.
    fn enabled(&self, meta: &log::Metadata) -> bool {
        meta.level() <= log::max_level()
            && (meta.target() == "laya" || meta.target().starts_with("laya::"))
    }

    fn log(&self, record: &log::Record) {
        if self.enabled(record.metadata()) {
            let name = match record.level() {
                log::Level::Error => "ERROR",
                log::Level::Warn => "WARN",
                log::Level::Info => "INFO",
                log::Level::Debug | log::Level::Trace => "DEBUG",
            };
            let line = one_line(&record.args().to_string());
            let _ = writeln!(std::io::stderr().lock(), "{name} {line}");
        }
    }

    fn flush(&self) {}
}

/// A message as one line (the Lua side forwards line by line) of at most
/// `MAX_LINE` bytes, cut at a character boundary.
fn one_line(msg: &str) -> String {
    let mut s = msg.replace('\n', "\\n");
    if s.len() > MAX_LINE {
        let mut cut = MAX_LINE;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
        s.push_str(" [cut]");
    }
    s
}

static LOGGER: StderrLog = StderrLog;

/// Installs the logger (once per process; later calls only change the level).
pub fn init(level: Level) {
    let _ = log::set_logger(&LOGGER);
    log::set_max_level(level.filter());
}

/// Logs every panic by its place only: a panic's message can quote the
/// text it was given (buffer text), which must never reach the log.
pub fn log_panics_without_text() {
    std::panic::set_hook(Box::new(|info| {
        let place = info
            .location()
            .map_or_else(String::new, |l| format!(" at {}:{}", l.file(), l.line()));
        let thread = std::thread::current();
        log::error!(
            "panic in thread {}{place} (message withheld: it may quote buffer text)",
            thread.name().unwrap_or("unnamed")
        );
    }));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_becomes_one_bounded_line() {
        assert_eq!(one_line("a\nb"), "a\\nb");
        let long = "é".repeat(MAX_LINE);
        let line = one_line(&long);
        assert!(line.len() <= MAX_LINE + " [cut]".len(), "{}", line.len());
        assert!(line.ends_with(" [cut]"));
        assert!(!line.contains('\n'));
    }
}
