//! The decision thread: owns the engine, takes the latest request per
//! buffer from the inbox, and sends each answer to Neovim as one
//! notification (`nvim_exec_lua` of the Lua handler) carrying the request's
//! seq and the host's timestamps. `echo` jobs come back the same way with
//! an empty prediction (no engine call).

use super::inbox::{Event, Inbox, Job, Work};
use super::outbox::Outbox;
use super::stats::{now_us, Stats};
use crate::engine::{Engine, EngineInfo, EngineOptions, Prediction, Request};
use log::{debug, error, info, warn};
use rmpv::Value;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The Lua function that receives answers (lua/laya/host.lua).
pub const ANSWER_LUA: &str = "require('laya.host').on_answer(...)";
/// The Lua function that receives the answers to the next keys.
pub const NEXT_KEYS_LUA: &str = "require('laya.host').on_next_keys(...)";
/// Candidates asked of the engine per keystroke (ghost + menu).
const CANDIDATES: usize = crate::engine::HOST_CANDIDATES;
/// Next keys answered in advance after each answer (the likeliest next
/// characters of the word, see `Engine::next_keys`).
const NEXT_KEYS: usize = 12;
/// How long after an answer the next keys wait: Neovim handles the answer
/// first (on a 2-core machine this work would otherwise take the CPU that
/// Neovim needs to show it while the helper thread has the other one). A
/// keystroke arriving meanwhile is answered at once, and no next keys are
/// worked out for the answer it replaces.
const NEXT_KEYS_AFTER: Duration = Duration::from_millis(1);

pub struct Decider {
    pub options: EngineOptions,
    pub inbox: Arc<Inbox>,
    pub outbox: Outbox,
    pub stats: Arc<Stats>,
    /// Filled once the engine has loaded; read by `status`.
    pub info: Arc<Mutex<Option<EngineInfo>>>,
    /// Test-only: sleep this long before each decision (LAYA_TEST_DELAY_MS).
    pub test_delay: Option<Duration>,
    /// Test-only: panic, quoting the text, when the text before the cursor
    /// ends with this (LAYA_TEST_PANIC), to show what a panic costs.
    pub test_panic: Option<String>,
    /// After each answer, work out the answers to the likeliest next keys
    /// and send them too (see `Engine::next_keys`).
    pub next_keys: bool,
    /// Personal learning and its store.
    pub learning: crate::learn::learning::Learning,
}

impl Decider {
    pub fn spawn(self) -> std::io::Result<std::thread::JoinHandle<()>> {
        std::thread::Builder::new()
            .name("laya-decide".into())
            .spawn(move || self.run())
    }

    fn run(mut self) {
        let t0 = now_us();
        let mut engine = Engine::new(self.options.clone());
        let engine_info = engine.info();
        info!(
            "engine ready in {} ms: backend {} ({}), model {:?}",
            (now_us() - t0) / 1000,
            engine_info.backend,
            engine_info.device,
            engine_info.model_path
        );
        if let Some(e) = &engine_info.model_error {
            warn!("model not loaded, using word sources only: {e}");
        }
        if let Some(e) = &engine_info.words_error {
            warn!("word list not loaded, predicting without it: {e}");
        }
        if let Some(e) = &engine_info.kinds_error {
            warn!("kinds file not loaded, ranking without it: {e}");
        }
        self.learning.load(&mut engine);
        *self.info.lock().unwrap_or_else(|e| e.into_inner()) = Some(engine_info);

        loop {
            // Learnt text is saved a few seconds later even if nothing else comes.
            // So is what the rates' thread measures meanwhile.
            while (self.learning.has_news() || self.learning.measuring())
                && !self.inbox.wait_for_work(self.learning.until_due())
            {
                self.learning.poll(&mut engine);
                self.learning.maybe_save();
            }
            let Some(work) = self.inbox.take() else {
                break;
            };
            self.learning.poll(&mut engine);
            match work {
                Work::Event(Event::Accepted { buffer, text }) => {
                    let l = &mut self.learning;
                    catch_panic(&self.stats, "accepted", || {
                        l.accepted(&mut engine, buffer, &text)
                    });
                }
                Work::Event(Event::Forget { buffer }) => {
                    self.guarded("forget", || engine.forget(buffer));
                    self.measure(&engine);
                }
                Work::Event(Event::Learn { text, path }) => {
                    let l = &mut self.learning;
                    catch_panic(&self.stats, "learn", || l.learn(&mut engine, &text, &path));
                }
                Work::Event(Event::Flush) => self.learning.finish(),
                Work::Event(Event::ForgetLearnt { word }) => {
                    let l = &mut self.learning;
                    catch_panic(&self.stats, "forget", || {
                        l.forget(&mut engine, word.as_deref())
                    });
                }
                Work::Predict(job) if job.echo => self.echo(job),
                Work::Predict(job) => {
                    self.answer(&mut engine, job);
                    self.learning.rejections(&mut engine);
                }
            }
            self.learning.maybe_save();
        }
        self.learning.poll(&mut engine);
        self.learning.finish();
        debug!("decision thread done");
    }

    /// Runs an engine call; a panic in the engine is logged and counted,
    /// never allowed to take the host down.
    fn guarded<T>(&self, what: &str, f: impl FnOnce() -> T) -> Option<T> {
        catch_panic(&self.stats, what, f)
    }

    /// Answers an `echo` exactly as `answer` answers a prediction, with an
    /// empty prediction in place of the engine's: the floor a keystroke's
    /// round trip is compared with (the same thread hand-offs, message sizes
    /// and Lua handler).
    fn echo(&self, job: Job) {
        let start_us = now_us();
        let mut answer = answer_value(&job, &Prediction::default(), start_us, start_us);
        if let Value::Map(pairs) = &mut answer {
            pairs.push((Value::from("echo"), Value::from(true)));
        }
        Stats::bump(&self.stats.echo_answered);
        if let Err(e) = self.send_answer(answer) {
            error!("cannot send echo to Neovim: {e}");
        }
    }

    /// Measures the engine's caches for `status`.
    fn measure(&self, engine: &Engine) {
        let m = engine.memory();
        *self
            .stats
            .engine_memory
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some(m);
    }

    fn send_answer(&self, answer: Value) -> std::io::Result<()> {
        self.send(ANSWER_LUA, answer)
    }

    fn send(&self, lua: &str, arg: Value) -> std::io::Result<()> {
        self.outbox.notify(
            "nvim_exec_lua",
            vec![Value::from(lua), Value::Array(vec![arg])],
        )
    }

    /// Between keystrokes, after an answer: the answers to the likeliest
    /// next keys, so that Neovim can show the right one the moment its key
    /// is typed (the real answer follows and confirms it). Starts
    /// `NEXT_KEYS_AFTER` the answer and is given up as soon as a keystroke
    /// waits; nothing is sent then.
    fn send_next_keys(&self, engine: &mut Engine, job: &Job, last: &Prediction) {
        let inbox = &self.inbox;
        if inbox.wait_for_work(NEXT_KEYS_AFTER) {
            return;
        }
        let stop = || inbox.waiting();
        let keys = self
            .guarded("next_keys", || {
                engine.next_keys(job.params.buffer, last, CANDIDATES, NEXT_KEYS, &stop)
            })
            .unwrap_or_default();
        if keys.is_empty() || inbox.waiting() {
            return;
        }
        Stats::bump(&self.stats.next_keys_sent);
        if let Err(e) = self.send(NEXT_KEYS_LUA, next_keys_value(job, &keys, now_us())) {
            error!("cannot send next keys to Neovim: {e}");
        }
    }

    fn answer(&self, engine: &mut Engine, job: Job) {
        Stats::bump(&self.stats.predict_started);
        if let Some(d) = self.test_delay {
            std::thread::sleep(d);
        }
        let p = &job.params;
        let start_us = now_us();
        let request = Request {
            buffer: p.buffer,
            before: &p.before,
            filetype: &p.filetype,
            kind: crate::engine::kind::TextKind::parse(&p.syntax),
            k: CANDIDATES,
            seen_last: p.seen_last,
            learn: p.learn,
        };
        let prediction = self
            .guarded("predict", || {
                if let Some(end) = self.test_panic.as_deref() {
                    if request.before.ends_with(end) {
                        panic!("test panic after {:?}", request.before);
                    }
                }
                engine.predict(&request)
            })
            .unwrap_or_default();
        let done_us = now_us();
        let answer = answer_value(&job, &prediction, start_us, done_us);
        // Counted before sending, so a `status` that follows an answer sees it.
        Stats::bump(&self.stats.predict_answered);
        self.stats
            .record_latency(done_us.saturating_sub(job.recv_us));
        match self.send_answer(answer) {
            // Counts only: candidates and ghost text are buffer text.
            Ok(()) => debug!(
                "answered seq {} (buffer {}): {} candidates, ghost of {} bytes",
                p.seq,
                p.buffer,
                prediction.candidates.len(),
                prediction.ghost.len()
            ),
            Err(e) => error!("cannot send answer to Neovim: {e}"),
        }
        if Stats::get(&self.stats.predict_answered) % super::memory::SNAPSHOT_EVERY == 1 {
            self.measure(engine);
        }
        // The answer is out: the rest is guesswork for the next keystroke.
        self.guarded("think_ahead", || engine.think_ahead(p.buffer));
        if self.next_keys {
            self.send_next_keys(engine, &job, &prediction);
        }
    }
}

/// Runs an engine call; a panic in the engine is logged and counted,
/// never allowed to take the host down.
fn catch_panic<T>(stats: &Stats, what: &str, f: impl FnOnce() -> T) -> Option<T> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(v) => Some(v),
        Err(_) => {
            // The panic hook logged where; its message may quote buffer
            // text and is not logged.
            Stats::bump(&stats.engine_panics);
            error!("engine panicked in {what}; this request is dropped, the host goes on");
            None
        }
    }
}

/// The answer table the Lua side receives (see lua/laya/host.lua).
pub fn answer_value(job: &Job, pred: &Prediction, start_us: u64, done_us: u64) -> Value {
    let p = &job.params;
    let mut fields = vec![
        ("buf", Value::from(p.buffer)),
        ("seq", Value::from(p.seq)),
        ("tick", Value::from(p.changedtick)),
        ("row", Value::from(p.row)),
        ("col", Value::from(p.col)),
    ];
    fields.extend(prediction_fields(pred));
    fields.extend([
        ("t_recv", Value::from(job.recv_us)),
        ("t_start", Value::from(start_us)),
        ("t_done", Value::from(done_us)),
    ]);
    map(fields)
}

/// The next keys' answers for the answer to `job`: `keys` maps each
/// character to a table like an answer's `prefix`, `ghost` and `items`.
pub fn next_keys_value(job: &Job, keys: &[(char, Prediction)], done_us: u64) -> Value {
    let p = &job.params;
    let keys = keys
        .iter()
        .map(|(c, pred)| {
            (
                Value::from(c.to_string()),
                map(prediction_fields(pred).into()),
            )
        })
        .collect();
    map(vec![
        ("buf", Value::from(p.buffer)),
        ("seq", Value::from(p.seq)),
        ("row", Value::from(p.row)),
        ("col", Value::from(p.col)),
        ("keys", Value::Map(keys)),
        ("t_done", Value::from(done_us)),
    ])
}

/// `prefix`, `ghost` and `items` (the candidates) of a prediction.
fn prediction_fields(pred: &Prediction) -> [(&'static str, Value); 3] {
    let items = pred
        .candidates
        .iter()
        .map(|c| {
            map(vec![
                ("word", Value::from(c.word.as_str())),
                ("insert", Value::from(c.insert.as_str())),
                ("replace", Value::from(c.replace as u64)),
                ("source", Value::from(c.source.as_str())),
                ("score", Value::F64(c.score as f64)),
            ])
        })
        .collect();
    [
        ("prefix", Value::from(pred.prefix.as_str())),
        ("ghost", Value::from(pred.ghost.as_str())),
        ("items", Value::Array(items)),
    ]
}

pub fn map(pairs: Vec<(&str, Value)>) -> Value {
    Value::Map(
        pairs
            .into_iter()
            .map(|(k, v)| (Value::from(k), v))
            .collect(),
    )
}
