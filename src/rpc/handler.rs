//! What each incoming method does.
//!
//! Notifications only enqueue (the reader handles them one at a time, so any
//! work here would delay the next keystroke's request); requests answer at
//! once from counters. Bad input becomes a log line or an error reply.

use super::decide::map;
use super::inbox::{Event, Inbox, Job};
use super::outbox::Outbox;
use super::params::{
    accepted_args, call_args, forget_args, forget_learnt_args, learn_args, PredictParams,
};
use super::stats::{clock_origin_us, now_us, Stats};
use crate::engine::{EngineInfo, LoadError};
use crate::learn::learning::LearnStatus;
use log::{debug, error, warn};
use rmpv::Value;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[derive(Clone)]
pub struct Host {
    pub inbox: Arc<Inbox>,
    pub stats: Arc<Stats>,
    pub info: Arc<Mutex<Option<EngineInfo>>>,
    pub backend_asked: String,
    /// Where `call`'s replies go (as notifications, like the answers).
    pub outbox: Outbox,
    pub learn: Arc<Mutex<LearnStatus>>,
    pub bad_input_log: Arc<Mutex<Quota>>,
    /// The size cap on incoming messages (see `framing`).
    pub max_message_bytes: usize,
    /// Whether Neovim was told of a notification skipped for its size.
    pub told_oversized: Arc<std::sync::atomic::AtomicBool>,
}

/// The Lua function that receives the reply to a `call`.
pub const REPLY_LUA: &str = "require('laya.host').on_reply(...)";

/// The Lua function that shows the user a message from the host, once per
/// kind in a session: `(kind, text)`.
pub const NOTICE_LUA: &str = "require('laya.host').on_notice(...)";

pub const METHODS: &str =
    "notifications: predict, accepted, forget, learn, forget_learnt, flush, echo, call(id, status|ping); requests: status, ping";

impl Host {
    /// Handles notification `name`.
    pub fn notify(&self, name: &str, args: Vec<Value>) {
        let recv_us = now_us();
        match name {
            "predict" => match PredictParams::from_args(&args) {
                Ok(params) => {
                    Stats::bump(&self.stats.predict_received);
                    let job = Job {
                        params,
                        recv_us,
                        echo: false,
                    };
                    if self.inbox.put_predict(job) {
                        Stats::bump(&self.stats.predict_superseded);
                    }
                }
                Err(e) => self.bad_input(&e),
            },
            // The benchmark floor: `predict`'s arguments and path, no engine.
            "echo" => match PredictParams::from_args(&args) {
                Ok(params) => {
                    Stats::bump(&self.stats.echo_received);
                    let job = Job {
                        params,
                        recv_us,
                        echo: true,
                    };
                    self.inbox.put_predict(job);
                }
                Err(e) => self.bad_input(&e.replacen("predict", "echo", 1)),
            },
            "accepted" => match accepted_args(&args) {
                Ok((buffer, text)) => {
                    Stats::bump(&self.stats.accepted);
                    self.put_event(Event::Accepted { buffer, text });
                }
                Err(e) => self.bad_input(&e),
            },
            "forget" => match forget_args(&args) {
                Ok(buffer) => self.put_event(Event::Forget { buffer }),
                Err(e) => self.bad_input(&e),
            },
            // A request that Neovim sends as a notification and waits for
            // with a timeout (an rpcrequest would block it while the host
            // is stopped or busy); the reply comes back as a notification.
            "call" => match call_args(&args) {
                Ok((id, method)) => {
                    let reply = match self.reply(&method) {
                        Ok(v) => vec![Value::from(id), v, Value::Nil],
                        Err(e) => vec![Value::from(id), Value::Nil, e],
                    };
                    let params = vec![Value::from(REPLY_LUA), Value::Array(reply)];
                    if let Err(e) = self.outbox.notify("nvim_exec_lua", params) {
                        error!("cannot send a reply to Neovim: {e}");
                    }
                }
                Err(e) => self.bad_input(&e),
            },
            "learn" => match learn_args(&args) {
                Ok((text, path)) => self.put_event(Event::Learn { text, path }),
                Err(e) => self.bad_input(&e),
            },
            "forget_learnt" => match forget_learnt_args(&args) {
                Ok(word) => self.put_event(Event::ForgetLearnt { word }),
                Err(e) => self.bad_input(&e),
            },
            // Save what was learnt now (Neovim is about to exit); status's
            // learn.flushes counts the saves done this way.
            "flush" => self.put_event(Event::Flush),
            // Neovim reports a failed notification of ours this way.
            // Its message can quote the answer (buffer text): not logged.
            "nvim_error_event" => {
                if self.within_log_quota() {
                    error!(
                        "Neovim rejected a notification of ours (error type {})",
                        args.first().and_then(Value::as_i64).unwrap_or(-1)
                    )
                }
            }
            other => self.bad_input(&format!(
                "unknown notification `{}`; {METHODS}",
                name_head(other)
            )),
        }
    }
}

/// The head of an unknown method name, for a log line or an error: a name
/// can be any length (a 100 MB name must not become a 100 MB line).
pub fn name_head(name: &str) -> String {
    const HEAD: usize = 40;
    if name.len() <= HEAD {
        return name.to_string();
    }
    let mut end = HEAD;
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes)", &name[..end], name.len())
}

impl Host {
    /// The answer to request `name` (its arguments, if any, are ignored).
    pub fn reply(&self, name: &str) -> Result<Value, Value> {
        match name {
            // Does nothing on purpose: the round-trip floor for benchmarks.
            "ping" => Ok(map(vec![("now_us", Value::from(now_us()))])),
            "status" => Ok(self.status()),
            "predict" | "accepted" | "forget" | "learn" | "forget_learnt" | "flush" | "echo"
            | "call" => {
                let e = format!("`{name}` is a notification (use rpcnotify), not a request");
                self.bad_input(&e);
                Err(Value::from(e))
            }
            other => {
                let e = format!("unknown method `{}`; {METHODS}", name_head(other));
                self.bad_input(&e);
                Err(Value::from(e))
            }
        }
    }

    /// Queues an event; one dropped because the queue is full is counted
    /// and logged (within the log's quota).
    fn put_event(&self, event: Event) {
        if !self.inbox.put_event(event) {
            Stats::bump(&self.stats.events_dropped);
            self.bad_input("the event queue is full (the engine is behind): an event was dropped");
        }
    }

    /// Counts bad input and logs it, within the log's quota.
    pub fn bad_input(&self, message: &str) {
        Stats::bump(&self.stats.bad_input);
        if self.within_log_quota() {
            warn!("bad input: {message}");
            debug!("(the host keeps running)");
        }
    }

    /// True when a line about bad input may be logged now: a flood of bad
    /// messages must not become a flood of log lines.
    fn within_log_quota(&self) -> bool {
        let mut quota = self.bad_input_log.lock().unwrap_or_else(|e| e.into_inner());
        match quota.take(Instant::now()) {
            None => false,
            Some(0) => true,
            Some(held) => {
                warn!(
                    "bad input: {held} more lines left out (the log takes {} a minute; status counts all bad input)",
                    Quota::PER_WINDOW
                );
                true
            }
        }
    }

    fn status(&self) -> Value {
        let s = &self.stats;
        let l = s.latency();
        let info = self.info.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let engine = match info {
            None => map(vec![
                ("ready", Value::from(false)),
                ("backend", Value::from(self.backend_asked.as_str())),
            ]),
            Some(i) => engine_info_value(&i),
        };
        map(vec![
            ("version", Value::from(env!("CARGO_PKG_VERSION"))),
            ("pid", Value::from(std::process::id())),
            ("uptime_ms", Value::from(now_us() / 1000)),
            ("now_us", Value::from(now_us())),
            (
                "clock_origin_us",
                clock_origin_us().map(Value::from).unwrap_or(Value::Nil),
            ),
            ("engine", engine),
            ("learn", self.learn_value()),
            (
                "memory",
                super::memory::value(*s.engine_memory.lock().unwrap_or_else(|e| e.into_inner())),
            ),
            (
                "counters",
                map(vec![
                    (
                        "predict_received",
                        Value::from(Stats::get(&s.predict_received)),
                    ),
                    (
                        "predict_superseded",
                        Value::from(Stats::get(&s.predict_superseded)),
                    ),
                    (
                        "predict_started",
                        Value::from(Stats::get(&s.predict_started)),
                    ),
                    (
                        "predict_answered",
                        Value::from(Stats::get(&s.predict_answered)),
                    ),
                    ("accepted", Value::from(Stats::get(&s.accepted))),
                    ("echo_received", Value::from(Stats::get(&s.echo_received))),
                    ("echo_answered", Value::from(Stats::get(&s.echo_answered))),
                    ("next_keys_sent", Value::from(Stats::get(&s.next_keys_sent))),
                    ("bad_input", Value::from(Stats::get(&s.bad_input))),
                    ("oversized", Value::from(Stats::get(&s.oversized))),
                    ("events_dropped", Value::from(Stats::get(&s.events_dropped))),
                    ("engine_panics", Value::from(Stats::get(&s.engine_panics))),
                ]),
            ),
            (
                "latency",
                map(vec![
                    ("n", Value::from(l.n as u64)),
                    ("p50_us", Value::from(l.p50_us)),
                    ("p90_us", Value::from(l.p90_us)),
                    ("p99_us", Value::from(l.p99_us)),
                    ("max_us", Value::from(l.max_us)),
                    ("last_us", Value::from(l.last_us)),
                ]),
            ),
        ])
    }
}

impl Host {
    /// The personal store as `status` reports it.
    fn learn_value(&self) -> Value {
        let s = self.learn.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let opt = |v: Option<Value>| v.unwrap_or(Value::Nil);
        map(vec![
            (
                "path",
                opt(s.path.map(|p| Value::from(p.display().to_string()))),
            ),
            ("bytes", Value::from(s.bytes)),
            ("words", Value::from(s.words)),
            // Nil: rejections are not learnt.
            ("rejections", opt(s.rejections.map(Value::from))),
            // Nil: rates are off (`engine::rates`).
            ("rated_tokens", opt(s.rated_tokens.map(Value::from))),
            ("measuring_bytes", Value::from(s.measuring_bytes)),
            (
                "dir_mode",
                opt(s.dir_mode.map(|m| Value::from(format!("{m:o}")))),
            ),
            (
                "file_mode",
                opt(s.file_mode.map(|m| Value::from(format!("{m:o}")))),
            ),
            ("load_ms", Value::F64(s.load_ms)),
            ("flushes", Value::from(s.flushes)),
            ("error", opt(s.error.map(Value::from))),
        ])
    }
}

/// The engine's self-description, as `status` reports it.
fn engine_info_value(i: &EngineInfo) -> Value {
    let model = i
        .model_path
        .as_ref()
        .map(|p| Value::from(p.display().to_string()))
        .unwrap_or(Value::Nil);
    map(vec![
        ("ready", Value::from(true)),
        ("backend", Value::from(i.backend.as_str())),
        ("device", Value::from(i.device.as_str())),
        ("model", model),
        ("dtype", Value::from(i.dtype.as_str())),
        ("vocab_size", Value::from(i.vocab_size as u64)),
        ("load_ms", Value::F64(i.load_ms)),
        (
            "model_error",
            error_value(&i.model_error, |e| e.to_string()),
        ),
        (
            "model_error_kind",
            error_value(&i.model_error, |e| e.kind().into()),
        ),
        (
            "model_error_advice",
            error_value(&i.model_error, |e| e.advice().into()),
        ),
        (
            "backend_error",
            error_value(&i.backend_error, |e| e.to_string()),
        ),
        (
            "backend_error_kind",
            error_value(&i.backend_error, |e| e.kind().into()),
        ),
        (
            "backend_error_advice",
            error_value(&i.backend_error, |e| e.advice().into()),
        ),
        (
            "words",
            i.words_path
                .as_ref()
                .map(|p| Value::from(p.display().to_string()))
                .unwrap_or(Value::Nil),
        ),
        ("words_count", Value::from(i.words_count as u64)),
        (
            "words_error",
            error_value(&i.words_error, |e| e.to_string()),
        ),
        (
            "words_error_kind",
            error_value(&i.words_error, |e| e.kind().into()),
        ),
        (
            "words_error_advice",
            error_value(&i.words_error, |e| e.advice().into()),
        ),
        (
            "kinds",
            i.kinds_path
                .as_ref()
                .map(|p| Value::from(p.display().to_string()))
                .unwrap_or(Value::Nil),
        ),
        ("kinds_count", Value::from(i.kinds_count as u64)),
        (
            "kinds_error",
            error_value(&i.kinds_error, |e| e.to_string()),
        ),
        (
            "kinds_error_advice",
            error_value(&i.kinds_error, |e| e.advice().into()),
        ),
    ])
}

/// One field of a load error for `status`; nil when there is none.
fn error_value(e: &Option<LoadError>, field: impl Fn(&LoadError) -> String) -> Value {
    e.as_ref().map_or(Value::Nil, |e| Value::from(field(e)))
}

/// How many lines of one kind the log takes: `PER_WINDOW` a minute, and
/// one line saying how many were left out.
#[derive(Debug, Default)]
pub struct Quota {
    window_start: Option<Instant>,
    logged: u32,
    held: u64,
}

impl Quota {
    pub const PER_WINDOW: u32 = 20;
    const WINDOW: Duration = Duration::from_secs(60);

    /// None: leave this line out. Some(n): log it, after a line saying
    /// that `n` were left out before it (when n > 0).
    pub fn take(&mut self, now: Instant) -> Option<u64> {
        let start = *self.window_start.get_or_insert(now);
        if now.duration_since(start) >= Self::WINDOW {
            self.window_start = Some(now);
            self.logged = 0;
        }
        if self.logged >= Self::PER_WINDOW {
            self.held += 1;
            return None;
        }
        self.logged += 1;
        Some(std::mem::take(&mut self.held))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_quota_logs_twenty_a_minute_and_counts_the_rest() {
        let mut q = Quota::default();
        let t0 = Instant::now();
        let logged = (0..1000).filter(|_| q.take(t0).is_some()).count();
        assert_eq!(logged, Quota::PER_WINDOW as usize);
        assert_eq!(q.take(t0 + Duration::from_secs(30)), None);
        assert_eq!(q.take(t0 + Duration::from_secs(61)), Some(981));
        assert_eq!(q.take(t0 + Duration::from_secs(62)), Some(0));
    }
}
