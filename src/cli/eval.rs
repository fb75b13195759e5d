//! `laya eval FILE`: the metrics of METRICS.md computed natively, calling the
//! engine directly: same documents, blocks, positions, windows and rules as
//! ../shared/eval/ksr.py (a test checks that both agree on a file).

use super::percentiles::Latencies;
use super::user::{ghost_word, scoring_options, Reader, UserArgs};
use super::EngineArgs;
use crate::engine::{Engine, Request};
use crate::text::tokenizer::is_word_char;
use serde_json::json;
use std::collections::HashMap;
use std::io::Write;
use std::time::Instant;

#[derive(clap::Args, Debug)]
pub struct EvalArgs {
    /// Text file; a line holding only a form feed separates documents
    pub file: String,
    /// Print the metrics as JSON (ksr.py's names) instead of a table
    #[arg(long)]
    pub json: bool,
    /// Candidates per position
    #[arg(short = 'k', long = "k", default_value_t = 3)]
    pub k: usize,
    /// Most characters of text before the cursor per request
    #[arg(long, default_value_t = 1024)]
    pub window: usize,
    /// Blocks of whole lines of at least this many characters
    #[arg(long, default_value_t = 1000)]
    pub block_chars: usize,
    /// Score every Nth block ...
    #[arg(long, default_value_t = 1)]
    pub every: usize,
    /// ... starting at this one
    #[arg(long, default_value_t = 0)]
    pub offset: usize,
    /// The user's earlier writing, learnt before scoring as `laya protocol`
    /// learns protocol 2's `learn` requests (one per document of the file)
    #[arg(long, value_name = "FILE")]
    pub learn: Option<String>,
    /// With --learn: learn through a personal store in DIR (emptied first),
    /// as the host learns and saves, then score with a new engine that
    /// loaded that store, as the host does at its next start
    #[arg(long, value_name = "DIR", requires = "learn")]
    pub via_store: Option<String>,
    /// Write what the KSR@1 user saw at each visited position to FILE, one
    /// tab-separated line each: document, word start, position (characters),
    /// the word, the ghost text's word, 1 if the user accepted it (for
    /// benches/learn_gain.py, which compares two runs word by word)
    #[arg(long, value_name = "FILE")]
    pub trace: Option<String>,
    #[command(flatten)]
    pub user: UserArgs,
    #[command(flatten)]
    pub engine: EngineArgs,
}

/// Harness settings (ksr.py run's options).
pub(crate) struct Sampling {
    pub k: usize,
    pub window: usize,
    pub block_chars: usize,
    pub every: usize,
    pub offset: usize,
}

impl Sampling {
    fn of(a: &EvalArgs) -> Sampling {
        Sampling {
            k: a.k,
            window: a.window,
            block_chars: a.block_chars,
            every: a.every.max(1),
            offset: a.offset,
        }
    }
}

/// Splits a file into documents at lines holding a single form feed.
pub(crate) fn documents(text: &str) -> Vec<&str> {
    let mut docs = Vec::new();
    let mut start = 0;
    let mut line_start = 0;
    while line_start < text.len() {
        let line_end = text[line_start..]
            .find('\n')
            .map_or(text.len(), |i| line_start + i + 1);
        if &text[line_start..line_end] == "\u{c}\n" {
            docs.push(&text[start..line_start]);
            start = line_end;
        }
        line_start = line_end;
    }
    docs.push(&text[start..]);
    docs.retain(|d| !d.is_empty());
    docs
}

/// Blocks of whole lines of at least `block_chars` characters (char indices).
fn blocks(chars: &[char], block_chars: usize) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let (mut start, mut pos) = (0, 0);
    let n = chars.len();
    while pos < n {
        let end = chars[pos..]
            .iter()
            .position(|&c| c == '\n')
            .map_or(n, |i| pos + i + 1);
        if end - start >= block_chars {
            out.push((start, end));
            start = end;
        }
        pos = end;
    }
    if start < n {
        out.push((start, n));
    }
    out
}

#[derive(Default)]
struct Hits {
    n: u64,
    top1: u64,
    top3: u64,
}

fn ratio(a: u64, b: u64) -> Option<f64> {
    (b > 0).then(|| ((a as f64 / b as f64) * 1e4).round() / 1e4)
}

/// Counts of the simulation, by ksr.py's rules.
#[derive(Default)]
struct Tally {
    /// Keystrokes and accepted candidates of the three simulated users
    /// (`SIMS`), who accept the top candidate, any of the top 3 for one key,
    /// or any of the top 3 for as many keys as its rank.
    keys: [u64; 3],
    accepted: [u64; 3],
    chars: u64,
    nonword: u64,
    words: u64,
    queries: u64,
    next_word: Hits,
    /// Completions after 1, 2 and 3 typed characters of a word.
    completion: [Hits; 3],
    ghost_shown: u64,
    ghost_correct: u64,
    ghost_queried: u64,
    lat: Latencies,
    cpu: Latencies,
    docs_scored: u64,
    rereads: u64,
    steps: u64,
    /// What the user read of the previous answer.
    reader: Reader,
    /// Where the KSR@1 user's visits are written (`EvalArgs::trace`).
    trace: Option<std::io::BufWriter<std::fs::File>>,
}

const SIMS: [&str; 3] = ["ksr1", "ksr3", "ksr3_rank"];

/// One document, with where each character starts and each word ends.
struct Doc<'a> {
    id: u64,
    text: &'a str,
    chars: Vec<char>,
    /// Byte offset of every character (and the end).
    offs: Vec<usize>,
    /// Char index where the word at each position ends (the position itself
    /// when no word character is there).
    word_end: Vec<usize>,
}

impl<'a> Doc<'a> {
    fn new(id: usize, text: &'a str) -> Doc<'a> {
        let chars: Vec<char> = text.chars().collect();
        let mut offs: Vec<usize> = text.char_indices().map(|(i, _)| i).collect();
        offs.push(text.len());
        let n = chars.len();
        let mut word_end = vec![n; n + 1];
        for i in (0..n).rev() {
            word_end[i] = if is_word_char(chars[i]) {
                word_end[i + 1]
            } else {
                i
            };
        }
        Doc {
            id: id as u64,
            text,
            chars,
            offs,
            word_end,
        }
    }

    /// Positions where a word starts (0: the next word is probed) and 1 to 3
    /// characters into a word (the completion after c characters).
    fn probes(&self, bs: usize, be: usize) -> HashMap<usize, usize> {
        let chars = &self.chars;
        let mut probes = HashMap::new();
        for p in bs..be {
            if is_word_char(chars[p]) && (p == 0 || !is_word_char(chars[p - 1])) {
                probes.insert(p, 0);
                for c in 1..=3 {
                    if self.word_end[p] - p > c {
                        probes.insert(p + c, c);
                    }
                }
            }
        }
        probes
    }
}

/// Runs the simulation; returns the metrics as ksr.py names them.
pub(crate) fn evaluate(
    engine: &mut Engine,
    user: &UserArgs,
    text: &str,
    s: &Sampling,
    trace: Option<std::fs::File>,
) -> std::io::Result<serde_json::Value> {
    let mut t = Tally {
        reader: Reader::new(user),
        trace: trace.map(std::io::BufWriter::new),
        ..Tally::default()
    };
    let mut block_idx: i64 = -1;
    let t_start = Instant::now();
    for (d, doc) in documents(text).into_iter().enumerate() {
        let doc = Doc::new(d, doc);
        let selected: Vec<(usize, usize)> = blocks(&doc.chars, s.block_chars)
            .into_iter()
            .filter(|_| {
                block_idx += 1;
                block_idx as usize % s.every == s.offset % s.every
            })
            .collect();
        if selected.is_empty() {
            continue;
        }
        t.docs_scored += 1;
        let mut first = true;
        for (bs, be) in selected {
            t.block(engine, &doc, bs, be, &mut first, s)?;
        }
    }
    if let Some(w) = t.trace.as_mut() {
        w.flush()?;
    }
    Ok(t.metrics(engine.errors(), t_start))
}

impl Tally {
    /// Types the block [bs, be) of `doc` as the three simulated users.
    fn block(
        &mut self,
        engine: &mut Engine,
        doc: &Doc,
        bs: usize,
        be: usize,
        first: &mut bool,
        s: &Sampling,
    ) -> std::io::Result<()> {
        let chars = &doc.chars;
        self.chars += (be - bs) as u64;
        self.nonword += chars[bs..be].iter().filter(|&&c| !is_word_char(c)).count() as u64;
        let probes = doc.probes(bs, be);
        self.words += probes.values().filter(|&&c| c == 0).count() as u64;
        // Where each simulated user is in the text.
        let mut tpos = [bs; 3];
        for p in bs..be {
            let at: Vec<usize> = (0..3).filter(|&t| tpos[t] == p).collect();
            let probe = probes.get(&p).copied();
            if at.is_empty() && probe.is_none() {
                continue;
            }
            let end = doc.word_end[p];
            if end == p {
                for t in at {
                    self.keys[t] += 1;
                    tpos[t] = p + 1;
                }
                continue;
            }
            if *first {
                engine.forget(doc.id);
                self.reader.forget(doc.id);
                *first = false;
            }
            let target: String = chars[p..end].iter().collect();
            let before = &doc.text[doc.offs[p.saturating_sub(s.window)]..doc.offs[p]];
            let (cands, ghost) = self.ask(engine, doc.id, before, s.k);
            // The KSR@1 user accepts the ghost text's first word.
            let top1 = ghost_word(&ghost);
            let rank = cands
                .iter()
                .take(3)
                .position(|c| *c == target)
                .map(|i| i + 1);
            if let Some(c) = probe {
                let h = if c == 0 {
                    &mut self.next_word
                } else {
                    &mut self.completion[c - 1]
                };
                h.n += 1;
                h.top1 += (rank == Some(1)) as u64;
                h.top3 += rank.is_some() as u64;
            }
            for t in at {
                let (ok, cost) = match t {
                    0 => {
                        if let Some(w) = self.trace.as_mut() {
                            let start =
                                (bs..p).rev().take_while(|&i| is_word_char(chars[i])).last();
                            let start = start.unwrap_or(p);
                            let word: String = chars[start..end].iter().collect();
                            let accepted = (top1 == target && end - p > 1) as u8;
                            writeln!(w, "{}\t{start}\t{p}\t{word}\t{top1}\t{accepted}", doc.id)?;
                        }
                        self.ghost_queried += 1;
                        self.ghost_shown += !top1.is_empty() as u64;
                        self.ghost_correct += (top1 == target) as u64;
                        (top1 == target, 1)
                    }
                    1 => (rank.is_some(), 1),
                    _ => (rank.is_some(), rank.unwrap_or(0)),
                };
                if ok && cost < end - p {
                    self.keys[t] += cost as u64;
                    self.accepted[t] += 1;
                    tpos[t] = end;
                } else {
                    self.keys[t] += 1;
                    tpos[t] = p + 1;
                }
            }
        }
        Ok(())
    }

    /// The engine's top `k` candidates for `before` and its ghost text, timed.
    fn ask(
        &mut self,
        engine: &mut Engine,
        buffer: u64,
        before: &str,
        k: usize,
    ) -> (Vec<String>, String) {
        let c0 = super::bench::thread_cpu_us();
        let t0 = Instant::now();
        let pred = engine.predict(&Request {
            buffer,
            before,
            filetype: "",
            kind: Default::default(),
            k,
            seen_last: self.reader.seen_last(buffer),
            learn: true,
        });
        self.reader.showed(buffer, &pred.ghost);
        self.lat.record_ns(t0.elapsed().as_nanos() as u64);
        self.cpu.record_us(super::bench::thread_cpu_us() - c0);
        let cost = engine.last_cost();
        self.rereads += cost.reread as u64;
        self.steps += cost.steps as u64;
        self.queries += 1;
        let cands = pred
            .candidates
            .into_iter()
            .filter(|c| c.replace == 0)
            .map(|c| c.insert)
            .take(k)
            .collect();
        (cands, pred.ghost)
    }

    fn metrics(&self, errors: u64, t_start: Instant) -> serde_json::Value {
        // Microseconds to 0.1, 0 when nothing was timed.
        let pct_of = |l: &Latencies, q: f64| -> f64 {
            if l.is_empty() {
                return 0.0;
            }
            (l.us(q) * 10.0).round() / 10.0
        };
        let (keys, accepted) = (&self.keys, &self.accepted);
        let saved = |k: u64| ratio(self.chars.saturating_sub(k), self.chars);
        let mut m = json!({
            "chars": self.chars,
            "words": self.words,
            "docs_scored": self.docs_scored,
            "queries": self.queries,
            "keystrokes": {SIMS[0]: keys[0], SIMS[1]: keys[1], SIMS[2]: keys[2]},
            "accepted": {SIMS[0]: accepted[0], SIMS[1]: accepted[1], SIMS[2]: accepted[2]},
            "KSR@1": saved(keys[0]),
            "KSR@3": saved(keys[1]),
            "KSR@3_rankcost": saved(keys[2]),
            "KSR_max": saved(self.nonword + self.words),
            "ghost_precision": ratio(self.ghost_correct, self.ghost_shown),
            "ghost_shown_rate": ratio(self.ghost_shown, self.ghost_queried),
            "nextword_top1": ratio(self.next_word.top1, self.next_word.n),
            "nextword_top3": ratio(self.next_word.top3, self.next_word.n),
            "nextword_n": self.next_word.n,
            "wall_s": (t_start.elapsed().as_secs_f64() * 100.0).round() / 100.0,
            "predictor_errors": errors,
            "model_steps": self.steps,
            "rereads": self.rereads,
            "latency_self": {"n": self.lat.len(), "p50_us": pct_of(&self.lat, 50.0), "p90_us": pct_of(&self.lat, 90.0), "p99_us": pct_of(&self.lat, 99.0)},
            "latency_cpu": {"n": self.cpu.len(), "p50_us": pct_of(&self.cpu, 50.0), "p90_us": pct_of(&self.cpu, 90.0), "p99_us": pct_of(&self.cpu, 99.0)},
        });
        for (c, h) in self.completion.iter().enumerate() {
            m[format!("comp{}_top1", c + 1)] = json!(ratio(h.top1, h.n));
            m[format!("comp{}_top3", c + 1)] = json!(ratio(h.top3, h.n));
            m[format!("comp{}_n", c + 1)] = json!(h.n);
        }
        m
    }
}

fn pct(x: &serde_json::Value) -> String {
    x.as_f64()
        .map_or("-".into(), |v| format!("{:.1}", v * 100.0))
}

pub(crate) fn run(a: &EvalArgs) -> i32 {
    let path = &a.file;
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => {
            log::error!("laya eval: {path}: {e}");
            return 1;
        }
    };
    let sampling = Sampling::of(a);
    let mut engine = Engine::new(scoring_options(&a.engine));
    super::describe("laya", &engine);
    if let Some(history) = &a.learn {
        match std::fs::read_to_string(history) {
            Ok(h) if a.via_store.is_some() => {
                let dir = a.via_store.as_deref().unwrap_or_default();
                engine = through_store(&a.engine, &h, dir);
            }
            Ok(h) => documents(&h)
                .into_iter()
                .for_each(|doc| super::protocol::learn(&mut engine, doc)),
            Err(e) => {
                log::error!("laya eval: {history}: {e}");
                return 1;
            }
        }
    }
    let trace = match a.trace.as_deref().map(std::fs::File::create).transpose() {
        Ok(t) => t,
        Err(e) => {
            log::error!("laya eval: --trace: {e}");
            return 1;
        }
    };
    let m = match evaluate(&mut engine, &a.user, &text, &sampling, trace) {
        Ok(m) => m,
        Err(e) => {
            log::error!("laya eval: --trace: {e}");
            return 1;
        }
    };
    if a.json {
        println!("{}", serde_json::to_string_pretty(&m).unwrap_or_default());
        return 0;
    }
    let info = engine.info();
    println!("| text | model | chars | KSR@1 | KSR@3 | KSR@3 rank-cost | ghost prec. | next top1 | next top3 | comp@1/2/3ch top1 | self p50 / p99 µs |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    println!(
        "| {} | {} {} | {} | {} | {} | {} | {} | {} | {} | {} / {} / {} | {} / {} |",
        path,
        info.backend,
        info.dtype,
        m["chars"],
        pct(&m["KSR@1"]),
        pct(&m["KSR@3"]),
        pct(&m["KSR@3_rankcost"]),
        pct(&m["ghost_precision"]),
        pct(&m["nextword_top1"]),
        pct(&m["nextword_top3"]),
        pct(&m["comp1_top1"]),
        pct(&m["comp2_top1"]),
        pct(&m["comp3_top1"]),
        m["latency_self"]["p50_us"],
        m["latency_self"]["p99_us"],
    );
    0
}

/// An engine that learnt `history` the host's way a session before: learnt
/// and saved to a personal store in `dir` (emptied first), then loaded
/// from it by a new engine, as at the next start.
fn through_store(engine: &EngineArgs, history: &str, dir: &str) -> Engine {
    use crate::learn::learning::{LearnStatus, Learning};
    use crate::learn::store::Store;
    use std::sync::{Arc, Mutex};
    let _ = std::fs::remove_dir_all(dir);
    let store = || Some(Store::new(dir, crate::learn::store::DEFAULT_MAX_BYTES));
    let status = || Arc::new(Mutex::new(LearnStatus::default()));
    let mut first = Engine::new(scoring_options(engine));
    let mut learning = Learning::new(store(), status());
    learning.load(&mut first);
    for doc in documents(history) {
        learning.learn(&mut first, doc, "");
    }
    learning.settle_rates(&mut first);
    learning.finish();
    let mut next = Engine::new(scoring_options(engine));
    let mut learning = Learning::new(store(), status());
    learning.load(&mut next);
    while learning.is_loading() {
        std::thread::sleep(std::time::Duration::from_millis(5));
        learning.poll(&mut next);
    }
    log::info!("learnt through {dir}: {} words", next.learnt_words());
    next
}
