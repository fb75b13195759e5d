//! `laya protocol`: the predictor line protocol of METRICS.md §5 on
//! stdin/stdout, so ../shared/eval/ksr.py can score the engine. Each document
//! is its own buffer; `reset` forgets it. Each answer carries the ghost text
//! the Neovim host would show there (protocol 2's `ghost`), so the harness
//! scores what the user sees.

use super::user::{scoring_options, Reader, UserArgs};
use super::EngineArgs;
use crate::engine::gate::Features;
use crate::engine::kind::TextKind;
use crate::engine::{Engine, Request};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::borrow::Cow;
use std::io::{BufRead, Write};
use std::time::Instant;

/// One request line. Strings are borrowed from the line unless they hold
/// escapes; fields the engine does not need (`pos`, `new`) are skipped.
#[derive(Deserialize)]
struct Line<'a> {
    #[serde(default, borrow)]
    op: Cow<'a, str>,
    #[serde(default)]
    doc: u64,
    #[serde(default, borrow)]
    context: Cow<'a, str>,
    #[serde(default)]
    k: Option<usize>,
    #[serde(default)]
    reset: bool,
    /// What the cursor is in: `prose`, `comment`, `string` or `code`
    /// (optional; the editor sends it with each keystroke).
    #[serde(default, borrow)]
    syntax: Cow<'a, str>,
    /// `learn` requests: the user's earlier writing.
    #[serde(default, borrow)]
    text: Cow<'a, str>,
}

#[derive(clap::Args, Debug)]
pub struct ProtocolArgs {
    /// No model work on a helper thread between requests
    #[arg(long)]
    pub no_think_ahead: bool,
    /// Add the inputs of the ghost text's show/hide decision to each answer
    /// (`gate`, see engine::gate; scripts/fit-ghost-gate.py fits on them)
    #[arg(long)]
    pub explain: bool,
    #[command(flatten)]
    pub user: UserArgs,
    #[command(flatten)]
    pub engine: EngineArgs,
}

#[derive(Serialize)]
struct Answer<'a> {
    candidates: Vec<&'a str>,
    /// The ghost text shown ("" for none), continuation words included.
    #[serde(skip_serializing_if = "Option::is_none")]
    ghost: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    us: Option<f64>,
    errors: u64,
    /// `--explain`: the decision's inputs (`gate::Features::vector`).
    #[serde(skip_serializing_if = "Option::is_none")]
    gate: Option<[f32; 8]>,
}

pub(crate) fn run(a: &ProtocolArgs) -> i32 {
    let mut opts = scoring_options(&a.engine);
    // Model work for the next request on a helper thread between requests.
    opts.think_ahead = !a.no_think_ahead;
    let mut engine = Engine::new(opts);
    super::describe("laya", &engine);
    let mut reader = Reader::new(&a.user);
    let mut input = std::io::stdin().lock();
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let mut line = String::new();
    let mut bad_lines = 0u64;
    loop {
        line.clear();
        match input.read_line(&mut line) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => {
                log::error!("laya protocol: cannot read stdin: {e}");
                return 1;
            }
        }
        let written = match serde_json::from_str::<Line>(&line) {
            Ok(req) if req.op == "hello" => {
                let i = engine.info();
                let hello = json!({
                    "name": "laya",
                    "protocol": 2,
                    "backend": i.backend,
                    "dtype": i.dtype,
                    "device": i.device,
                    "model": i.model_path.map(|p| p.display().to_string()),
                    "model_error": i.model_error.map(|e| e.to_string()),
                    "words": i.words_path.map(|p| p.display().to_string()),
                    "words_error": i.words_error.map(|e| e.to_string()),
                });
                writeln!(out, "{hello}")
            }
            Ok(req) if req.op == "learn" => {
                // User-level state, learnt as the host learns the user's
                // writing (lines that look like secrets left out): it
                // survives `reset`.
                engine.learn(&crate::learn::privacy::without_secret_lines(&req.text));
                writeln!(out, "{{}}")
            }
            Ok(req) => {
                let explain = a.explain;
                answer(&mut engine, &mut reader, &req, bad_lines, explain, &mut out)
            }
            Err(e) => {
                bad_lines += 1;
                log::warn!("laya protocol: bad request line: {e}");
                let a = Answer {
                    candidates: Vec::new(),
                    ghost: None,
                    us: None,
                    errors: bad_lines + engine.errors(),
                    gate: None,
                };
                write_line(&mut out, &a)
            }
        };
        if written.and_then(|_| out.flush()).is_err() {
            break;
        }
    }
    0
}

fn write_line(out: &mut impl Write, a: &Answer) -> std::io::Result<()> {
    serde_json::to_writer(&mut *out, a)?;
    writeln!(out)
}

fn answer(
    engine: &mut Engine,
    reader: &mut Reader,
    req: &Line,
    bad_lines: u64,
    explain: bool,
    out: &mut impl Write,
) -> std::io::Result<()> {
    let t0 = Instant::now();
    if req.reset {
        engine.forget(req.doc);
        reader.forget(req.doc);
    }
    let p = engine.predict(&Request {
        buffer: req.doc,
        before: &req.context,
        filetype: "",
        kind: TextKind::parse(&req.syntax),
        k: req.k.unwrap_or(3),
        seen_last: reader.seen_last(req.doc),
    });
    reader.showed(req.doc, &p.ghost);
    let a = Answer {
        candidates: p
            .candidates
            .iter()
            .filter(|c| c.replace == 0)
            .map(|c| c.insert.as_str())
            .collect(),
        ghost: Some(&p.ghost),
        us: Some((t0.elapsed().as_secs_f64() * 1e7).round() / 10.0),
        errors: engine.errors() + bad_lines,
        gate: explain
            .then(|| Features::of(&p.prefix, &p.candidates).map(|f| f.vector()))
            .flatten(),
    };
    // Before the answer goes out: the helper starts while the harness reads it.
    engine.think_ahead(req.doc);
    write_line(out, &a)
}
