//! A front end's side of personal learning (the Neovim host's and `laya
//! lsp`'s): text the editor hands over is learnt by the engine at once (in
//! memory) and counted for the personal store, which a helper thread
//! updates every few seconds and once more at exit, so the disk is never on
//! a keystroke's path. Learnt text never enters the log.

use crate::engine::frozen::FrozenBuilder;
use crate::engine::personal::History;
use crate::engine::rates::{RateCounts, RatesWorker};
use crate::engine::rejected::RejectionEvent;
use crate::engine::Engine;
use crate::learn::format;
use crate::learn::privacy::{is_secret_path, without_secret_lines};
use crate::learn::store::{Forget, Store};
use crate::learn::{now, Learnt, Rejection};
use log::{info, warn};
use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, TryRecvError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long learnt text may wait in memory before it is saved.
const SAVE_EVERY: Duration = Duration::from_secs(3);

/// The longest the start waits for the store: one not loaded by then (a
/// slow disk, a busy machine) is adopted as soon as its loading thread is
/// done, predictions using the buffers meanwhile.
const WAIT_AT_START: Duration = Duration::from_millis(40);

/// What the loading thread hands over: the history built from the store
/// and what loading found, or why the store could not be read.
type Loaded = std::io::Result<(Option<History>, crate::learn::store::Report)>;

/// What the user taught while the store was loading, replayed in order on
/// the adopted history.
enum Early {
    Learn(String),
    Accepted(u64, String),
    Forget(Option<String>),
    Rejection(RejectionEvent),
    Rates(RateCounts),
}

/// What `status` shows of the store.
#[derive(Debug, Clone, Default)]
pub struct LearnStatus {
    pub path: Option<PathBuf>,
    pub bytes: u64,
    pub dir_mode: Option<u32>,
    pub file_mode: Option<u32>,
    /// Distinct words the engine has learnt (store + this session).
    pub words: u64,
    /// The (context, word) rejections the engine remembers (store + this
    /// session); None when rejections are not learnt.
    pub rejections: Option<u64>,
    /// Tokens of learnt text the user's rates were measured on (store +
    /// this session); None when rates are off.
    pub rated_tokens: Option<u64>,
    /// Bytes of learnt text waiting to be measured.
    pub measuring_bytes: u64,
    pub load_ms: f64,
    /// The last problem with the store (set aside, cannot save), once.
    pub error: Option<String>,
    /// Flushes done (`flush` requests wait for the next one).
    pub flushes: u64,
}

pub struct Learning {
    store: Option<Arc<Store>>,
    pending: Learnt,
    forget: Forget,
    /// Rejections taken back since the last save (the word was written
    /// there): the store drops them too.
    taken_back: Vec<Rejection>,
    /// The rejections' figure last put in `status`.
    rejections_shown: Option<u64>,
    last_save: Instant,
    saver: Option<JoinHandle<()>>,
    /// A store being loaded: the loading thread's answer to come, when it
    /// started, and what was taught meanwhile.
    loading: Option<(Receiver<Loaded>, Instant, Vec<Early>)>,
    /// The thread measuring learnt text for the user's rates (started with
    /// the first text; `Started(None)`: rates are off or cannot be measured
    /// off the keystroke's path).
    rates: RatesThread,
    pub status: Arc<Mutex<LearnStatus>>,
}

enum RatesThread {
    NotStarted,
    Started(Option<RatesWorker>),
}

impl Learning {
    pub fn new(store: Option<Store>, status: Arc<Mutex<LearnStatus>>) -> Learning {
        Learning {
            store: store.map(Arc::new),
            pending: Learnt::default(),
            forget: Forget::Nothing,
            taken_back: Vec::new(),
            rejections_shown: None,
            last_save: Instant::now(),
            saver: None,
            loading: None,
            rates: RatesThread::NotStarted,
            status,
        }
    }

    /// Starts loading the store on a thread of its own and waits for it
    /// at most WAIT_AT_START; a store not loaded by then is adopted at the
    /// first `poll` after its thread is done.
    pub fn load(&mut self, engine: &mut Engine) {
        let Some(store) = self.store.clone() else {
            self.refresh(engine);
            return;
        };
        engine.keep_rejections();
        let (tx, rx) = mpsc::channel();
        let t0 = Instant::now();
        let spawned = std::thread::Builder::new()
            .name("laya-load".into())
            .spawn(move || {
                let _ = tx.send(store.load_with(build_history));
            });
        if let Err(e) = spawned {
            warn!("cannot start loading the personal store: {e}");
            return;
        }
        match rx.recv_timeout(WAIT_AT_START) {
            Ok(loaded) => self.adopt(engine, loaded, t0, Vec::new()),
            Err(RecvTimeoutError::Timeout) => self.loading = Some((rx, t0, Vec::new())),
            Err(RecvTimeoutError::Disconnected) => warn!("loading the personal store failed"),
        }
        self.refresh(engine);
    }

    /// Adopts the store once its loading thread is done (a no-op
    /// otherwise), and what the rates' thread measured.
    pub fn poll(&mut self, engine: &mut Engine) {
        if let RatesThread::Started(Some(w)) = &self.rates {
            if let Some(m) = w.take() {
                self.add_rates(engine, m);
                self.refresh(engine);
            }
        }
        let Some((rx, _, _)) = &self.loading else {
            return;
        };
        match rx.try_recv() {
            Err(TryRecvError::Empty) => {}
            Ok(loaded) => {
                let (_, t0, early) = self.loading.take().expect("loading");
                self.adopt(engine, loaded, t0, early);
            }
            Err(TryRecvError::Disconnected) => {
                self.loading = None;
                warn!("loading the personal store failed");
            }
        }
    }

    /// Whether the store is still being loaded.
    pub fn is_loading(&self) -> bool {
        self.loading.is_some()
    }

    fn adopt(&mut self, engine: &mut Engine, loaded: Loaded, t0: Instant, early: Vec<Early>) {
        let store = self.store.clone().expect("a store");
        match loaded {
            Ok((history, report)) => {
                let words = history.as_ref().map_or(0, History::words);
                if let Some(h) = history {
                    engine.adopt_history(h);
                }
                for e in early {
                    match e {
                        Early::Learn(text) => engine.learn(&text),
                        Early::Accepted(buffer, text) => engine.accepted(buffer, &text),
                        Early::Forget(word) => engine.forget_learnt(word.as_deref()),
                        Early::Rejection(RejectionEvent::Rejected { ctx, word }) => {
                            engine.learn_rejections(&ctx, &word, 1)
                        }
                        Early::Rejection(RejectionEvent::Written { ctx, word }) => {
                            engine.take_back_rejections(&ctx, &word)
                        }
                        Early::Rates(m) => engine.add_rates(&m),
                    }
                }
                let ms = t0.elapsed().as_secs_f64() * 1e3;
                info!(
                    "personal store loaded in {ms:.1} ms: {words} words, {} bytes",
                    report.bytes
                );
                if let Some(m) = &report.set_aside {
                    warn!("{m}");
                }
                let mut s = self.lock_status();
                s.load_ms = ms;
                s.error = report.set_aside;
            }
            Err(e) => {
                warn!(
                    "cannot read the personal store {}: {e}",
                    store.path().display()
                );
                self.lock_status().error = Some(format!("cannot read: {e}"));
            }
        }
        self.refresh(engine);
    }

    /// The user accepted `text`: the engine learns it (and, while the store
    /// is loading, it is kept to be learnt again on the adopted history).
    pub fn accepted(&mut self, engine: &mut Engine, buffer: u64, text: &str) {
        engine.accepted(buffer, text);
        if let Some((_, _, early)) = &mut self.loading {
            early.push(Early::Accepted(buffer, text.to_string()));
        }
    }

    /// After a keystroke: what the user rejected joins what the store is
    /// to keep, and what the user wrote where it was rejected leaves it
    /// (also from the store on disk, at the next save). The engine only
    /// reports it from buffers that may teach the user's history
    /// (`Request::learn`).
    pub fn rejections(&mut self, engine: &mut Engine) {
        for e in engine.take_rejections() {
            match &e {
                RejectionEvent::Rejected { ctx, word } => {
                    self.pending.add_rejection(ctx, word, now());
                }
                RejectionEvent::Written { ctx, word } => {
                    let r: Rejection = (ctx.as_str().into(), word.as_str().into());
                    self.pending.take_back(std::slice::from_ref(&r));
                    self.taken_back.push(r);
                }
            }
            if let Some((_, _, early)) = &mut self.loading {
                early.push(Early::Rejection(e));
            }
        }
        // Checked after every keystroke: a figure kept up to date, no lock
        // unless it changed.
        let shown = engine.rejections_remembered().map(|n| n as u64);
        if shown != self.rejections_shown {
            self.rejections_shown = shown;
            self.lock_status().rejections = shown;
        }
    }

    fn lock_status(&self) -> std::sync::MutexGuard<'_, LearnStatus> {
        self.status.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Learns `text` (from the file at `path`, if any), except secret files
    /// and lines that look like secrets.
    pub fn learn(&mut self, engine: &mut Engine, text: &str, path: &str) {
        if !path.is_empty() && is_secret_path(path) {
            return;
        }
        let text = without_secret_lines(text);
        engine.learn(&text);
        if self.store.is_some() {
            self.pending.add_text(&text, now());
        }
        if let RatesThread::NotStarted = self.rates {
            self.rates = RatesThread::Started(engine.rates_worker());
        }
        if let RatesThread::Started(Some(w)) = &self.rates {
            if !w.post(&text) {
                log::debug!(
                    "{} bytes learnt as words and pairs only: too much text waits to be measured",
                    text.len()
                );
            }
        }
        if let Some((_, _, early)) = &mut self.loading {
            early.push(Early::Learn(text));
        }
        self.refresh(engine);
    }

    /// Measured rates join the engine's, the store's, and what the loading
    /// store is to replay.
    fn add_rates(&mut self, engine: &mut Engine, m: RateCounts) {
        engine.add_rates(&m);
        if self.store.is_some() {
            for (t, c, e) in engine.rate_entries(&m) {
                self.pending.add_rate(&t, c, e);
            }
        }
        if let Some((_, _, early)) = &mut self.loading {
            early.push(Early::Rates(m));
        }
    }

    /// Waits until every learnt text is measured, and adopts the results
    /// (tests; the host never waits for them).
    pub fn settle_rates(&mut self, engine: &mut Engine) {
        if let RatesThread::Started(Some(w)) = &self.rates {
            if let Some(m) = w.wait() {
                self.add_rates(engine, m);
            }
        }
    }

    /// Forgets `word` (or everything learnt when `None`), in memory and,
    /// at the next save, in the store.
    pub fn forget(&mut self, engine: &mut Engine, word: Option<&str>) {
        // Text still being measured may hold what is forgotten: its rates go.
        if let RatesThread::Started(Some(w)) = &self.rates {
            w.discard();
        }
        engine.forget_learnt(word);
        if let Some((_, _, early)) = &mut self.loading {
            early.push(Early::Forget(word.map(str::to_string)));
        }
        match word {
            None => {
                self.pending = Learnt::default();
                self.taken_back.clear();
                self.forget = Forget::All;
            }
            Some(w) => {
                self.pending.forget_word(w);
                match &mut self.forget {
                    Forget::All => {}
                    Forget::Words(ws) => ws.push(w.to_string()),
                    f @ Forget::Nothing => *f = Forget::Words(vec![w.to_string()]),
                }
            }
        }
        // Forgetting is saved at once: the user asked for it.
        self.last_save = Instant::now() - SAVE_EVERY;
        self.refresh(engine);
    }

    fn refresh(&mut self, engine: &Engine) {
        self.rejections_shown = engine.rejections_remembered().map(|n| n as u64);
        let mut s = self.lock_status();
        s.words = engine.learnt_words() as u64;
        s.rejections = self.rejections_shown;
        s.rated_tokens = engine.rated_tokens();
        s.measuring_bytes = match &self.rates {
            RatesThread::Started(Some(w)) => w.waiting_bytes() as u64,
            _ => 0,
        };
        if let Some(store) = &self.store {
            let (bytes, dir_mode, file_mode) = store.describe();
            s.path = Some(store.path());
            s.bytes = bytes.unwrap_or(0);
            s.dir_mode = dir_mode;
            s.file_mode = file_mode;
        }
    }

    /// Hands what was learnt to a saving thread when it is time (and the
    /// previous save is done).
    pub fn maybe_save(&mut self) {
        let due = self.last_save.elapsed() >= SAVE_EVERY;
        let busy = self.saver.as_ref().is_some_and(|h| !h.is_finished());
        if !due || busy || !self.has_news() {
            return;
        }
        let Some(store) = self.store.clone() else {
            return;
        };
        let (pending, forget, taken_back) = self.take();
        let status = self.status.clone();
        self.last_save = Instant::now();
        let spawned = std::thread::Builder::new()
            .name("laya-save".into())
            .spawn(move || save(&store, &pending, &forget, &taken_back, &status));
        match spawned {
            Ok(h) => self.saver = Some(h),
            Err(e) => warn!("cannot start saving the personal store: {e}"),
        }
    }

    /// How long until a save is due (at least a little, so a waiting
    /// loop never spins while a save is in progress).
    pub fn until_due(&self) -> Duration {
        SAVE_EVERY
            .saturating_sub(self.last_save.elapsed())
            .max(Duration::from_millis(50))
    }

    /// Whether learnt text is still being measured (its rates are to be
    /// polled for and saved).
    pub fn measuring(&self) -> bool {
        matches!(&self.rates, RatesThread::Started(Some(w)) if w.busy())
    }

    pub fn has_news(&self) -> bool {
        !self.pending.is_empty() || self.forget != Forget::Nothing || !self.taken_back.is_empty()
    }

    fn take(&mut self) -> (Learnt, Forget, Vec<Rejection>) {
        (
            std::mem::take(&mut self.pending),
            std::mem::take(&mut self.forget),
            std::mem::take(&mut self.taken_back),
        )
    }

    /// At exit, or when Neovim asks before it exits: waits for a save in
    /// progress and saves the rest; then counts one more flush.
    pub fn finish(&mut self) {
        if let Some(h) = self.saver.take() {
            let _ = h.join();
        }
        if let (Some(store), true) = (self.store.clone(), self.has_news()) {
            let (pending, forget, taken_back) = self.take();
            save(&store, &pending, &forget, &taken_back, &self.status);
        }
        self.last_save = Instant::now();
        self.lock_status().flushes += 1;
    }
}

/// The history a store's bytes hold (on the loading thread): frozen
/// arrays in one pass over the bytes, or, for a store beyond the caches'
/// bounds, the caches built entry by entry.
pub fn build_history(bytes: &[u8]) -> Result<History, format::DecodeError> {
    let (words, pairs) = format::counts(bytes).unwrap_or((0, 0));
    let mut b = FrozenBuilder::with_capacity(
        words.min(bytes.len() / 10),
        pairs.min(bytes.len() / 13),
        bytes.len(),
    );
    let mut rejections = Vec::new();
    let mut rates = Vec::new();
    format::visit(bytes, |item| match item {
        format::Item::Word(w, e) => b.add_word(w, e.count),
        format::Item::Pair(order, c, w, e) => b.add_pair(order, c, w, e.count),
        format::Item::Rejection(c, w, e) => {
            rejections.push((c.to_string(), w.to_string(), e.count))
        }
        format::Item::Rate(t, r) => rates.push((t.to_string(), r)),
    })?;
    match History::frozen(b) {
        Some(mut h) => {
            for (c, w, n) in rejections {
                h.add_rejections(&c, &w, n);
            }
            for (t, r) in rates {
                h.add_rate(&t, r.count, r.expected);
            }
            Ok(h)
        }
        None => build_history_by_entry(bytes),
    }
}

/// The history a store's bytes hold, built entry by entry into the caches'
/// maps (the way of stores beyond the caches' bounds, and the reference the
/// frozen way is checked against).
pub fn build_history_by_entry(bytes: &[u8]) -> Result<History, format::DecodeError> {
    let mut h = History::default();
    format::visit(bytes, |item| match item {
        format::Item::Word(w, e) => h.add_word(w, e.count),
        format::Item::Pair(order, c, w, e) => h.add_pair(order, c, w, e.count),
        format::Item::Rejection(c, w, e) => h.add_rejections(c, w, e.count),
        format::Item::Rate(t, r) => h.add_rate(t, r.count, r.expected),
    })?;
    Ok(h)
}

fn save(
    store: &Store,
    pending: &Learnt,
    forget: &Forget,
    taken_back: &[Rejection],
    status: &Mutex<LearnStatus>,
) {
    let result = store.save(pending, forget, taken_back);
    let mut s = status.lock().unwrap_or_else(|e| e.into_inner());
    match result {
        Ok(report) => {
            if let Some(m) = report.set_aside {
                warn!("{m}");
                s.error = Some(m);
            }
            s.bytes = report.bytes as u64;
            let (_, dir_mode, file_mode) = store.describe();
            s.dir_mode = dir_mode;
            s.file_mode = file_mode;
        }
        Err(e) => {
            let m = format!(
                "cannot save the personal store {}: {e}",
                store.path().display()
            );
            warn!("{m}");
            s.error = Some(m);
        }
    }
}
