//! A front end's side of personal learning (the Neovim host's and `laya
//! lsp`'s): text the editor hands over is learnt by the engine at once (in
//! memory) and counted for the personal store, which a helper thread
//! updates every few seconds and once more at exit, so the disk is never on
//! a keystroke's path. Learnt text never enters the log.

use crate::engine::Engine;
use crate::learn::privacy::{is_secret_path, without_secret_lines};
use crate::learn::store::{Forget, Store};
use crate::learn::{now, Learnt};
use log::{info, warn};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long learnt text may wait in memory before it is saved.
const SAVE_EVERY: Duration = Duration::from_secs(3);

/// What `status` shows of the store.
#[derive(Debug, Clone, Default)]
pub struct LearnStatus {
    pub path: Option<PathBuf>,
    pub bytes: u64,
    pub dir_mode: Option<u32>,
    pub file_mode: Option<u32>,
    /// Distinct words the engine has learnt (store + this session).
    pub words: u64,
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
    last_save: Instant,
    saver: Option<JoinHandle<()>>,
    pub status: Arc<Mutex<LearnStatus>>,
}

impl Learning {
    pub fn new(store: Option<Store>, status: Arc<Mutex<LearnStatus>>) -> Learning {
        Learning {
            store: store.map(Arc::new),
            pending: Learnt::default(),
            forget: Forget::Nothing,
            last_save: Instant::now(),
            saver: None,
            status,
        }
    }

    /// Loads the store into the engine (at start, before any keystroke).
    pub fn load(&mut self, engine: &mut Engine) {
        let Some(store) = self.store.clone() else {
            return;
        };
        let t0 = Instant::now();
        match store.load() {
            Ok((l, report)) => {
                engine.learn_counts(
                    l.words.iter().map(|(w, e)| (&**w, e.count)),
                    l.pairs
                        .iter()
                        .map(|((o, c, w), e)| (*o, &**c, &**w, e.count)),
                );
                let ms = t0.elapsed().as_secs_f64() * 1e3;
                info!(
                    "personal store loaded in {ms:.1} ms: {} words, {} pairs, {} bytes",
                    report.words, report.pairs, report.bytes
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
        self.refresh(engine);
    }

    /// Forgets `word` (or everything learnt when `None`), in memory and,
    /// at the next save, in the store.
    pub fn forget(&mut self, engine: &mut Engine, word: Option<&str>) {
        engine.forget_learnt(word);
        match word {
            None => {
                self.pending = Learnt::default();
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

    fn refresh(&self, engine: &Engine) {
        let mut s = self.lock_status();
        s.words = engine.learnt_words() as u64;
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
        let (pending, forget) = self.take();
        let status = self.status.clone();
        self.last_save = Instant::now();
        let spawned = std::thread::Builder::new()
            .name("laya-save".into())
            .spawn(move || save(&store, &pending, &forget, &status));
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

    pub fn has_news(&self) -> bool {
        !self.pending.is_empty() || self.forget != Forget::Nothing
    }

    fn take(&mut self) -> (Learnt, Forget) {
        (
            std::mem::take(&mut self.pending),
            std::mem::take(&mut self.forget),
        )
    }

    /// At exit, or when Neovim asks before it exits: waits for a save in
    /// progress and saves the rest; then counts one more flush.
    pub fn finish(&mut self) {
        if let Some(h) = self.saver.take() {
            let _ = h.join();
        }
        if let (Some(store), true) = (self.store.clone(), self.has_news()) {
            let (pending, forget) = self.take();
            save(&store, &pending, &forget, &self.status);
        }
        self.last_save = Instant::now();
        self.lock_status().flushes += 1;
    }
}

fn save(store: &Store, pending: &Learnt, forget: &Forget, status: &Mutex<LearnStatus>) {
    let result = store.save(pending, forget);
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
