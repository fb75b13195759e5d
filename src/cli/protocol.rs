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
    let input = std::io::stdin().lock();
    let out = std::io::BufWriter::new(std::io::stdout().lock());
    match serve_as(&mut engine, &mut reader, a.explain, input, out) {
        Ok(()) => 0,
        Err(e) => {
            log::error!("laya protocol: cannot read stdin: {e}");
            1
        }
    }
}

/// Answers every line of `input` with one line on `out` until the input
/// ends or `out` is closed, for a user who reads every ghost text. A line
/// that is not a request (bad JSON, not UTF-8, a field of the wrong type)
/// is answered with no candidates and counted in `errors`; the session goes
/// on. Err only when `input` fails.
pub fn serve(engine: &mut Engine, input: impl BufRead, out: impl Write) -> std::io::Result<()> {
    let mut reader = Reader::new(&UserArgs::default());
    serve_as(engine, &mut reader, false, input, out)
}

fn serve_as(
    engine: &mut Engine,
    reader: &mut Reader,
    explain: bool,
    mut input: impl BufRead,
    mut out: impl Write,
) -> std::io::Result<()> {
    let mut line = Vec::new();
    let mut bad_lines = 0u64;
    loop {
        line.clear();
        if input.read_until(b'\n', &mut line)? == 0 {
            return Ok(());
        }
        let written = match std::str::from_utf8(&line)
            .map_err(|e| format!("not UTF-8 ({e})"))
            .and_then(|l| serde_json::from_str::<Line>(l).map_err(|e| e.to_string()))
        {
            Ok(req) => reply(engine, reader, &req, bad_lines, explain, &mut out),
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
            return Ok(());
        }
    }
}

/// The answer to one request line.
fn reply(
    engine: &mut Engine,
    reader: &mut Reader,
    req: &Line,
    bad_lines: u64,
    explain: bool,
    out: &mut impl Write,
) -> std::io::Result<()> {
    match &*req.op {
        "hello" => {
            let i = engine.info();
            let hello = json!({
                "name": "laya",
                "protocol": 2,
                "backend": i.backend,
                "dtype": i.dtype,
                "device": i.device,
                "model": i.model_path.map(|p| p.display().to_string()),
                "model_error": i.model_error.map(|e| e.to_string()),
                "backend_error": i.backend_error.map(|e| e.to_string()),
                "words": i.words_path.map(|p| p.display().to_string()),
                "words_error": i.words_error.map(|e| e.to_string()),
            });
            writeln!(out, "{hello}")
        }
        "learn" => {
            // User-level state, learnt as the host learns the user's
            // writing (lines that look like secrets left out): it
            // survives `reset`.
            engine.learn(&crate::learn::privacy::without_secret_lines(&req.text));
            writeln!(out, "{{}}")
        }
        _ => answer(engine, reader, req, bad_lines, explain, out),
    }
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
