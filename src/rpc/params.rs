//! Turns the msgpack arguments of incoming notifications into typed values.
//!
//! Everything from the wire is untrusted: wrong arity or types become an error
//! message (logged by the caller), invalid UTF-8 is converted lossily, and
//! oversized text is cut to the bounds below so one bad message costs nothing.

use rmpv::Value;

/// The most text before the cursor the host looks at (the Lua side sends
/// a few KB; anything beyond this is cut from the front).
pub const MAX_BEFORE_BYTES: usize = 16 * 1024;
/// The most text after the cursor the host keeps.
pub const MAX_AFTER_BYTES: usize = 1024;
const MAX_FILETYPE_BYTES: usize = 64;

/// `predict(bufnr, changedtick, seq, [row, col], before, after, filetype[, seen[, syntax[, learn]]])`.
#[derive(Debug, Clone, PartialEq)]
pub struct PredictParams {
    pub buffer: u64,
    pub changedtick: u64,
    pub seq: u64,
    /// Cursor as Neovim reports it: row 1-based, col 0-based bytes.
    pub row: u64,
    pub col: u64,
    pub before: String,
    pub after: String,
    pub filetype: String,
    /// The user had the previous answer's ghost text on screen long enough
    /// to read it before this key (optional; false when absent).
    pub seen_last: bool,
    /// What the cursor is in, the editor's word for it (`prose`, `comment`,
    /// `string`, `code`; optional, empty when absent).
    pub syntax: String,
    /// The buffer may teach the user's history (`Request::learn`;
    /// optional, false when absent).
    pub learn: bool,
}

pub const PREDICT_SIGNATURE: &str =
    "predict(bufnr, changedtick, seq, [row, col], before, after, filetype[, seen[, syntax[, learn]]])";

impl PredictParams {
    pub fn from_args(args: &[Value]) -> Result<PredictParams, String> {
        if !(7..=10).contains(&args.len()) {
            return Err(format!(
                "predict: expected 7 to 10 arguments, got {}; {PREDICT_SIGNATURE}",
                args.len()
            ));
        }
        let (row, col) = cursor(&args[3])?;
        Ok(PredictParams {
            buffer: uint(&args[0], "bufnr")?,
            changedtick: uint(&args[1], "changedtick")?,
            seq: uint(&args[2], "seq")?,
            row,
            col,
            before: keep_tail(text(&args[4], "before")?, MAX_BEFORE_BYTES),
            after: keep_head(text(&args[5], "after")?, MAX_AFTER_BYTES),
            filetype: keep_head(text(&args[6], "filetype")?, MAX_FILETYPE_BYTES),
            seen_last: flag(args.get(7), "seen")?,
            syntax: match args.get(8) {
                None | Some(Value::Nil) => String::new(),
                Some(v) => keep_head(text(v, "syntax")?, MAX_FILETYPE_BYTES),
            },
            learn: flag(args.get(9), "learn")?,
        })
    }
}

/// An optional boolean argument (false when absent or nil).
fn flag(v: Option<&Value>, name: &str) -> Result<bool, String> {
    match v {
        None | Some(Value::Nil) => Ok(false),
        Some(Value::Boolean(b)) => Ok(*b),
        Some(v) => Err(format!(
            "predict: {name}: expected a boolean, got {}",
            kind(v)
        )),
    }
}

/// `accepted(bufnr, text)`: the user took `text` from a prediction.
pub fn accepted_args(args: &[Value]) -> Result<(u64, String), String> {
    if args.len() != 2 {
        return Err(format!(
            "accepted: expected 2 arguments (bufnr, text), got {}",
            args.len()
        ));
    }
    Ok((
        uint(&args[0], "bufnr")?,
        keep_head(text(&args[1], "text")?, MAX_AFTER_BYTES),
    ))
}

/// `learn(text, path)`: text the user wrote (`path`: its file, or "").
pub fn learn_args(args: &[Value]) -> Result<(String, String), String> {
    match args {
        [t, p] => Ok((text(t, "text")?, text(p, "path")?)),
        _ => Err(format!(
            "learn: expected 2 arguments (text, path), got {}",
            args.len()
        )),
    }
}

/// `forget_learnt(word)`: forget a learnt word, or everything (nil).
pub fn forget_learnt_args(args: &[Value]) -> Result<Option<String>, String> {
    match args {
        [Value::Nil] => Ok(None),
        [w] => Ok(Some(text(w, "word")?)),
        _ => Err(format!(
            "forget_learnt: expected 1 argument (word or nil), got {}",
            args.len()
        )),
    }
}

/// `forget(bufnr)`: the buffer was closed.
pub fn forget_args(args: &[Value]) -> Result<u64, String> {
    match args {
        [b] => uint(b, "bufnr"),
        _ => Err(format!(
            "forget: expected 1 argument (bufnr), got {}",
            args.len()
        )),
    }
}

/// `call(id, method)`: a request sent as a notification (see the handler).
pub fn call_args(args: &[Value]) -> Result<(u64, String), String> {
    match args {
        [id, method] => Ok((
            uint(id, "call id")?,
            keep_head(text(method, "call method")?, MAX_FILETYPE_BYTES),
        )),
        _ => Err(format!(
            "call: expected 2 arguments (id, method), got {}",
            args.len()
        )),
    }
}

fn uint(v: &Value, name: &str) -> Result<u64, String> {
    v.as_u64()
        .ok_or_else(|| format!("{name}: expected a non-negative integer, got {}", kind(v)))
}

fn cursor(v: &Value) -> Result<(u64, u64), String> {
    match v.as_array().map(Vec::as_slice) {
        Some([r, c]) => Ok((uint(r, "cursor row")?, uint(c, "cursor col")?)),
        _ => Err(format!("cursor: expected [row, col], got {}", kind(v))),
    }
}

/// Neovim sends strings as msgpack str, but their bytes need not be UTF-8
/// (a buffer can hold anything): decode lossily rather than refuse.
fn text(v: &Value, name: &str) -> Result<String, String> {
    match v {
        Value::String(s) => Ok(String::from_utf8_lossy(s.as_bytes()).into_owned()),
        Value::Binary(b) => Ok(String::from_utf8_lossy(b).into_owned()),
        Value::Nil => Ok(String::new()),
        _ => Err(format!("{name}: expected a string, got {}", kind(v))),
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Nil => "nil",
        Value::Boolean(_) => "a boolean",
        Value::Integer(_) => "an integer",
        Value::F32(_) | Value::F64(_) => "a float",
        Value::String(_) => "a string",
        Value::Binary(_) => "binary",
        Value::Array(_) => "an array",
        Value::Map(_) => "a map",
        Value::Ext(..) => "an ext value",
    }
}

/// The last `max` bytes of `s`, starting on a character boundary.
fn keep_tail(s: String, max: usize) -> String {
    if s.len() <= max {
        return s;
    }
    let mut start = s.len() - max;
    while !s.is_char_boundary(start) {
        start += 1;
    }
    s[start..].to_string()
}

/// The first `max` bytes of `s`, ending on a character boundary.
fn keep_head(mut s: String, max: usize) -> String {
    if s.len() > max {
        let mut end = max;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn good() -> Vec<Value> {
        vec![
            Value::from(3),
            Value::from(17),
            Value::from(42),
            Value::Array(vec![Value::from(1), Value::from(5)]),
            Value::from("hello wor"),
            Value::from("ld"),
            Value::from("text"),
        ]
    }

    #[test]
    fn decodes_a_predict() {
        let p = PredictParams::from_args(&good()).unwrap();
        assert_eq!(
            (p.buffer, p.changedtick, p.seq, p.row, p.col),
            (3, 17, 42, 1, 5)
        );
        assert_eq!((p.before.as_str(), p.after.as_str()), ("hello wor", "ld"));
    }

    #[test]
    fn wrong_arity_and_types_are_errors() {
        let mut a = good();
        a.pop();
        assert!(PredictParams::from_args(&a)
            .unwrap_err()
            .contains("expected 7 to 10"));
        let mut a = good();
        a.push(Value::from(true));
        assert!(PredictParams::from_args(&a).unwrap().seen_last);
        assert!(!PredictParams::from_args(&good()).unwrap().seen_last);
        a.push(Value::from("comment"));
        assert_eq!(PredictParams::from_args(&a).unwrap().syntax, "comment");
        assert!(!PredictParams::from_args(&a).unwrap().learn);
        a.push(Value::from(true));
        assert!(PredictParams::from_args(&a).unwrap().learn);
        a[9] = Value::from("yes");
        assert!(PredictParams::from_args(&a).unwrap_err().contains("learn"));
        a.pop();
        a[8] = Value::from(3);
        assert!(PredictParams::from_args(&a).unwrap_err().contains("syntax"));
        a.pop();
        a[7] = Value::from(1);
        assert!(PredictParams::from_args(&a).unwrap_err().contains("seen"));
        let mut a = good();
        a[2] = Value::from("x");
        assert!(PredictParams::from_args(&a).unwrap_err().contains("seq"));
        let mut a = good();
        a[0] = Value::from(-1);
        assert!(PredictParams::from_args(&a).is_err());
        let mut a = good();
        a[3] = Value::from(4);
        assert!(PredictParams::from_args(&a).unwrap_err().contains("cursor"));
        assert!(accepted_args(&[Value::from(1)]).is_err());
        assert!(forget_args(&[]).is_err());
    }

    #[test]
    fn invalid_utf8_is_decoded_lossily() {
        let mut a = good();
        a[4] = rmpv::decode::read_value(&mut &b"\xa3a\xffb"[..]).unwrap();
        let p = PredictParams::from_args(&a).unwrap();
        assert_eq!(p.before, "a\u{fffd}b");
    }

    #[test]
    fn megabyte_text_is_bounded_on_char_boundaries() {
        let mut a = good();
        a[4] = Value::from("é".repeat(600_000));
        a[5] = Value::from("ü".repeat(600_000));
        let p = PredictParams::from_args(&a).unwrap();
        assert!(p.before.len() <= MAX_BEFORE_BYTES && p.before.starts_with('é'));
        assert!(p.after.len() <= MAX_AFTER_BYTES && p.after.ends_with('ü'));
    }
}
