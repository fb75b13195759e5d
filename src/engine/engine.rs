//! The engine: one call per keystroke (`Engine::predict`), the per-buffer
//! state it keeps between keystrokes, and what it learns from the user.

use super::ahead_thread::{AheadJob, AheadThread};
use super::bigrams::{keys_before, BigramCache, MAX_USER_KEYS};
use super::buffer::BufferEntry;
use super::context::{Ahead, Appended, SyncCost};
use super::dist::Dist;
use super::give_way::TypedPast;
use super::kind_shares::KindShares;
use super::load;
use super::next_keys::{is_one_word, word_ending_here};
use super::options::{EngineInfo, EngineOptions};
use super::rates::{self, RateCounts, Rates, RatesWorker};
use super::rejected::{RejectionEvent, Rejections};
use super::separator;
use super::word_cache::{InVocab, WordCache, MAX_USER_WORDS};
use super::word_list::WordList;
use super::{Candidate, Prediction, Request};
use crate::model::kernels::Simd;
use crate::model::Backend;
use crate::text::hash::FastMap;
use crate::text::tokenizer::split_prefix;
use crate::text::vocab::{Vocab, UNK};
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::Instant;

/// Buffers whose context is kept (least recently used beyond it are dropped).
/// A buffer's caches at their bounds (see theirs) take about 7.5 MB with one
/// follower a pair key, so up to about 120 MB in all, more with many
/// followers; a buffer of ordinary length stays far below (`Engine::memory`).
const MAX_BUFFERS: usize = 16;

pub struct Engine {
    pub(crate) opts: EngineOptions,
    pub(crate) vocab: Option<Arc<Vocab>>,
    /// Words beyond the vocabulary (see `Tuning::word_list_share`).
    pub(crate) word_list: Option<WordList>,
    /// Where the words are written (see `Tuning::prose_weight`).
    pub(crate) kinds: Option<KindShares>,
    pub(crate) backend: Option<Box<dyn Backend>>,
    pub(crate) buffers: FastMap<u64, BufferEntry>,
    /// Words the user accepted or typed anywhere (history across buffers).
    pub(crate) user_words: WordCache,
    /// (previous word → word) pairs of the text the user accepted anywhere.
    pub(crate) user_bigrams: BigramCache,
    /// Words the user typed past after a context (`rejected`).
    pub(crate) rejections: Rejections,
    /// What was rejected since the host last took it (`keep_rejections`).
    pub(crate) rejection_log: Option<Vec<RejectionEvent>>,
    clock: u64,
    info: EngineInfo,
    errors: u64,
    last_cost: SyncCost,
    pub(crate) scratch_logits: Vec<f32>,
    scratch_pointer: Vec<(u32, f32)>,
    pub(crate) scratch_state: Vec<f32>,
    pub(crate) simd: Simd,
    /// The think-ahead thread (`EngineOptions::think_ahead`).
    pub(crate) ahead: Option<AheadThread>,
    serials: u64,
    /// How much more or less often the user writes each token than the
    /// model expects (`rates`).
    pub(crate) rates: Rates,
}

impl Engine {
    /// Builds the engine; a model that cannot be loaded leaves the non-neural
    /// sources working and is reported in `info().model_error`.
    pub fn new(opts: EngineOptions) -> Engine {
        let t0 = Instant::now();
        let mut info = EngineInfo {
            backend: "none".into(),
            ..EngineInfo::default()
        };
        let loaded = load::load(&opts, &mut info);
        let simd = Simd::detect();
        let ahead = match (&loaded.backend, &loaded.vocab) {
            (Some(b), Some(v)) if opts.think_ahead => b
                .fork()
                .and_then(|f| AheadThread::start(f, v.clone(), simd)),
            _ => None,
        };
        if ahead.is_some() {
            info.device.push_str(" + a helper thread");
        }
        let mut engine = Engine {
            opts,
            vocab: loaded.vocab,
            word_list: loaded.word_list,
            kinds: loaded.kinds,
            backend: loaded.backend,
            buffers: FastMap::default(),
            user_words: WordCache::with_limit(MAX_USER_WORDS),
            user_bigrams: BigramCache::with_limit(MAX_USER_KEYS),
            rejections: Rejections::default(),
            rejection_log: None,
            clock: 0,
            info,
            errors: 0,
            last_cost: SyncCost::default(),
            scratch_logits: Vec::new(),
            scratch_pointer: Vec::new(),
            scratch_state: Vec::new(),
            simd,
            ahead,
            serials: 0,
            rates: Rates::default(),
        };
        engine.warm_up();
        engine.info.load_ms = t0.elapsed().as_secs_f64() * 1e3;
        engine
    }

    /// One prediction on a scratch buffer, so first-use costs (page faults,
    /// kernel compilation on GPU backends) are paid before the first keystroke.
    fn warm_up(&mut self) {
        let scratch = u64::MAX;
        let req = Request {
            buffer: scratch,
            before: "The quick brown fox jumps over the lazy dog.\nfn main() {\n    let x",
            filetype: "",
            kind: Default::default(),
            k: 3,
            seen_last: false,
            learn: false,
        };
        self.predict(&req);
        self.forget(scratch);
        self.errors = 0;
    }

    pub fn info(&self) -> EngineInfo {
        self.info.clone()
    }

    /// Internal failures recovered from (a backend error falls back to non-neural answers).
    pub fn errors(&self) -> u64 {
        self.errors
    }

    /// What the last `predict` cost in model work.
    pub fn last_cost(&self) -> SyncCost {
        self.last_cost
    }

    /// The buffer was closed: drop its cached context.
    pub fn forget(&mut self, buffer: u64) {
        self.buffers.remove(&buffer);
    }

    /// The user accepted `text` (feedback): its words join the user's history.
    pub fn accepted(&mut self, buffer: u64, text: &str) {
        let _ = buffer;
        self.learn(text);
    }

    /// Earlier writing of the user (a saved buffer, a project file): its
    /// words and word pairs join the user's history, which no `forget` of a
    /// buffer clears.
    pub fn learn(&mut self, text: &str) {
        for t in crate::text::tokenizer::tokenize(text) {
            if t.kind == crate::text::tokenizer::TokenKind::Word {
                let in_vocab = match self.vocab.as_ref().map(|v| v.word_id(t.text)) {
                    Some(Some(id)) => InVocab::Id(id),
                    Some(None) => InVocab::Oov,
                    None => InVocab::Unknown,
                };
                self.user_words.add_undoable(t.text, in_vocab);
                for k in keys_before(&text[..t.start]).into_iter().flatten() {
                    self.user_bigrams.add(k, t.text);
                }
            }
        }
        // A large text (a project learnt) would leave its words and pairs
        // in the maps at four times the bytes of the frozen arrays.
        self.user_words.compact_if_large();
        self.user_bigrams.compact_if_large();
    }

    /// Measures `text` at once for the user's rates (`rates`; `laya
    /// protocol` and `laya eval`, which the host matches once its thread,
    /// `rates_worker`, is done).
    pub fn learn_rates(&mut self, text: &str) {
        if self.opts.tuning.user_rates <= 0.0 {
            return;
        }
        let (Some(backend), Some(vocab)) = (self.backend.as_mut(), self.vocab.as_ref()) else {
            return;
        };
        match rates::measure(&mut **backend, vocab, self.simd, text) {
            Ok(m) => self.add_rates(&m),
            Err(e) => log::warn!("measuring learnt text failed: {e:#}"),
        }
    }

    /// A thread that measures learnt text on a backend of its own, for a
    /// host that must not wait (None: rates are off, or there is no model):
    /// the engine's backend forked, or (MLX, which does not fork) the same
    /// weights loaded on the cpu backend by the thread itself.
    pub fn rates_worker(&self) -> Option<RatesWorker> {
        if self.opts.tuning.user_rates <= 0.0 {
            return None;
        }
        let (Some(backend), Some(vocab)) = (self.backend.as_ref(), self.vocab.as_ref()) else {
            return None;
        };
        let forked = backend.fork();
        let (path, v) = (self.info.model_path.clone(), vocab.clone());
        let make = move || {
            forked.or_else(|| {
                let loaded = crate::model::load_backend(
                    path.as_ref()?,
                    &v,
                    crate::model::BackendChoice::Cpu,
                    None,
                );
                loaded
                    .map_err(|e| log::warn!("no backend to measure learnt text: {e:#}"))
                    .ok()
            })
        };
        RatesWorker::start(make, vocab.clone(), self.simd)
    }

    /// Measured counts join the user's rates (unless rates are off: a
    /// store's counts then change nothing, and cost nothing).
    pub fn add_rates(&mut self, m: &RateCounts) {
        let t = &self.opts.tuning;
        if t.user_rates > 0.0 {
            self.rates.add(m, t.user_rates, t.user_rates_cap);
        }
    }

    /// Tokens of learnt text the user's rates were measured on (None: rates
    /// are off).
    pub fn rated_tokens(&self) -> Option<u64> {
        (self.opts.tuning.user_rates > 0.0).then(|| self.rates.tokens())
    }

    /// The factor the user's rates give `token`'s probability (None:
    /// nothing measured, or not a token of the vocabulary).
    pub fn user_rate(&self, token: &str) -> Option<f32> {
        let id = self.vocab.as_ref()?.word_id(token)?;
        self.rates.factors()?.get(id as usize).copied()
    }

    /// `m`'s tokens worth storing, by text: (token, count, expected).
    pub fn rate_entries(&self, m: &RateCounts) -> Vec<(String, f32, f32)> {
        let Some(vocab) = &self.vocab else {
            return Vec::new();
        };
        m.entries()
            .filter(|(id, _, _)| (*id as usize) < vocab.len())
            .map(|(id, c, e)| (vocab.text(id).to_string(), c, e))
            .collect()
    }

    /// Stored counts by token text (`rate_entries`) as counts by id.
    pub fn rate_counts<'a>(
        &self,
        entries: impl Iterator<Item = (&'a str, f32, f32)>,
    ) -> RateCounts {
        let mut m = RateCounts::default();
        if let Some(vocab) = &self.vocab {
            for (text, c, e) in entries {
                if let Some(id) = vocab.word_id(text) {
                    m.add_token(id, c, e, vocab.len());
                }
            }
        }
        m
    }

    /// One keystroke: the text before the cursor → candidates and ghost text.
    pub fn predict(&mut self, req: &Request) -> Prediction {
        let entry = self.take_entry(req.buffer);
        self.keeping_entry(req.buffer, entry, |engine, entry| {
            engine.predict_in(entry, req)
        })
    }

    /// Runs `f` on a buffer's entry taken out of the map and puts the entry
    /// back even when `f` panics: then with its token cache and what was
    /// derived from it dropped (the panic may have left them half-updated;
    /// the next keystroke re-reads its context), keeping the words learnt.
    pub(crate) fn keeping_entry<T>(
        &mut self,
        buffer: u64,
        mut entry: BufferEntry,
        f: impl FnOnce(&mut Engine, &mut BufferEntry) -> T,
    ) -> T {
        let result = catch_unwind(AssertUnwindSafe(|| f(self, &mut entry)));
        if result.is_err() {
            entry.recover();
        }
        self.buffers.insert(buffer, entry);
        result.unwrap_or_else(|p| resume_unwind(p))
    }

    fn predict_in(&mut self, entry: &mut BufferEntry, req: &Request) -> Prediction {
        let (context, prefix) = split_prefix(req.before);
        // At least the ghost text's candidate; a huge k would size the
        // candidate pools by it.
        let k = req.k.clamp(1, super::MAX_CANDIDATES);
        // The context's tokens and model state, and the model's distribution there.
        let neural = self.update_context(entry, context);
        entry.kind = self.kind_at_cursor(entry, req.kind);
        // The top candidates of this word the user saw and typed past (and
        // of the word just ended, rejected if it ended otherwise).
        let passed = self.words_typed_past(entry, prefix, req.seen_last);
        let tops = self.tops_typed_past(entry, context, prefix, req.seen_last, req.learn);
        // Candidate sources → mixer (with case) → give-way.
        let (mut ranked, likeliest) = self.rank_giving_way(entry, prefix, k, &passed);
        // Spelling corrections when no known word fits.
        self.offer_corrections(entry, prefix, k, &mut ranked);
        // Ghost text and its continuation.
        let ghost = self.ghost(entry, prefix, &ranked.candidates);
        let mut pred = Prediction {
            prefix: prefix.to_string(),
            candidates: ranked.candidates,
            ghost,
        };
        // A next word brings the space it needs after `)`, `=`, `,` ….
        if prefix.is_empty() {
            separator::add(&mut pred, separator::before_word(context, req.kind));
        }
        // For the next keystroke: what may give way, what to think ahead over.
        entry.typed_past = Some(TypedPast::after(entry, &pred, passed, tops));
        entry.best = self.word_to_think_over(entry, prefix, likeliest.as_ref(), &pred, neural);
        pred
    }

    /// The buffer's entry (a new one for a buffer not seen or dropped),
    /// marked as used now.
    fn take_entry(&mut self, buffer: u64) -> BufferEntry {
        self.clock += 1;
        self.evict_if_full(buffer);
        let serials = &mut self.serials;
        let mut entry = self.buffers.remove(&buffer).unwrap_or_else(|| {
            *serials += 1;
            BufferEntry::new(*serials)
        });
        entry.ctx.last_used = self.clock;
        entry
    }

    /// Brings the buffer's context (tokens, model states) to `context`,
    /// with what the think-ahead thread stepped if its tokens are the ones
    /// typed, and computes the model's distribution there. False when there
    /// was no model to begin with.
    fn update_context(&mut self, entry: &mut BufferEntry, context: &str) -> bool {
        // The thread's work from this context (see `think_ahead`): the steps
        // it took spare `sync` those steps if their tokens are the ones typed.
        let job = self
            .ahead
            .as_ref()
            .and_then(AheadThread::current)
            .filter(|j| {
                j.serial == entry.serial && j.version == entry.ctx.version && j.tokens.len() == 1
            });
        let then = job.as_ref().and_then(|j| j.next());
        if let Some((j, state)) = job.as_ref().and_then(|j| Some((j, j.stepped()?))) {
            let mut steps = vec![(j.tokens[0], state)];
            if let Some((j, state)) = then.as_ref().and_then(|j| Some((j, j.stepped()?))) {
                steps.push((j.tokens[1], state));
            }
            entry.ctx.ahead = Some(Ahead {
                version: entry.ctx.version,
                steps,
            });
        }
        let model: Option<(&mut dyn Backend, &Vocab)> = match (&mut self.backend, &self.vocab) {
            (Some(b), Some(v)) => Some((&mut **b, &**v)),
            _ => None,
        };
        let neural = model.is_some();
        let reread = self.opts.tuning.reread as usize;
        self.last_cost = match entry
            .ctx
            .sync(context, self.vocab.as_deref(), model, reread)
        {
            Ok(c) => c,
            Err(e) => {
                self.model_failed(e);
                entry
                    .ctx
                    .sync(context, self.vocab.as_deref(), None, reread)
                    .unwrap_or_default()
            }
        };
        // The thread's output layer for exactly the state reached now, if any.
        let job = match self.last_cost.appended {
            Some((v, Appended::One(a))) => job.filter(|j| j.version == v && j.tokens == [a]),
            Some((v, Appended::Two(a, b))) => then.filter(|j| j.version == v && j.tokens == [a, b]),
            None => None,
        };
        if neural && self.backend.is_some() {
            self.ensure_dist(entry, job);
        }
        neural
    }

    /// The word the think-ahead thread steps over after this answer: the
    /// likeliest word even when it gave way (a word typed past is often
    /// finished all the same, in Neovim by a user who was not reading, in
    /// ksr.py's comp@c probes after the METRICS.md user accepted it).
    fn word_to_think_over(
        &self,
        entry: &BufferEntry,
        prefix: &str,
        likeliest: Option<&Candidate>,
        pred: &Prediction,
        neural: bool,
    ) -> Option<(u64, u32)> {
        let likeliest = likeliest.or(pred.candidates.first());
        match (&self.vocab, likeliest) {
            (Some(v), Some(c)) if neural && c.replace == 0 && is_one_word(&c.word) => {
                let id = v.word_id(&c.word).unwrap_or(UNK);
                Some((entry.ctx.version, word_ending_here(entry, v, prefix, id)))
            }
            _ => None,
        }
    }

    fn evict_if_full(&mut self, keep: u64) {
        if self.buffers.len() < MAX_BUFFERS || self.buffers.contains_key(&keep) {
            return;
        }
        if let Some(oldest) = self
            .buffers
            .iter()
            .min_by_key(|(_, e)| e.ctx.last_used)
            .map(|(b, _)| *b)
        {
            self.buffers.remove(&oldest);
        }
    }

    /// A backend error: count it and continue without the model (one clear message).
    fn model_failed(&mut self, e: anyhow::Error) {
        self.errors += 1;
        log::error!("model backend failed, continuing without it: {e:#}");
        self.info.model_error = Some(super::LoadError::BackendFailed(format!("{e:#}")));
        self.info.backend = "none".into();
        self.backend = None;
        self.ahead = None;
        for entry in self.buffers.values_mut() {
            entry.dist = None;
        }
    }

    /// Computes the model's distribution at the buffer's context unless
    /// cached: with the helper thread's `job` for this very state if given
    /// (what it computed ahead), else with the helper's help if there is one.
    fn ensure_dist(&mut self, entry: &mut BufferEntry, job: Option<Arc<AheadJob>>) {
        if entry
            .dist
            .as_ref()
            .is_some_and(|d| d.version == entry.ctx.version)
        {
            return;
        }
        let (Some(backend), Some(vocab)) = (&mut self.backend, &self.vocab) else {
            return;
        };
        let hidden = backend.hidden_dim();
        let state = entry.ctx.state(hidden);
        // The helper shares the output layer with a backend of one thread;
        // one of two shares it with its own partner, which is quicker to
        // wake (and two helpers on the second core would take turns).
        let shares_itself = backend.threads() >= 2;
        let job = job.or_else(|| {
            let helper = self.ahead.as_ref().filter(|_| !shares_itself)?;
            let job = AheadJob::new(
                entry.serial,
                entry.ctx.version,
                Vec::new(),
                state.to_vec(),
                backend.vocab_size(),
                self.rates.shared(),
            );
            helper.post(job.clone());
            Some(job)
        });
        let mut dist = entry.dist.take().unwrap_or_else(Dist::empty);
        let done = match job {
            Some(job) => job.complete(&mut **backend, state, &mut dist, self.simd, vocab),
            None => {
                dist.probs.resize(backend.vocab_size(), 0.0);
                let r = backend.logits(state, &mut dist.probs);
                if r.is_ok() {
                    dist.finish(self.simd, vocab, false, self.rates.factors());
                }
                r
            }
        };
        if let Err(e) = done {
            self.model_failed(e);
            return;
        }
        let t = &self.opts.tuning;
        dist.pointer_oov.clear();
        if t.pointer > 0.0 {
            entry.ctx.pointer(
                self.simd,
                hidden,
                (t.pointer_theta, t.pointer_memory as usize),
                &mut self.scratch_pointer,
                &mut dist.pointer_oov,
            );
            dist.mix(&self.scratch_pointer, t.pointer, vocab);
        }
        dist.version = entry.ctx.version;
        entry.dist = Some(dist);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn inserts(e: &mut Engine, before: &str) -> Vec<String> {
        let req = Request {
            buffer: 1,
            before,
            filetype: "",
            kind: Default::default(),
            k: 3,
            seen_last: false,
            learn: false,
        };
        e.predict(&req)
            .candidates
            .into_iter()
            .map(|c| c.insert)
            .collect()
    }

    #[test]
    fn a_panic_keeps_the_buffers_words() {
        let mut e = Engine::new(EngineOptions {
            model_path: Some(PathBuf::from("/nonexistent/laya-test.safetensors")),
            ..EngineOptions::default()
        });
        let text = "zygote zymurgy zygote\nthe zy";
        assert_eq!(
            inserts(&mut e, text).first().map(String::as_str),
            Some("gote")
        );
        let entry = e.buffers.remove(&1).unwrap();
        let quiet = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        let failed = catch_unwind(AssertUnwindSafe(|| {
            e.keeping_entry(1, entry, |_, _| -> () { panic!("a keystroke failed") })
        }));
        std::panic::set_hook(quiet);
        assert!(failed.is_err());
        // A cursor jump to elsewhere in the buffer: only the learnt words can tell.
        assert_eq!(
            inserts(&mut e, "zy").first().map(String::as_str),
            Some("gote")
        );
    }
}
