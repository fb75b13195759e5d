//! The engine: per-buffer context caches, the model's distribution at the
//! cursor, and the merge of model, buffer-word and word-list candidates (the
//! vocabulary's and the list beyond it) into one ranking, the ghost text and
//! its confidence gate.

use super::bigrams::{keys_before, BigramCache};
use super::case::{adapted_rest, case_agreement};
use super::context::{Ahead, Appended, BufferContext, SyncCost};
use super::corrections;
use super::dist::Dist;
use super::helper::{Helper, Job};
use super::lexicon::{self, Lexicon};
use super::words::WordCache;
use super::{Candidate, Prediction, Request, Source};
use crate::math::{argmax, push_top};
use crate::model::{self, Backend};
use crate::text::hash::{FastMap, FastSet};
use crate::text::tokenizer::split_prefix;
use crate::text::vocab::{Vocab, UNK};
use std::borrow::Cow;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

/// The ranking's constants (see `Tuning::default` for the values and why).
#[derive(Debug, Clone, PartialEq)]
pub struct Tuning {
    /// Weight of the model in the interpolation with the cache model.
    pub lambda_model: f32,
    /// Weight of the word list when there is no model (the rest is buffer words).
    pub lambda_words: f32,
    /// Within the cache model: this buffer's words vs the user's words from everywhere.
    pub buffer_share: f32,
    /// Ranking favours longer completions by (rest length - 1)^length_weight.
    pub length_weight: f32,
    /// Part of the model's `<unk>` probability given to the buffer's
    /// out-of-vocabulary words (the rest: words never seen before).
    pub oov_share: f32,
    /// Most weight of the bigram cache (words that followed the same previous
    /// word earlier), reached when that word has much history.
    pub lambda_bigram: f32,
    /// The bigram weight is lambda_bigram * n / (n + bigram_conf) after n
    /// occurrences of the previous word (little history, little trust).
    pub bigram_conf: f32,
    /// The same for the two previous words (a longer, rarer context).
    pub lambda_trigram: f32,
    /// Weight of the neural cache (a pointer over the cached context's
    /// states) mixed into the model's distribution.
    pub pointer: f32,
    /// Sharpness of the neural cache's similarity softmax.
    pub pointer_theta: f32,
    /// How many recent model states the neural cache compares (at most the
    /// 255 the context keeps).
    pub pointer_memory: f32,
    /// Part of the model's `<unk>` probability given to the word list beyond
    /// the vocabulary (`<stem>.words.txt`): a listed word gets
    /// lexicon_share * p(<unk>) * count / total. 0 turns the list off.
    pub lexicon_share: f32,
    /// Typed characters of a word before listed words are proposed (fewer
    /// match too many words to guess right).
    pub lexicon_chars: f32,
    /// What happens to a top candidate the user typed past (kept typing
    /// the same word instead of accepting it): 0 = nothing, 1 = left out
    /// for the rest of that word, 2 = moved to the menu's last entry.
    pub typed_past: f32,
}

impl Default for Tuning {
    fn default() -> Self {
        // Chosen on a development split (valid documents, not the held-out
        // files): KSR@1 moves by tenths of a point across the plausible range.
        Tuning {
            lambda_model: 0.85,
            lambda_words: 0.35,
            buffer_share: 0.8,
            length_weight: 0.5,
            oov_share: 0.1,
            // Bigram/trigram weights: dev KSR@1 +1.5 prose, +2.0 code over
            // none; flat (±0.1) across 0.2-0.5 and conf 0.5-5.
            lambda_bigram: 0.2,
            bigram_conf: 0.5,
            lambda_trigram: 0.35,
            // Neural cache: dev KSR@1 +0.1 prose, +0.2 code, next-word top-1
            // +0.5 / +0.4 over none; flat across 0.1-0.2 and theta 10-20.
            pointer: 0.1,
            pointer_theta: 10.0,
            pointer_memory: 128.0,
            // Word list beyond the vocabulary: dev KSR@1 +0.6 prose, +0.7
            // code over none; flat (within 0.03 point) across shares
            // 0.25-4 and 2 or 3 typed characters.
            lexicon_share: 0.5,
            lexicon_chars: 2.0,
            typed_past: 2.0,
        }
    }
}

impl Tuning {
    /// Applies "key=value,key=value" (benchmarks and tuning runs).
    pub fn set(&mut self, spec: &str) -> Result<(), String> {
        for kv in spec.split(',').filter(|s| !s.is_empty()) {
            let (k, v) = kv
                .split_once('=')
                .ok_or(format!("{kv:?}: expected key=value"))?;
            let v: f32 = v.parse().map_err(|_| format!("{kv:?}: not a number"))?;
            match k {
                "lambda_model" => self.lambda_model = v,
                "lambda_words" => self.lambda_words = v,
                "buffer_share" => self.buffer_share = v,
                "length_weight" => self.length_weight = v,
                "oov_share" => self.oov_share = v,
                "lambda_bigram" => self.lambda_bigram = v,
                "bigram_conf" => self.bigram_conf = v,
                "lambda_trigram" => self.lambda_trigram = v,
                "pointer" => self.pointer = v,
                "pointer_theta" => self.pointer_theta = v,
                "pointer_memory" => self.pointer_memory = v,
                "lexicon_share" => self.lexicon_share = v,
                "lexicon_chars" => self.lexicon_chars = v,
                "typed_past" => self.typed_past = v,
                _ => return Err(format!("unknown tuning key {k:?}")),
            }
        }
        Ok(())
    }
}
/// Ghost text is shown when the top candidate's probability reaches this.
pub const DEFAULT_THRESHOLD: f32 = 0.3;
/// Further ghost words are added while the model gives the next word at least this.
const CONTINUE_THRESHOLD: f32 = 0.5;
/// Tokens (the most frequent) scored first when testing whether a ghost
/// continuation is confident. Frequent tokens are the usual continuations; a
/// rare one that would be confident on its own is missed (a shorter ghost).
const FREQUENT_ROWS: usize = 2048;
/// Buffers whose context is kept (least recently used beyond it are dropped).
const MAX_BUFFERS: usize = 16;
/// Words ranked to find the likeliest next keys (`Engine::next_keys`).
const NEXT_KEY_WORDS: usize = 32;
/// Listed words (beyond the vocabulary) of a prefix that join the ranking:
/// the most frequent few.
const LISTED_WORDS: usize = 4;

/// How to build an engine. `Default` = the default model, backend "auto".
#[derive(Debug, Clone)]
pub struct EngineOptions {
    /// Weights file (`<stem>.safetensors`, vocabulary beside it as
    /// `<stem>.vocab.txt`); None = the default model (see `model::default_model_path`).
    pub model_path: Option<PathBuf>,
    /// "auto" | "cpu" | "mlx".
    pub backend: String,
    /// Ghost-text confidence threshold in [0, 1]; None = DEFAULT_THRESHOLD.
    pub threshold: Option<f32>,
    /// Run the weights in another dtype than the file's ("f32" | "bf16" | "int8").
    pub dtype: Option<String>,
    /// False: no neural model, only buffer words and the word list.
    pub neural: bool,
    /// Most words of ghost text after the current one.
    pub ghost_words: usize,
    /// Also compute ghost continuations inside a word (when the top word
    /// changes); by default only at word boundaries, and reused while typing.
    pub ghost_inside_words: bool,
    /// Offer spelling corrections (candidates with `replace` > 0); callers
    /// that can only insert at the cursor turn the search off.
    pub corrections: bool,
    /// A helper thread for model work (see `Engine::think_ahead`), when the
    /// backend can share its weights with one.
    pub think_ahead: bool,
    /// Ranking constants.
    pub tuning: Tuning,
}

impl Default for EngineOptions {
    fn default() -> Self {
        EngineOptions {
            model_path: None,
            backend: "auto".into(),
            threshold: None,
            dtype: None,
            neural: true,
            ghost_words: 2,
            ghost_inside_words: false,
            corrections: true,
            think_ahead: false,
            tuning: Tuning::default(),
        }
    }
}

/// What the engine runs on (for `status`, `:checkhealth laya`, benchmarks).
#[derive(Debug, Clone, Default)]
pub struct EngineInfo {
    /// "cpu", "mlx", or "none" (non-neural fallback).
    pub backend: String,
    pub device: String,
    pub model_path: Option<PathBuf>,
    pub vocab_path: Option<PathBuf>,
    /// Weight dtype the backend runs ("f32", "bf16", "int8"; "" without model).
    pub dtype: String,
    pub vocab_size: usize,
    /// Loading plus warm-up, milliseconds.
    pub load_ms: f64,
    /// Why the neural model is not in use, when it is not.
    pub model_error: Option<String>,
    /// The word list beyond the vocabulary (`<stem>.words.txt`), when loaded.
    pub words_path: Option<PathBuf>,
    /// Words in it (0 without one).
    pub words_count: usize,
    /// Why a word list beside the model could not be used (the engine works
    /// on without it).
    pub words_error: Option<String>,
}

/// Ghost continuation computed for (context version, accepted word).
struct Continuation {
    version: u64,
    word: String,
    text: String,
}

struct BufferEntry {
    ctx: BufferContext,
    /// The last correction search, narrowed as the unknown word is typed on.
    fixes: Option<corrections::Fixes>,
    dist: Option<Dist>,
    continuation: Option<Continuation>,
    /// (context version, token) of the last prediction's best candidate word.
    best: Option<(u64, u32)>,
    /// Tells this context from earlier ones of the same buffer number (a
    /// helper job names the context it started from).
    serial: u64,
    /// Top candidates of the current word the user typed past.
    typed_past: Option<TypedPast>,
}

/// The top candidates answered while one word was typed: a candidate of two
/// or more characters that the user did not accept but typed on past is not
/// the word being typed (or the user does not want it), so the next best
/// takes its place.
struct TypedPast {
    /// Context version and typed prefix of the last answer.
    version: u64,
    prefix: String,
    /// That answer's top candidate (the whole word), if accepting it would
    /// have saved a keystroke.
    top: Option<String>,
    /// Earlier top candidates of this word the user typed past.
    words: Vec<String>,
}

pub struct Engine {
    opts: EngineOptions,
    vocab: Option<Arc<Vocab>>,
    /// Words beyond the vocabulary (see `Tuning::lexicon_share`).
    lexicon: Option<Lexicon>,
    backend: Option<Box<dyn Backend>>,
    buffers: FastMap<u64, BufferEntry>,
    /// Words the user accepted or typed anywhere (history across buffers).
    user_words: WordCache,
    /// (previous word → word) pairs of the text the user accepted anywhere.
    user_bigrams: BigramCache,
    clock: u64,
    info: EngineInfo,
    errors: u64,
    last_cost: SyncCost,
    scratch_logits: Vec<f32>,
    scratch_pointer: Vec<(u32, f32)>,
    scratch_state: Vec<f32>,
    simd: crate::model::kernels::Simd,
    helper: Option<Helper>,
    serials: u64,
}

/// One word before merging: its spelling, its model / word-list probability
/// and its cache-model probability.
struct Scored<'a> {
    word: &'a str,
    p_model: f32,
    p_cache: f32,
    from_vocab: bool,
    /// From the word list beyond the vocabulary (and nowhere else).
    listed: bool,
}

/// `rank`'s answer.
struct Ranked {
    /// The best k, best first.
    candidates: Vec<Candidate>,
    /// `listed[i]`: candidates[i] comes from the word list beyond the
    /// vocabulary alone.
    listed: Vec<bool>,
    /// Total (interpolated) probability of everything the prefix allows,
    /// the word list beyond the vocabulary left out.
    mass_known: f32,
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
        let weights = opts.model_path.clone().or_else(model::default_model_path);
        // The word list beyond the vocabulary (absent = none), read on a
        // thread of its own while the model loads: sorting 100k words is
        // the longer of the two. Its words get a share of the model's
        // `<unk>`, so without the model it would add nothing.
        let listed = weights
            .as_deref()
            .map(lexicon::path_for)
            .filter(|p| opts.neural && p.exists())
            .map(|p| std::thread::spawn(move || (Lexicon::load(&p), p)));
        let mut vocab = None;
        let mut backend = None;
        let mut lexicon = None;
        match &weights {
            None => {
                info.model_error =
                    Some("no model file found (set LAYA_MODEL or model = <path>)".into())
            }
            Some(w) => {
                let vp = model::vocab_path_for(w);
                match Vocab::load(&vp) {
                    Err(e) => info.model_error = Some(format!("{e:#}")),
                    Ok(v) => {
                        let v = Arc::new(v);
                        info.vocab_path = Some(vp);
                        info.vocab_size = v.len();
                        if opts.neural {
                            info.model_path = Some(w.clone());
                            match model::load_backend(w, &v, &opts.backend, opts.dtype.as_deref()) {
                                Ok(b) => {
                                    info.backend = b.name().into();
                                    info.device = b.device();
                                    info.dtype = b.dtype().into();
                                    backend = Some(b);
                                }
                                Err(e) => info.model_error = Some(format!("{e:#}")),
                            }
                        } else {
                            info.model_error = Some("neural model disabled".into());
                        }
                        vocab = Some(v);
                    }
                }
                // Unreadable = reported, and the engine goes on without it.
                match listed.map(|t| t.join()) {
                    Some(Ok((Ok(l), p))) if vocab.is_some() => {
                        info.words_path = Some(p);
                        info.words_count = l.len();
                        lexicon = Some(l);
                    }
                    Some(Ok((Err(e), _))) => info.words_error = Some(format!("{e:#}")),
                    Some(Err(_)) => {
                        info.words_error = Some("reading the word list panicked".into())
                    }
                    _ => {}
                }
            }
        }
        let simd = crate::model::kernels::Simd::detect();
        let helper = match (&backend, &vocab) {
            (Some(b), Some(v)) if opts.think_ahead => {
                b.fork().and_then(|f| Helper::start(f, v.clone(), simd))
            }
            _ => None,
        };
        if helper.is_some() {
            info.device.push_str(" + a helper thread");
        }
        let mut engine = Engine {
            opts,
            vocab,
            lexicon,
            backend,
            buffers: FastMap::default(),
            user_words: WordCache::with_limit(super::words::MAX_USER_WORDS),
            user_bigrams: BigramCache::with_limit(super::bigrams::MAX_USER_KEYS),
            clock: 0,
            info,
            errors: 0,
            last_cost: SyncCost::default(),
            scratch_logits: Vec::new(),
            scratch_pointer: Vec::new(),
            scratch_state: Vec::new(),
            simd,
            helper,
            serials: 0,
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
            after: "",
            filetype: "",
            k: 3,
            seen_last: false,
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
                self.user_words.add(t.text);
                for k in keys_before(&text[..t.start]).into_iter().flatten() {
                    self.user_bigrams.add(k, t.text);
                }
            }
        }
    }

    pub fn predict(&mut self, req: &Request) -> Prediction {
        self.clock += 1;
        let (context, prefix) = split_prefix(req.before);
        self.evict_if_full(req.buffer);
        let serials = &mut self.serials;
        let mut entry = self.buffers.remove(&req.buffer).unwrap_or_else(|| {
            *serials += 1;
            BufferEntry {
                ctx: BufferContext::new(),
                fixes: None,
                dist: None,
                continuation: None,
                best: None,
                serial: *serials,
                typed_past: None,
            }
        });
        entry.ctx.last_used = self.clock;
        // The helper's work from this context (see `think_ahead`): the steps
        // it took spare `sync` those steps if their tokens are the ones typed.
        let job = self.helper.as_ref().and_then(Helper::current).filter(|j| {
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
        self.last_cost = match entry.ctx.sync(context, self.vocab.as_deref(), model) {
            Ok(c) => c,
            Err(e) => {
                self.model_failed(e);
                entry
                    .ctx
                    .sync(context, self.vocab.as_deref(), None)
                    .unwrap_or_default()
            }
        };
        // The helper's output layer for exactly the state reached now, if any.
        let job = match self.last_cost.appended {
            Some((v, Appended::One(a))) => job.filter(|j| j.version == v && j.tokens == [a]),
            Some((v, Appended::Two(a, b))) => then.filter(|j| j.version == v && j.tokens == [a, b]),
            None => None,
        };
        if neural && self.backend.is_some() {
            self.ensure_dist(&mut entry, job);
        }
        let passed = self.words_typed_past(&entry, prefix, req.seen_last);
        let (pred, likeliest) = self.decide(&mut entry, prefix, req.k.max(1), &passed);
        entry.typed_past = Some(TypedPast {
            version: entry.ctx.version,
            prefix: prefix.to_string(),
            top: pred
                .candidates
                .first()
                .filter(|c| c.replace == 0 && c.insert.chars().nth(1).is_some())
                .map(|c| c.word.clone()),
            words: passed,
        });
        // Thinking ahead steps the likeliest word even when it gave way: a
        // word typed past is often finished all the same (in Neovim by a
        // user who was not reading; in ksr.py's comp@c probes after the
        // METRICS.md user accepted it).
        let likeliest = likeliest.as_ref().or(pred.candidates.first());
        entry.best = match (&self.vocab, likeliest) {
            (Some(v), Some(c)) if neural && c.replace == 0 && is_one_word(&c.word) => {
                let id = v.word_id(&c.word).unwrap_or(UNK);
                Some((entry.ctx.version, word_ending_here(&entry, v, prefix, id)))
            }
            _ => None,
        };
        self.buffers.insert(req.buffer, entry);
        pred
    }

    /// Between keystrokes: has the helper thread (`EngineOptions::think_ahead`)
    /// step the model over the last prediction's best candidate word in
    /// `buffer` and compute the output layer there, so that the keystroke
    /// after that word is completed (typed or accepted, then a blank) needs
    /// no model work. Returns at once; answers are the same with or without
    /// it, only faster when it guessed right.
    pub fn think_ahead(&mut self, buffer: u64) {
        let (Some(helper), Some(backend)) = (&self.helper, &self.backend) else {
            return;
        };
        let Some(entry) = self.buffers.get(&buffer) else {
            return;
        };
        let Some((version, token)) = entry.best.filter(|b| b.0 == entry.ctx.version) else {
            return;
        };
        let same =
            |j: &Job| j.serial == entry.serial && j.version == version && j.tokens == [token];
        if helper.current().is_some_and(|j| same(&j)) {
            return;
        }
        let start = entry.ctx.state(backend.hidden_dim()).to_vec();
        helper.post(Job::new(
            entry.serial,
            version,
            vec![token],
            start,
            backend.vocab_size(),
        ));
    }

    /// The answers `predict` would give to the likeliest next keys in
    /// `buffer`, worked out between keystrokes so that the editor can show
    /// them the moment a key is typed. `last` is the last answer for that
    /// buffer; for each of the `max_keys` likeliest characters to come
    /// after its prefix (letters, digits, `_`: keys that keep the word
    /// going), likeliest first, the prediction for the same text plus that
    /// character, as `predict` would answer it with `seen_last` false (`k`
    /// candidates). Changes nothing a later `predict` sees. `stop` is asked
    /// before each key (true: a keystroke is waiting, give up).
    pub fn next_keys(
        &mut self,
        buffer: u64,
        last: &Prediction,
        k: usize,
        max_keys: usize,
        stop: &dyn Fn() -> bool,
    ) -> Vec<(char, Prediction)> {
        let Some(mut entry) = self.buffers.remove(&buffer) else {
            return Vec::new();
        };
        // The likeliest next characters: the probability of the words of a
        // wider ranking, summed by the character each continues with.
        let mut mass: Vec<(char, f32)> = Vec::new();
        for c in self.rank(&entry, &last.prefix, NEXT_KEY_WORDS).candidates {
            let Some(ch) = c.insert.chars().next() else {
                continue;
            };
            if !(ch.is_ascii_alphanumeric() || ch == '_') {
                continue;
            }
            match mass.iter_mut().find(|m| m.0 == ch) {
                Some(m) => m.1 += c.score,
                None => mass.push((ch, c.score)),
            }
        }
        mass.sort_by(|a, b| b.1.total_cmp(&a.1));
        let keys: Vec<char> = mass.iter().take(max_keys).map(|m| m.0).collect();
        // Only from the state `last` was answered in.
        let current = entry
            .typed_past
            .as_ref()
            .is_some_and(|t| t.version == entry.ctx.version && t.prefix == last.prefix);
        let mut out = Vec::new();
        for ch in keys {
            if !current || stop() {
                break;
            }
            let prefix = format!("{}{ch}", last.prefix);
            if let Some(p) = self.next_key(&mut entry, &prefix, k.max(1)) {
                out.push((ch, p));
            }
        }
        self.buffers.insert(buffer, entry);
        out
    }

    /// Blocks until the helper thread has done the work given to it
    /// (tests and benchmarks that want it done between keystrokes).
    pub fn wait_ahead(&self) {
        if let Some(h) = &self.helper {
            h.wait();
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
        eprintln!("laya: model backend failed, continuing without it: {e:#}");
        self.info.model_error = Some(format!("backend failed: {e:#}"));
        self.info.backend = "none".into();
        self.backend = None;
        self.helper = None;
        for entry in self.buffers.values_mut() {
            entry.dist = None;
        }
    }

    /// Computes the model's distribution at the buffer's context unless
    /// cached: with the helper thread's `job` for this very state if given
    /// (what it computed ahead), else with the helper's help if there is one.
    fn ensure_dist(&mut self, entry: &mut BufferEntry, job: Option<Arc<Job>>) {
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
        let job = job.or_else(|| {
            let helper = self.helper.as_ref()?;
            let job = Job::new(
                entry.serial,
                entry.ctx.version,
                Vec::new(),
                state.to_vec(),
                backend.vocab_size(),
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
                    dist.finish(self.simd, vocab, false);
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

    /// The top candidates of the word being typed that the user saw and
    /// typed past (see `TypedPast`); empty when the word or the context
    /// changed.
    fn words_typed_past(&self, entry: &BufferEntry, prefix: &str, seen: bool) -> Vec<String> {
        let Some(t) = &entry.typed_past else {
            return Vec::new();
        };
        if self.opts.tuning.typed_past <= 0.0
            || t.version != entry.ctx.version
            || !prefix.starts_with(&t.prefix)
        {
            return Vec::new();
        }
        let mut words = t.words.clone();
        if seen && prefix.len() > t.prefix.len() {
            words.extend(
                t.top
                    .clone()
                    .filter(|w| w.starts_with(prefix) && w.len() > prefix.len()),
            );
        }
        words
    }

    /// The best `k` completing `prefix` once the words typed past
    /// (`passed`) gave way, and the ranking's first before they did (None:
    /// the same).
    fn rank_giving_way(
        &self,
        entry: &BufferEntry,
        prefix: &str,
        k: usize,
        passed: &[String],
    ) -> (Ranked, Option<Candidate>) {
        let ranked = self.rank(entry, prefix, k + passed.len());
        let likeliest = (!passed.is_empty())
            .then(|| ranked.candidates.first().cloned())
            .flatten();
        let move_last = self.opts.tuning.typed_past >= 2.0;
        (give_way(ranked, passed, k, move_last), likeliest)
    }

    fn decide(
        &mut self,
        entry: &mut BufferEntry,
        prefix: &str,
        k: usize,
        passed: &[String],
    ) -> (Prediction, Option<Candidate>) {
        let (
            Ranked {
                mut candidates,
                listed,
                mass_known,
            },
            likeliest,
        ) = self.rank_giving_way(entry, prefix, k, passed);
        if self.wants_corrections(entry, prefix, &listed, mass_known) {
            if let Some(vocab) = &self.vocab {
                let narrowed = entry.fixes.as_ref().and_then(|f| f.narrow(prefix));
                let fixes = narrowed
                    .unwrap_or_else(|| corrections::Fixes::search(prefix, vocab, &entry.ctx.words));
                let fixes_list = fixes.candidates(k);
                entry.fixes = Some(fixes);
                let fixes = fixes_list;
                // Listed words filling the menu leave its last slot to a correction.
                if !fixes.is_empty() && candidates.len() >= k && listed.last() == Some(&true) {
                    candidates.truncate(k - 1);
                }
                for c in fixes {
                    if candidates.len() < k && !candidates.iter().any(|x| x.word == c.word) {
                        candidates.push(c);
                    }
                }
            }
        }
        let ghost = self.ghost(entry, prefix, &candidates);
        let pred = Prediction {
            prefix: prefix.to_string(),
            candidates,
            ghost,
        };
        (pred, likeliest)
    }

    /// "Fits nothing well": no known word starts with the prefix (or almost
    /// no probability does) and the prefix is not itself a known word. The
    /// word list beyond the vocabulary is left out: it holds misspellings
    /// seen twice in the corpus too, and one must still get corrections.
    fn wants_corrections(
        &self,
        entry: &BufferEntry,
        prefix: &str,
        listed: &[bool],
        mass_known: f32,
    ) -> bool {
        let known = |w: &str| {
            self.vocab.as_ref().is_some_and(|v| v.word_id(w).is_some())
                || entry.ctx.words.prob(w) > 0.0
                || self.user_words.prob(w) > 0.0
        };
        self.opts.corrections
            && looks_like_a_word(prefix)
            && prefix.len() >= 3
            && (listed.iter().all(|&l| l) || mass_known < 1e-6)
            && !known(prefix)
            && !known(&prefix.to_ascii_lowercase())
    }

    /// The ghost text for `candidates` (best first) completing `prefix`:
    /// the top one's rest when it is likely enough, continued by the words
    /// the model is confident follow it.
    fn ghost(&mut self, entry: &mut BufferEntry, prefix: &str, candidates: &[Candidate]) -> String {
        let threshold = self.opts.threshold.unwrap_or(DEFAULT_THRESHOLD);
        let mut ghost = String::new();
        if let Some(top) = candidates.first() {
            if top.score >= threshold && top.replace == 0 {
                ghost.push_str(&top.insert);
                let word = top.word.clone();
                // Inside a word only a continuation computed earlier is shown:
                // computing one costs a step and an output layer, which the
                // keystroke-inside-a-word budget does not have.
                let may_compute = prefix.is_empty() || self.opts.ghost_inside_words;
                let more = self.continuation(entry, &word, may_compute);
                ghost.push_str(&more);
            }
        }
        ghost
    }

    /// What `predict` answers when one more character of the word is typed
    /// after the last request of `buffer` (`seen_last` false): the same
    /// ranking, words typed past and ghost, from the context and
    /// distribution already there. None when that answer would search for
    /// corrections (work a keystroke does, not a guess).
    fn next_key(&mut self, entry: &mut BufferEntry, prefix: &str, k: usize) -> Option<Prediction> {
        let passed = self.words_typed_past(entry, prefix, false);
        let (
            Ranked {
                candidates,
                listed,
                mass_known,
            },
            _,
        ) = self.rank_giving_way(entry, prefix, k, &passed);
        if self.wants_corrections(entry, prefix, &listed, mass_known) {
            return None;
        }
        let ghost = self.ghost(entry, prefix, &candidates);
        Some(Prediction {
            prefix: prefix.to_string(),
            candidates,
            ghost,
        })
    }

    /// Ranks words completing `prefix`: the best `k` and the total
    /// (interpolated) probability of everything the prefix allows.
    fn rank(&self, entry: &BufferEntry, prefix: &str, k: usize) -> Ranked {
        let lower = prefix.to_ascii_lowercase();
        let pool_size = k + 8;
        let dist = entry
            .dist
            .as_ref()
            .filter(|d| d.version == entry.ctx.version);
        let vocab = self.vocab.as_deref();
        let words_weight = match (dist, vocab) {
            (Some(_), _) => self.opts.tuning.lambda_model,
            (None, Some(_)) => self.opts.tuning.lambda_words,
            (None, None) => 0.0,
        };
        let zipf_norm = vocab.map_or(1.0, |v| v.zipf_norm());
        let p_vocab = |id: u32| -> f32 {
            match (dist, vocab) {
                (Some(d), _) => d.probs[id as usize],
                (None, Some(v)) => v
                    .word_rank(id)
                    .map_or(0.0, |r| zipf_norm / (r as f32 + 1.0)),
                _ => 0.0,
            }
        };

        // Vocabulary (model or word list) words: the best few of the prefix's range.
        let mut from_vocab: Vec<(u32, f32)> = Vec::with_capacity(pool_size + 1);
        let mut mass_vocab = 0.0f32;
        if let Some(v) = vocab {
            if prefix.is_empty() {
                mass_vocab = 1.0;
                match dist {
                    Some(d) => from_vocab.extend(d.top_words.iter().take(pool_size).copied()),
                    None => from_vocab.extend(
                        v.words_by_rank()
                            .take(pool_size)
                            .map(|id| (id, p_vocab(id))),
                    ),
                }
            } else {
                let range = v.prefix_range(&lower);
                let ids = v.sorted_ids();
                let by_text = dist.map_or(&[][..], |d| &d.by_text[..]);
                for i in range {
                    let id = ids[i];
                    let p = if by_text.is_empty() {
                        p_vocab(id)
                    } else {
                        by_text[i]
                    };
                    mass_vocab += p;
                    // The case factor is at most 1: a word that cannot beat
                    // the pool's last as it is would be dropped by push_top
                    // anyway (a one-letter prefix spans thousands of words).
                    if from_vocab.len() == pool_size && from_vocab.last().is_some_and(|l| l.1 >= p)
                    {
                        continue;
                    }
                    let word = v.sorted_text(i);
                    if word.len() == prefix.len() {
                        continue;
                    }
                    let s = p * case_agreement(prefix, word);
                    push_top(&mut from_vocab, (id, s), pool_size);
                }
            }
        }

        // Cache-model words (this buffer, then the user's history), each with
        // its model probability: a vocabulary word's own, an out-of-vocabulary
        // word its share of the model's `<unk>`.
        let p_unk = dist.map_or(0.0, |d| d.probs[UNK as usize]);
        let user_weight = if self.user_words.is_empty() {
            0.0
        } else {
            1.0 - self.opts.tuning.buffer_share
        };
        let buffer_weight = 1.0 - user_weight;
        let lambda = words_weight;
        let oov_share = self.opts.tuning.oov_share;
        let words = &entry.ctx.words;
        let pointed = |word: &str| -> f32 {
            dist.map_or(0.0, |d| {
                d.pointer_oov
                    .iter()
                    .find(|x| &*x.0 == word)
                    .map_or(0.0, |x| x.1)
            })
        };
        let model_part = |word: &str| -> (f32, bool) {
            match vocab.and_then(|v| v.word_id(word)) {
                Some(id) => (p_vocab(id), true),
                None => (
                    oov_share * p_unk * words.prob_oov(word) + pointed(word),
                    false,
                ),
            }
        };
        let mut scored: Vec<Scored> = Vec::with_capacity(3 * pool_size);
        let mut mass_cache = 0.0f32;
        let mut seen: FastSet<&str> = FastSet::default();
        let buffer_hits: Vec<(&str, f32, Option<u32>)> = if prefix.is_empty() {
            words.top_scored(pool_size, |p, p_oov| {
                (1.0 - lambda) * p + lambda * oov_share * p_unk * p_oov
            })
        } else {
            words.with_prefix(&lower).collect()
        };
        let user_hits: Vec<(&str, f32, Option<u32>)> = if prefix.is_empty() {
            self.user_words.top(pool_size)
        } else {
            self.user_words
                .with_prefix(&lower)
                .take(4 * pool_size)
                .collect()
        };
        for (i, &(word, p, id)) in buffer_hits.iter().chain(user_hits.iter()).enumerate() {
            let from_buffer = i < buffer_hits.len();
            mass_cache += if from_buffer {
                buffer_weight
            } else {
                user_weight
            } * p;
            if word.len() > prefix.len() && seen.insert(word) {
                // A hit's own probability is its cache's `prob` (no second look-up).
                let (p_buffer, p_user) = if from_buffer {
                    let p_user = if self.user_words.is_empty() {
                        0.0
                    } else {
                        self.user_words.prob(word)
                    };
                    (p, p_user)
                } else {
                    (words.prob(word), p)
                };
                let pc = buffer_weight * p_buffer + user_weight * p_user;
                // The id the cache recorded is the one `model_part` looks up.
                let (p_model, from_vocab) = match (id, vocab) {
                    (Some(id), Some(_)) => (p_vocab(id), true),
                    _ => model_part(word),
                };
                scored.push(Scored {
                    word,
                    p_model,
                    p_cache: pc,
                    from_vocab,
                    listed: false,
                });
            }
        }
        if prefix.is_empty() {
            mass_cache = 1.0;
        }
        // Keep the best few by their interpolated probability.
        let estimate = |s: &Scored| lambda * s.p_model + (1.0 - lambda) * s.p_cache;
        scored.sort_by(|a, b| estimate(b).total_cmp(&estimate(a)));
        scored.truncate(pool_size);
        if let Some(v) = vocab {
            for &(id, _) in &from_vocab {
                let word = v.text(id);
                if seen.insert(word) {
                    let pc = buffer_weight * entry.ctx.words.prob(word)
                        + user_weight * self.user_words.prob(word);
                    scored.push(Scored {
                        word,
                        p_model: p_vocab(id),
                        p_cache: pc,
                        from_vocab: true,
                        listed: false,
                    });
                }
            }
        }
        // The word list beyond the vocabulary, once a few characters are
        // typed: the most frequent listed words of the prefix, each with its
        // share of the model's `<unk>` (words of the buffer or the user's
        // history are the cache model's, scored above).
        let t = &self.opts.tuning;
        let mut mass_listed = 0.0f32;
        if let Some(lex) = self.lexicon.as_ref().filter(|_| {
            t.lexicon_share > 0.0 && p_unk > 0.0 && prefix.len() as f32 >= t.lexicon_chars
        }) {
            let mut best = Vec::with_capacity(LISTED_WORDS);
            let scale = t.lexicon_share * p_unk;
            mass_listed = scale * lex.best_with_prefix(&lower, LISTED_WORDS, &mut best);
            for i in best {
                let word = lex.word(i);
                let in_vocab = vocab.is_some_and(|v| v.word_id(word).is_some());
                if word.len() > prefix.len() && !in_vocab && seen.insert(word) {
                    scored.push(Scored {
                        word,
                        p_model: scale * lex.share(i),
                        p_cache: 0.0,
                        from_vocab: false,
                        listed: true,
                    });
                }
            }
        }
        // Bigram cache: the words that followed the previous word (and the two
        // previous words) before, in this buffer and in accepted text, each
        // weighted by how much history that context has.
        let mut followers: Vec<(&str, [f32; 2])> = Vec::new();
        let mut bigram_weight = [0.0f32; 2];
        let mut mass_bigram = [0.0f32; 2];
        let lambdas = [t.lambda_bigram, t.lambda_trigram];
        for (order, key) in entry.ctx.keys.iter().enumerate() {
            let Some(key) = key.filter(|_| lambdas[order] > 0.0) else {
                continue;
            };
            let n = entry.ctx.bigrams.total(key) + self.user_bigrams.total(key);
            if n == 0 {
                continue;
            }
            let n = n as f32;
            bigram_weight[order] = lambdas[order] * n / (n + t.bigram_conf);
            for (word, c) in entry
                .ctx
                .bigrams
                .followers(key)
                .chain(self.user_bigrams.followers(key))
            {
                if word.len() < prefix.len()
                    || !word.as_bytes()[..prefix.len()].eq_ignore_ascii_case(lower.as_bytes())
                {
                    continue;
                }
                let p = c as f32 / n;
                mass_bigram[order] += p;
                match followers.iter_mut().find(|f| f.0 == word) {
                    Some(f) => f.1[order] += p,
                    None => {
                        let mut ps = [0.0; 2];
                        ps[order] = p;
                        followers.push((word, ps));
                    }
                }
            }
        }
        for order in 0..2 {
            if prefix.is_empty() && bigram_weight[order] > 0.0 {
                mass_bigram[order] = 1.0;
            }
            if mass_bigram[order] <= 0.0 {
                bigram_weight[order] = 0.0;
            }
        }
        // Out-of-vocabulary words the neural cache points to (for an empty
        // prefix the buffer's pool above may not hold them).
        for (word, _) in dist.map_or(&[][..], |d| &d.pointer_oov[..]) {
            let word: &str = word;
            if word.len() > prefix.len()
                && word.as_bytes()[..prefix.len()].eq_ignore_ascii_case(lower.as_bytes())
                && seen.insert(word)
            {
                let pc =
                    buffer_weight * words.prob(word) + user_weight * self.user_words.prob(word);
                scored.push(Scored {
                    word,
                    p_model: model_part(word).0,
                    p_cache: pc,
                    from_vocab: false,
                    listed: false,
                });
            }
        }
        for &(word, _) in &followers {
            if word.len() > prefix.len() && seen.insert(word) {
                let pc =
                    buffer_weight * words.prob(word) + user_weight * self.user_words.prob(word);
                let (p_model, from_vocab) = model_part(word);
                scored.push(Scored {
                    word,
                    p_model,
                    p_cache: pc,
                    from_vocab,
                    listed: false,
                });
            }
        }
        let cache_weight = if mass_cache > 0.0 {
            1.0 - words_weight
        } else {
            0.0
        };
        let model_weight = if vocab.is_some() {
            words_weight.max(1.0 - cache_weight)
        } else {
            0.0
        };
        let rest = (1.0 - bigram_weight[0] - bigram_weight[1]).max(0.0);
        let model_weight = model_weight * rest;
        let cache_weight = cache_weight * rest;
        let mass_known = model_weight * mass_vocab
            + cache_weight * mass_cache
            + bigram_weight[0] * mass_bigram[0]
            + bigram_weight[1] * mass_bigram[1];
        let mass = mass_known + model_weight * mass_listed;
        let p_bigram = |word: &str| {
            followers.iter().find(|f| f.0 == word).map_or(0.0, |f| {
                bigram_weight[0] * f.1[0] + bigram_weight[1] * f.1[1]
            })
        };

        // Merge spellings that read the same after case adaptation (the
        // rests borrowed from the words: only the k kept are allocated).
        struct Merged<'a> {
            rest: Cow<'a, str>,
            source: Source,
            score: f32,
            listed: bool,
        }
        let mut merged: Vec<Merged> = Vec::with_capacity(scored.len());
        for s in &scored {
            let agree = case_agreement(prefix, s.word);
            let from_model = model_weight * s.p_model * agree;
            let from_cache = (cache_weight * s.p_cache + p_bigram(s.word)) * agree;
            let score = from_model + from_cache;
            let rest = adapted_rest(prefix, s.word);
            let source = if s.listed {
                Source::Words
            } else if from_cache > from_model || !s.from_vocab {
                Source::Buffer
            } else if dist.is_some() {
                Source::Model
            } else {
                Source::Words
            };
            match merged.iter_mut().find(|c| c.rest == rest) {
                Some(c) => {
                    c.score += score;
                    c.listed &= s.listed;
                }
                None => merged.push(Merged {
                    rest,
                    source,
                    score,
                    listed: s.listed,
                }),
            }
        }
        let norm = if mass > 0.0 { 1.0 / mass } else { 0.0 };
        for c in merged.iter_mut() {
            c.score = (c.score * norm).clamp(0.0, 1.0);
        }
        // Rank by expected keystrokes saved: accepting a rest of n characters
        // saves n - 1, so a likely one-letter rest is worth little (exponent
        // `length_weight`; 0 = by probability alone).
        let alpha = self.opts.tuning.length_weight;
        let worth = |c: &Merged| {
            let n = c.rest.len() as f32;
            c.score
                * if alpha > 0.0 {
                    (n - 1.0).max(0.25).powf(alpha)
                } else {
                    1.0
                }
        };
        let mut ranked: Vec<(f32, Merged)> = merged.into_iter().map(|c| (worth(&c), c)).collect();
        ranked.sort_by(|(wa, a), (wb, b)| wb.total_cmp(wa).then_with(|| a.rest.cmp(&b.rest)));
        ranked.truncate(k);
        let listed = ranked.iter().map(|(_, c)| c.listed).collect();
        let candidates = ranked
            .into_iter()
            .map(|(_, c)| Candidate {
                word: format!("{prefix}{}", c.rest),
                insert: c.rest.into_owned(),
                replace: 0,
                source: c.source,
                score: c.score,
            })
            .collect();
        Ranked {
            candidates,
            listed,
            mass_known,
        }
    }

    /// Words the model expects after `word` completes, while it is confident
    /// (" and then"); cached per context so keystrokes inside a word reuse it.
    fn continuation(&mut self, entry: &mut BufferEntry, word: &str, may_compute: bool) -> String {
        if self.opts.ghost_words == 0 {
            return String::new();
        }
        if let Some(c) = &entry.continuation {
            if c.version == entry.ctx.version && c.word == word {
                return c.text.clone();
            }
        }
        if !may_compute {
            return String::new();
        }
        let (Some(backend), Some(vocab)) = (&mut self.backend, &self.vocab) else {
            return String::new();
        };
        let Some(mut id) = vocab.word_id(word) else {
            return String::new();
        };
        let hidden = backend.hidden_dim();
        let mut h = entry.ctx.state(hidden).to_vec();
        self.scratch_state.resize(hidden, 0.0);
        self.scratch_logits.resize(backend.vocab_size(), 0.0);
        let mut text = String::new();
        let frequent = FREQUENT_ROWS.min(backend.vocab_size());
        for _ in 0..self.opts.ghost_words {
            if backend.step(&h, id, &mut self.scratch_state).is_err() {
                break;
            }
            std::mem::swap(&mut h, &mut self.scratch_state);
            if text.is_empty() {
                // The state after the word itself: the next keystroke that
                // completes the word will not need this step again.
                entry.ctx.ahead = Some(Ahead {
                    version: entry.ctx.version,
                    steps: vec![(id, h.clone())],
                });
            }
            // Cheap test first: the most frequent tokens alone bound the best
            // one's probability from above (their normaliser is smaller); most
            // places are not confident and stop here at an eighth of the cost.
            let head = &mut self.scratch_logits[..frequent];
            if backend.logits_rows(&h, 0..frequent, head).is_err() {
                break;
            }
            crate::model::kernels::softmax(self.simd, head);
            if argmax(head).1 < CONTINUE_THRESHOLD {
                break;
            }
            if backend.logits(&h, &mut self.scratch_logits).is_err() {
                break;
            }
            crate::model::kernels::softmax(self.simd, &mut self.scratch_logits);
            let (best, p) = argmax(&self.scratch_logits);
            if p < CONTINUE_THRESHOLD || !vocab.is_word(best) {
                break;
            }
            text.push(' ');
            text.push_str(vocab.text(best));
            id = best;
        }
        entry.continuation = Some(Continuation {
            version: entry.ctx.version,
            word: word.to_string(),
            text: text.clone(),
        });
        text
    }
}

/// The best `k` of `ranked` without the words typed past (`passed`), the
/// first of those last when `move_last`; the others' scores become their
/// share of what is left (the word typed past is known not to be wanted,
/// and the ghost threshold applies to that share).
fn give_way(ranked: Ranked, passed: &[String], k: usize, move_last: bool) -> Ranked {
    if passed.is_empty() {
        return ranked;
    }
    let (mut keep, mut moved) = (Vec::new(), Vec::new());
    for (c, l) in ranked.candidates.into_iter().zip(ranked.listed) {
        if passed.contains(&c.word) {
            moved.push((c, l));
        } else {
            keep.push((c, l));
        }
    }
    keep.truncate(k);
    let gone: f32 = moved.iter().map(|(c, _)| c.score).sum();
    if gone < 1.0 {
        for (c, _) in keep.iter_mut() {
            c.score = (c.score / (1.0 - gone)).min(1.0);
        }
    }
    if move_last && !moved.is_empty() {
        keep.truncate(k - 1);
        keep.push(moved.swap_remove(0));
    }
    let (candidates, listed) = keep.into_iter().unzip();
    Ranked {
        candidates,
        listed,
        mass_known: ranked.mass_known,
    }
}

/// The word to think ahead over: `best` (the top candidate's token), or the
/// typed prefix itself when it is a vocabulary word the model finds likelier
/// (candidates are always longer than the prefix, but a word typed out in
/// full ends right here: "the" rather than its top candidate "then").
fn word_ending_here(entry: &BufferEntry, vocab: &Vocab, prefix: &str, best: u32) -> u32 {
    let (Some(dist), Some(typed)) = (&entry.dist, vocab.word_id(prefix)) else {
        return best;
    };
    if dist.version != entry.ctx.version {
        return best;
    }
    let p = |id: u32| dist.probs.get(id as usize).copied().unwrap_or(0.0);
    if p(typed) > p(best) {
        typed
    } else {
        best
    }
}

/// True for a single word token (what `vocab.word_id` can name).
fn is_one_word(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// A prefix a spelling correction can help with: letters only, capitalised
/// at most on the first letter (not `CMP011`, `DJANGO_`, `uWSGI`: identifiers).
fn looks_like_a_word(prefix: &str) -> bool {
    let b = prefix.as_bytes();
    b.iter().all(u8::is_ascii_alphabetic) && !b.iter().skip(1).any(u8::is_ascii_uppercase)
}
