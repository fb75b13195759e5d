//! The open documents: their text as the client last described it
//! (didOpen, then incremental or whole didChange edits), and LSP positions
//! (line, character in UTF-16 or UTF-8 units) ↔ byte offsets.

use lsp_types::{Position, Range, TextDocumentContentChangeEvent};
use std::collections::HashMap;

/// Units of `Position::character` agreed at initialize.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Utf8,
    Utf16,
}

pub struct Document {
    /// The engine's buffer id for this document.
    pub id: u64,
    pub language: String,
    pub version: i32,
    pub text: String,
    /// The lines already learnt (hash → how many times), so that saving or
    /// closing a document again learns only the lines that are new since.
    learnt: HashMap<u64, u32>,
}

/// Documents longer than this are not learnt from (the Neovim plugin's
/// `learn.max_buffer_lines`).
pub const MAX_LEARN_LINES: usize = 20_000;

impl Document {
    /// The lines not learnt yet (a line twice in the text and once before is
    /// new once), which are from now on learnt; empty for a document over
    /// `MAX_LEARN_LINES`.
    pub fn lines_to_learn(&mut self) -> String {
        if self.text.lines().nth(MAX_LEARN_LINES).is_some() {
            return String::new();
        }
        let mut seen: HashMap<u64, u32> = HashMap::new();
        let mut out = String::new();
        for line in self.text.lines() {
            let h = line_hash(line);
            let n = seen.entry(h).or_default();
            *n += 1;
            if *n > self.learnt.get(&h).copied().unwrap_or(0) {
                out.push_str(line);
                out.push('\n');
            }
        }
        for (h, n) in seen {
            let old = self.learnt.entry(h).or_default();
            *old = (*old).max(n);
        }
        out
    }
}

fn line_hash(line: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    line.hash(&mut h);
    h.finish()
}

#[derive(Default)]
pub struct Documents {
    open: HashMap<String, Document>,
    next_id: u64,
}

/// Why a position or an edit does not fit the document.
#[derive(Debug, PartialEq, Eq)]
pub struct OutOfRange(pub String);

impl Documents {
    /// Opens (or reopens) `uri`; returns the engine id of a document it replaces.
    pub fn open(&mut self, uri: &str, language: &str, version: i32, text: String) -> Option<u64> {
        self.next_id += 1;
        let doc = Document {
            id: self.next_id,
            language: language.to_string(),
            version,
            text,
            learnt: HashMap::new(),
        };
        self.open.insert(uri.to_string(), doc).map(|d| d.id)
    }

    pub fn close(&mut self, uri: &str) -> Option<Document> {
        self.open.remove(uri)
    }

    pub fn get(&self, uri: &str) -> Option<&Document> {
        self.open.get(uri)
    }

    pub fn get_mut(&mut self, uri: &str) -> Option<&mut Document> {
        self.open.get_mut(uri)
    }

    /// Applies didChange's edits in order. An edit out of range stops there
    /// (the edits before it stay): the client's view and ours differ, and
    /// the next whole-text change or didOpen repairs it.
    pub fn change(
        &mut self,
        uri: &str,
        version: i32,
        changes: Vec<TextDocumentContentChangeEvent>,
        enc: Encoding,
    ) -> Result<(), OutOfRange> {
        let doc = self.open.get_mut(uri).ok_or_else(|| {
            OutOfRange(format!("{} is not open", super::transport::cut(uri, 200)))
        })?;
        doc.version = version;
        for change in changes {
            match change.range {
                None => doc.text = change.text,
                Some(range) => {
                    let (start, end) = byte_range(&doc.text, range, enc)?;
                    doc.text.replace_range(start..end, &change.text);
                }
            }
        }
        Ok(())
    }
}

fn byte_range(text: &str, range: Range, enc: Encoding) -> Result<(usize, usize), OutOfRange> {
    let start = offset(text, range.start, enc)?;
    let end = offset(text, range.end, enc)?;
    if start > end {
        return Err(OutOfRange(format!(
            "range ends before it starts: {range:?}"
        )));
    }
    Ok((start, end))
}

/// Byte offset of `pos` in `text`. A line past the end is an error; a
/// character past the end of its line means the end of the line (as the
/// LSP specification says), and one inside a UTF-16 surrogate pair the
/// character's start.
pub fn offset(text: &str, pos: Position, enc: Encoding) -> Result<usize, OutOfRange> {
    let line_start = line_start(text, pos.line as usize).ok_or_else(|| {
        OutOfRange(format!(
            "line {} is past the document's end ({} lines)",
            pos.line,
            text.split('\n').count()
        ))
    })?;
    let line = &text[line_start..];
    let line = &line[..line.find('\n').unwrap_or(line.len())];
    let line = line.strip_suffix('\r').unwrap_or(line);
    let want = pos.character as usize;
    let mut units = 0;
    for (i, c) in line.char_indices() {
        if units >= want {
            return Ok(line_start + i);
        }
        units += match enc {
            Encoding::Utf8 => c.len_utf8(),
            Encoding::Utf16 => c.len_utf16(),
        };
        if units > want {
            return Ok(line_start + i);
        }
    }
    Ok(line_start + line.len())
}

/// Length of `s` in the units of `enc`.
pub fn units(s: &str, enc: Encoding) -> u32 {
    match enc {
        Encoding::Utf8 => s.len() as u32,
        Encoding::Utf16 => s.chars().map(char::len_utf16).sum::<usize>() as u32,
    }
}

fn line_start(text: &str, line: usize) -> Option<usize> {
    if line == 0 {
        return Some(0);
    }
    text.match_indices('\n').nth(line - 1).map(|(i, _)| i + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pos(line: u32, character: u32) -> Position {
        Position { line, character }
    }

    fn edit(range: Option<(u32, u32, u32, u32)>, text: &str) -> TextDocumentContentChangeEvent {
        TextDocumentContentChangeEvent {
            range: range.map(|(a, b, c, d)| Range {
                start: pos(a, b),
                end: pos(c, d),
            }),
            range_length: None,
            text: text.to_string(),
        }
    }

    #[test]
    fn offsets_count_utf16_units_and_clamp_to_the_line() {
        let t = "a😀b\r\nçd\n";
        assert_eq!(offset(t, pos(0, 1), Encoding::Utf16), Ok(1));
        assert_eq!(offset(t, pos(0, 2), Encoding::Utf16), Ok(1)); // inside the pair
        assert_eq!(offset(t, pos(0, 3), Encoding::Utf16), Ok(5));
        assert_eq!(offset(t, pos(0, 99), Encoding::Utf16), Ok(6)); // before \r\n
        assert_eq!(offset(t, pos(1, 1), Encoding::Utf16), Ok(10));
        assert_eq!(offset(t, pos(1, 2), Encoding::Utf8), Ok(10));
        assert_eq!(offset(t, pos(2, 0), Encoding::Utf16), Ok(12));
        assert!(offset(t, pos(3, 0), Encoding::Utf16).is_err());
    }

    #[test]
    fn lines_are_learnt_once() {
        let mut docs = Documents::default();
        docs.open("u", "text", 1, "a b\nc d\na b\n".into());
        let doc = docs.get_mut("u").unwrap();
        assert_eq!(doc.lines_to_learn(), "a b\nc d\na b\n");
        assert_eq!(doc.lines_to_learn(), "");
        doc.text = "a b\nc d\na b\na b\ne f".into();
        assert_eq!(doc.lines_to_learn(), "a b\ne f\n");
        doc.text = "x\n".repeat(MAX_LEARN_LINES + 1);
        assert_eq!(doc.lines_to_learn(), "");
    }

    #[test]
    fn incremental_edits_apply_in_order() {
        let mut docs = Documents::default();
        docs.open("u", "text", 1, "hello world\nsecond".into());
        let changes = vec![
            edit(Some((0, 5, 0, 11)), ", there"),
            edit(Some((1, 0, 1, 0)), "a "),
            edit(Some((1, 8, 1, 8)), "!"),
        ];
        docs.change("u", 2, changes, Encoding::Utf16).unwrap();
        assert_eq!(docs.get("u").unwrap().text, "hello, there\na second!");
        docs.change("u", 3, vec![edit(None, "new")], Encoding::Utf16)
            .unwrap();
        assert_eq!(docs.get("u").unwrap().text, "new");
        let bad = vec![edit(Some((5, 0, 5, 1)), "x")];
        assert!(docs.change("u", 4, bad, Encoding::Utf16).is_err());
        assert_eq!(docs.get("u").unwrap().text, "new");
        assert!(docs.change("nope", 1, vec![], Encoding::Utf16).is_err());
    }
}
