//! The decisions: the engine, its own thread, and how answers go out. The
//! thread takes the latest request per buffer from the inbox; a request that
//! finds the engine idle is decided at once on the RPC loop that read it
//! (`Decisions::submit`), sparing the wake-up of a sleeping thread on the
//! keystroke path. Each answer goes to Neovim as one notification
//! (`nvim_exec_lua` of the Lua handler) carrying the request's seq and the
//! host's timestamps; `echo` jobs come back the same way with an empty
//! prediction (no engine call).

use super::inbox::{Event, Inbox, Job, Work};
use super::log::{debug, error, info, warn};
use super::outbox::Outbox;
use super::stats::{now_us, Stats};
use crate::engine::{Engine, EngineInfo, EngineOptions, Prediction, Request};
use rmpv::Value;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// The Lua function that receives answers (lua/laya/host.lua).
pub const ANSWER_LUA: &str = "require('laya.host').on_answer(...)";
/// Candidates asked of the engine per keystroke (ghost + menu).
const CANDIDATES: usize = 8;
/// A request read this soon (µs) after an inline decision ended may have
/// waited behind it, with others after it: it goes to the queue, where only
/// the latest per buffer is decided.
const INLINE_BURST_GAP_US: u64 = 1_000;
/// The RPC loop reads nothing while it decides: after a decision slower than
/// this (µs), the next one goes to the thread.
const INLINE_MAX_DECISION_US: u64 = 2_000;

/// What the decision thread and the RPC loop share.
pub struct Decisions {
    pub inbox: Arc<Inbox>,
    pub outbox: Outbox,
    pub stats: Arc<Stats>,
    /// Filled once the engine has loaded; read by `status`.
    pub info: Arc<Mutex<Option<EngineInfo>>>,
    /// Test-only: sleep this long before each decision (LAYA_TEST_DELAY_MS).
    pub test_delay: Option<Duration>,
    /// Whether idle-engine requests may be decided on the RPC loop
    /// (LAYA_INLINE_DECISIONS=0 turns it off, for benchmarks).
    pub allow_inline: bool,
    engine: Mutex<Option<Engine>>,
    /// Set once the engine is loaded, when inline decisions are safe for it.
    inline_ready: AtomicBool,
    inline_done_us: AtomicU64,
    last_decision_us: AtomicU64,
}

impl Decisions {
    pub fn new(
        inbox: Arc<Inbox>,
        outbox: Outbox,
        stats: Arc<Stats>,
        info: Arc<Mutex<Option<EngineInfo>>>,
        test_delay: Option<Duration>,
    ) -> Decisions {
        let allow_inline = std::env::var("LAYA_INLINE_DECISIONS").map_or(true, |v| v != "0");
        Decisions {
            inbox,
            outbox,
            stats,
            info,
            test_delay,
            allow_inline,
            engine: Mutex::new(None),
            inline_ready: AtomicBool::new(false),
            inline_done_us: AtomicU64::new(0),
            last_decision_us: AtomicU64::new(0),
        }
    }

    /// Puts the loaded engine in place; returns whether requests may now be
    /// decided on the RPC loop.
    fn install(&self, engine: Engine, engine_info: EngineInfo) -> bool {
        // The cpu backend and the word sources are plain Rust data and may be
        // used from the RPC loop; MLX keeps its device work on one thread.
        let inline = self.allow_inline && self.test_delay.is_none() && engine_info.backend != "mlx";
        *self.engine() = Some(engine);
        *self.info.lock().unwrap_or_else(|e| e.into_inner()) = Some(engine_info);
        self.inline_ready.store(inline, Ordering::Relaxed);
        inline
    }

    fn engine(&self) -> MutexGuard<'_, Option<Engine>> {
        self.engine.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes a `predict` or `echo` from the RPC loop. When the engine is
    /// idle and nothing waits, decides it here and now; otherwise queues it
    /// for the decision thread. Returns true when it superseded a request
    /// still waiting in the queue.
    pub fn submit(&self, job: Job) -> bool {
        if self.may_decide_inline(job.recv_us) && self.inbox.try_claim_idle() {
            let mut engine = self.engine();
            if let Some(engine) = engine.as_mut() {
                Stats::bump(&self.stats.decided_inline);
                self.work(engine, Work::Predict(job));
                self.inline_done_us.store(now_us(), Ordering::Relaxed);
                self.inbox.done();
                return false;
            }
            drop(engine);
            self.inbox.done();
        }
        self.inbox.put_predict(job)
    }

    fn may_decide_inline(&self, recv_us: u64) -> bool {
        self.inline_ready.load(Ordering::Relaxed)
            && recv_us >= self.inline_done_us.load(Ordering::Relaxed) + INLINE_BURST_GAP_US
            && self.last_decision_us.load(Ordering::Relaxed) <= INLINE_MAX_DECISION_US
    }

    fn work(&self, engine: &mut Engine, work: Work) {
        match work {
            Work::Event(Event::Accepted { buffer, text }) => {
                self.guarded("accepted", || engine.accepted(buffer, &text));
            }
            Work::Event(Event::Forget { buffer }) => {
                self.guarded("forget", || engine.forget(buffer));
            }
            Work::Predict(job) if job.echo => self.echo(job),
            Work::Predict(job) => self.answer(engine, job),
        }
    }

    /// Runs an engine call; a panic in the engine is logged and counted,
    /// never allowed to take the host down.
    fn guarded<T>(&self, what: &str, f: impl FnOnce() -> T) -> Option<T> {
        match catch_unwind(AssertUnwindSafe(f)) {
            Ok(v) => Some(v),
            Err(p) => {
                Stats::bump(&self.stats.engine_panics);
                let msg = p
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                error!("engine panicked in {what}: {msg}");
                None
            }
        }
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

    fn send_answer(&self, answer: Value) -> std::io::Result<()> {
        self.outbox.notify(
            "nvim_exec_lua",
            vec![Value::from(ANSWER_LUA), Value::Array(vec![answer])],
        )
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
            after: &p.after,
            filetype: &p.filetype,
            k: CANDIDATES,
        };
        let prediction = self
            .guarded("predict", || engine.predict(&request))
            .unwrap_or_default();
        let done_us = now_us();
        self.last_decision_us
            .store(done_us.saturating_sub(start_us), Ordering::Relaxed);
        let answer = answer_value(&job, &prediction, start_us, done_us);
        // Counted before sending, so a `status` that follows an answer sees it.
        Stats::bump(&self.stats.predict_answered);
        self.stats
            .record_latency(done_us.saturating_sub(job.recv_us));
        match self.send_answer(answer) {
            Ok(()) => debug!(
                "answered seq {} (buffer {}): {} candidates, ghost {:?}",
                p.seq,
                p.buffer,
                prediction.candidates.len(),
                prediction.ghost
            ),
            Err(e) => error!("cannot send answer to Neovim: {e}"),
        }
    }
}

/// The decision thread: loads the engine, then decides what the RPC loop
/// queued.
pub struct Decider {
    pub options: EngineOptions,
    pub decisions: Arc<Decisions>,
}

impl Decider {
    pub fn spawn(self) -> std::io::Result<std::thread::JoinHandle<()>> {
        std::thread::Builder::new()
            .name("laya-decide".into())
            .spawn(move || self.run())
    }

    fn run(self) {
        let d = &self.decisions;
        let t0 = now_us();
        let engine = Engine::new(self.options.clone());
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
        let inline = d.install(engine, engine_info);
        info!(
            "requests that find the engine idle are decided {}",
            if inline {
                "on the RPC loop"
            } else {
                "on this thread"
            }
        );

        while let Some(work) = d.inbox.take() {
            if let Some(engine) = d.engine().as_mut() {
                d.work(engine, work);
            }
            d.inbox.done();
        }
        debug!("decision thread done");
    }
}

/// The answer table the Lua side receives (see lua/laya/host.lua).
pub fn answer_value(job: &Job, pred: &Prediction, start_us: u64, done_us: u64) -> Value {
    let p = &job.params;
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
    map(vec![
        ("buf", Value::from(p.buffer)),
        ("seq", Value::from(p.seq)),
        ("tick", Value::from(p.changedtick)),
        ("row", Value::from(p.row)),
        ("col", Value::from(p.col)),
        ("prefix", Value::from(pred.prefix.as_str())),
        ("ghost", Value::from(pred.ghost.as_str())),
        ("items", Value::Array(items)),
        ("t_recv", Value::from(job.recv_us)),
        ("t_start", Value::from(start_us)),
        ("t_done", Value::from(done_us)),
    ])
}

pub fn map(pairs: Vec<(&str, Value)>) -> Value {
    Value::Map(
        pairs
            .into_iter()
            .map(|(k, v)| (Value::from(k), v))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rpc::params::PredictParams;

    fn job(buffer: u64, seq: u64, recv_us: u64) -> Job {
        Job {
            params: PredictParams {
                buffer,
                changedtick: 1,
                seq,
                row: 1,
                col: 3,
                before: "the".into(),
                after: String::new(),
                filetype: "text".into(),
            },
            recv_us,
            echo: false,
        }
    }

    /// Decisions answering into a temporary file instead of stdout.
    fn decisions(name: &str) -> (Decisions, std::path::PathBuf) {
        let path = std::env::temp_dir().join(format!("laya-decide-{name}-{}", std::process::id()));
        let outbox = Outbox::to_file(std::fs::File::create(&path).unwrap());
        let mut d = Decisions::new(
            Arc::new(Inbox::default()),
            outbox,
            Arc::new(Stats::default()),
            Arc::new(Mutex::new(None)),
            None,
        );
        d.allow_inline = true;
        let engine = Engine::new(EngineOptions {
            neural: false,
            ..EngineOptions::default()
        });
        let info = engine.info();
        d.install(engine, info);
        (d, path)
    }

    #[test]
    fn an_idle_engine_decides_at_once_and_a_busy_one_queues() {
        let (d, path) = decisions("idle");
        let t = now_us() + 10_000;
        assert!(!d.submit(job(1, 1, t)));
        assert_eq!(Stats::get(&d.stats.decided_inline), 1);
        assert_eq!(Stats::get(&d.stats.predict_answered), 1);
        // The answer went out as one nvim_exec_lua notification.
        let written = std::fs::read(&path).unwrap();
        assert!(written.windows(12).any(|w| w == b"nvim_exec_lu"));

        // While the engine is claimed (the thread deciding), requests queue
        // and the latest per buffer wins.
        assert!(d.inbox.try_claim_idle());
        let later = now_us() + 10_000;
        assert!(!d.submit(job(1, 2, later)));
        assert!(d.submit(job(1, 3, later)));
        assert_eq!(Stats::get(&d.stats.decided_inline), 1);
        d.inbox.done();
        match d.inbox.take() {
            Some(Work::Predict(j)) => assert_eq!(j.params.seq, 3),
            other => panic!("expected seq 3, got {other:?}"),
        }
        d.inbox.done();
        let _ = std::fs::remove_file(path);
    }

    #[test]
    fn a_request_read_right_after_an_inline_decision_goes_to_the_queue() {
        let (d, path) = decisions("burst");
        let t = now_us() + 10_000;
        d.submit(job(1, 1, t));
        assert_eq!(Stats::get(&d.stats.decided_inline), 1);
        // Received within the burst gap after that decision ended: it may
        // have waited behind it with others, so only the queue sees it.
        d.submit(job(1, 2, now_us()));
        assert_eq!(Stats::get(&d.stats.decided_inline), 1);
        assert!(matches!(d.inbox.take(), Some(Work::Predict(_))));
        d.inbox.done();
        let _ = std::fs::remove_file(path);
    }

    #[test]
    fn no_inline_decisions_when_turned_off() {
        let (mut d, path) = decisions("off");
        d.allow_inline = false;
        let engine = Engine::new(EngineOptions {
            neural: false,
            ..EngineOptions::default()
        });
        let info = engine.info();
        assert!(!d.install(engine, info));
        d.submit(job(1, 1, now_us() + 10_000));
        assert_eq!(Stats::get(&d.stats.decided_inline), 0);
        assert!(matches!(d.inbox.take(), Some(Work::Predict(_))));
        d.inbox.done();
        let _ = std::fs::remove_file(path);
    }
}
