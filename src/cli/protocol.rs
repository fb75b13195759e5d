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
    /// Longest request line read; a longer one is skipped unread (not
    /// held) and answered with an `error` naming its size
    #[arg(long, value_name = "MB", default_value_t = DEFAULT_MAX_LINE_MB, value_parser = positive_mb)]
    pub max_line_mb: f64,
    #[command(flatten)]
    pub user: UserArgs,
    #[command(flatten)]
    pub engine: EngineArgs,
}

/// The default of `--max-line-mb`: a `learn` line carries whole documents
/// of the user's writing, far beyond a keystroke's few KB of context.
pub const DEFAULT_MAX_LINE_MB: f64 = 16.0;

fn positive_mb(s: &str) -> Result<f64, String> {
    s.parse::<f64>()
        .ok()
        .filter(|m| *m > 0.0 && m.is_finite())
        .ok_or_else(|| "expected a positive number".to_string())
}

fn mb_to_bytes(mb: f64) -> usize {
    (mb * (1u64 << 20) as f64) as usize
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
    /// Why the line got no answer, when it is one the protocol cannot
    /// read at all (too long).
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
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
    let max_line = mb_to_bytes(a.max_line_mb);
    match serve_as(&mut engine, &mut reader, (a.explain, max_line), input, out) {
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
    let max_line = mb_to_bytes(DEFAULT_MAX_LINE_MB);
    serve_as(engine, &mut reader, (false, max_line), input, out)
}

/// Reads one line into `line`, holding at most `max` bytes of it (and its
/// '\n'): None at the end of the input, else the line's whole length
/// without the '\n' (over `max`: the rest was read and dropped).
fn read_line_capped(
    input: &mut impl BufRead,
    line: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<Option<usize>> {
    let mut total = 0;
    loop {
        let buf = match input.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if buf.is_empty() {
            return Ok((total > 0).then_some(total));
        }
        let end = buf.iter().position(|&b| b == b'\n');
        let take = end.map_or(buf.len(), |i| i + 1);
        let room = (max + 1).saturating_sub(line.len());
        line.extend_from_slice(&buf[..take.min(room)]);
        input.consume(take);
        total += take;
        if end.is_some() {
            return Ok(Some(total - 1));
        }
    }
}

fn serve_as(
    engine: &mut Engine,
    reader: &mut Reader,
    (explain, max_line): (bool, usize),
    mut input: impl BufRead,
    mut out: impl Write,
) -> std::io::Result<()> {
    let mut line = Vec::new();
    let mut bad_lines = 0u64;
    loop {
        line.clear();
        let Some(len) = read_line_capped(&mut input, &mut line, max_line)? else {
            return Ok(());
        };
        let read = if len > max_line {
            Err(format!(
                "a line of {len} bytes is over the limit of {max_line} bytes \
                 (laya protocol --max-line-mb); it was skipped"
            ))
        } else {
            Ok(&line[..])
        };
        let too_long = read.as_ref().err().cloned();
        let written = match read
            .and_then(|l| std::str::from_utf8(l).map_err(|e| format!("not UTF-8 ({e})")))
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
                    error: too_long,
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
                "kinds": i.kinds_path.map(|p| p.display().to_string()),
                "kinds_error": i.kinds_error.map(|e| e.to_string()),
            });
            writeln!(out, "{hello}")
        }
        "learn" => {
            // User-level state, learnt as the host learns the user's
            // writing (lines that look like secrets left out): it
            // survives `reset`.
            learn(engine, &req.text);
            writeln!(out, "{{}}")
        }
        _ => answer(engine, reader, req, bad_lines, explain, out),
    }
}

/// Learns the user's earlier writing as the host does (lines that look like
/// secrets left out).
pub(crate) fn learn(engine: &mut Engine, text: &str) {
    let text = crate::learn::privacy::without_secret_lines(text);
    engine.learn(&text);
    engine.learn_rates(&text);
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
        learn: true,
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
        error: None,
        gate: explain
            .then(|| Features::of(&p.prefix, &p.candidates).map(|f| f.vector()))
            .flatten(),
    };
    // Before the answer goes out: the helper starts while the harness reads it.
    engine.think_ahead(req.doc);
    write_line(out, &a)
}
