//! The engine's side of a completion request: the text around the cursor
//! as an engine `Request`, and its `Prediction` as LSP completion items and
//! inline completion items — the same candidates, in the same order, that
//! the Neovim plugin shows (item 1 is the ghost text's word, a ghost that
//! runs on into further words included).

use super::documents::{units, Encoding};
use crate::engine::kind::TextKind;
use crate::engine::{Prediction, Request};
use lsp_types::{
    CompletionItemKind, InlineCompletionItem, InlineCompletionList, InsertTextFormat, Position,
    Range,
};
use serde::{Serialize, Serializer};

/// Most bytes of text before the cursor given to the engine (as the Neovim
/// plugin's context.max_bytes).
pub const MAX_BEFORE: usize = 4096;
/// Most lines above the cursor's given to the engine (context.max_lines).
pub const MAX_LINES: usize = 64;
/// Candidates asked of the engine per request (ghost + menu).
pub const CANDIDATES: usize = 8;

/// The engine request for the cursor at byte `at` of `text`.
pub fn request<'a>(id: u64, text: &'a str, at: usize, language: &'a str) -> Request<'a> {
    let head = &text[..at];
    let mut start = head.len().saturating_sub(MAX_BEFORE);
    while !head.is_char_boundary(start) {
        start += 1;
    }
    if let Some((i, _)) = head[start..].rmatch_indices('\n').nth(MAX_LINES) {
        start += i + 1;
    }
    Request {
        buffer: id,
        before: &head[start..],
        filetype: language,
        kind: TextKind::of_language(language),
        k: CANDIDATES,
        seen_last: false,
        learn: false,
    }
}

/// One candidate as the text replacing the typed prefix, with where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Choice {
    pub text: String,
    pub source: &'static str,
}

/// The candidates, best first, as texts that replace the word typed so far
/// (`pred.prefix`): the ghost text extends the candidate it starts with, or
/// comes first on its own.
pub fn choices(pred: &Prediction) -> Vec<Choice> {
    let mut out: Vec<Choice> = pred
        .candidates
        .iter()
        .map(|c| {
            let keep = pred.prefix.chars().count().saturating_sub(c.replace);
            let kept: String = pred.prefix.chars().take(keep).collect();
            Choice {
                text: kept + first_line(&c.insert),
                source: c.source.as_str(),
            }
        })
        .collect();
    let ghost = first_line(&pred.ghost);
    if !ghost.is_empty() {
        let top = pred.candidates.first();
        match top {
            Some(c) if c.replace == 0 && ghost.starts_with(first_line(&c.insert)) => {
                out[0].text = format!("{}{ghost}", pred.prefix);
            }
            _ => out.insert(
                0,
                Choice {
                    text: format!("{}{ghost}", pred.prefix),
                    source: "model",
                },
            ),
        }
    }
    out.dedup_by(|a, b| a.text == b.text);
    out
}

fn first_line(s: &str) -> &str {
    s.split('\n').next().unwrap_or("")
}

/// The range of the typed prefix, which ends at `cursor`.
fn prefix_range(pred: &Prediction, cursor: Position, enc: Encoding) -> Range {
    let width = units(&pred.prefix, enc).min(cursor.character);
    Range {
        start: Position {
            line: cursor.line,
            character: cursor.character - width,
        },
        end: cursor,
    }
}

/// textDocument/completion's answer (a CompletionList): incomplete, so
/// that clients ask again as the user types (the next key changes the
/// prediction). Borrows the texts of `choices`: it is serialized straight
/// into the response.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Completions<'a> {
    pub is_incomplete: bool,
    pub items: Vec<Item<'a>>,
}

/// One CompletionItem as Laya sends it: plain text (kind Text) replacing
/// the typed prefix, ranked by `sortText`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Item<'a> {
    pub label: &'a str,
    kind: CompletionItemKind,
    detail: Detail,
    pub sort_text: Rank,
    /// What clients filter on: a correction need not start with what was
    /// typed, so it is filtered as that.
    pub filter_text: &'a str,
    insert_text_format: InsertTextFormat,
    pub text_edit: Edit<'a>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Edit<'a> {
    pub range: Range,
    pub new_text: &'a str,
}

/// "Laya (SOURCE)", written without a String of its own.
#[derive(Debug)]
struct Detail(&'static str);

impl Serialize for Detail {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&format_args!("Laya ({})", self.0))
    }
}

/// The rank as sortText: "0000", "0001", …
#[derive(Debug, PartialEq)]
pub struct Rank(pub usize);

impl Serialize for Rank {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&format_args!("{:04}", self.0))
    }
}

pub fn completion_list<'a>(
    pred: &'a Prediction,
    choices: &'a [Choice],
    cursor: Position,
    enc: Encoding,
) -> Completions<'a> {
    let range = prefix_range(pred, cursor, enc);
    let items = choices
        .iter()
        .enumerate()
        .map(|(i, c)| Item {
            label: &c.text,
            kind: CompletionItemKind::TEXT,
            detail: Detail(c.source),
            sort_text: Rank(i),
            filter_text: if c.text.starts_with(&pred.prefix) {
                &c.text
            } else {
                &pred.prefix
            },
            insert_text_format: InsertTextFormat::PLAIN_TEXT,
            text_edit: Edit {
                range,
                new_text: &c.text,
            },
        })
        .collect();
    Completions {
        is_incomplete: true,
        items,
    }
}

/// textDocument/inlineCompletion's answer: the ghost text, as the word
/// typed so far followed by it; nothing when the engine is not confident.
pub fn inline_list(pred: &Prediction, cursor: Position, enc: Encoding) -> InlineCompletionList {
    let ghost = first_line(&pred.ghost);
    let items = if ghost.is_empty() {
        Vec::new()
    } else {
        vec![InlineCompletionItem {
            insert_text: format!("{}{ghost}", pred.prefix),
            filter_text: None,
            range: Some(prefix_range(pred, cursor, enc)),
            command: None,
            insert_text_format: Some(InsertTextFormat::PLAIN_TEXT),
        }]
    };
    InlineCompletionList { items }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{Candidate, Source};

    fn cand(word: &str, insert: &str, replace: usize) -> Candidate {
        Candidate {
            word: word.into(),
            insert: insert.into(),
            replace,
            source: Source::Buffer,
            score: 0.5,
        }
    }

    #[test]
    fn the_ghost_extends_item_one_and_order_is_kept() {
        let pred = Prediction {
            prefix: "zep".into(),
            candidates: vec![
                cand("zephyr", "hyr", 0),
                cand("zeppelin", "pelin", 0),
                cand("zap", "ap", 2),
            ],
            ghost: "hyr wind".into(),
        };
        let texts: Vec<String> = choices(&pred).into_iter().map(|c| c.text).collect();
        assert_eq!(texts, ["zephyr wind", "zeppelin", "zap"]);
        let cursor = Position {
            line: 3,
            character: 7,
        };
        let ch = choices(&pred);
        let list = completion_list(&pred, &ch, cursor, Encoding::Utf16);
        assert!(list.is_incomplete);
        let sort: Vec<_> = list.items.iter().map(|i| i.sort_text.0).collect();
        assert_eq!(sort, [0, 1, 2]);
        let edit = &list.items[2].text_edit;
        assert_eq!(edit.range.start.character, 4);
        assert_eq!(list.items[2].filter_text, "zep");
        // As the LSP types read it.
        let json = serde_json::to_value(&list).unwrap();
        let typed: lsp_types::CompletionList = serde_json::from_value(json.clone()).unwrap();
        let item = &typed.items[2];
        assert_eq!(item.sort_text.as_deref(), Some("0002"));
        assert_eq!(item.detail.as_deref(), Some("Laya (buffer)"));
        assert_eq!(item.kind, Some(CompletionItemKind::TEXT));
        assert_eq!(item.insert_text_format, Some(InsertTextFormat::PLAIN_TEXT));
        let Some(lsp_types::CompletionTextEdit::Edit(e)) = &item.text_edit else {
            panic!("no text edit: {json}");
        };
        assert_eq!((e.new_text.as_str(), e.range.start.character), ("zap", 4));
        let inline = inline_list(&pred, cursor, Encoding::Utf16);
        assert_eq!(inline.items[0].insert_text, "zephyr wind");
    }

    #[test]
    fn the_request_is_bounded_and_cut_at_characters() {
        let text = format!("{}é tail\nnext", "x".repeat(5000));
        let at = text.find(" tail").unwrap();
        let r = request(1, &text, at, "text");
        assert!(r.before.len() <= MAX_BEFORE && r.before.ends_with('é'));
        let lines = "a\n".repeat(200);
        let r = request(1, &lines, lines.len(), "text");
        assert_eq!(r.before.matches('\n').count(), MAX_LINES);
        // The kind of text is the document's language's.
        assert_eq!(request(1, "x", 1, "markdown").kind, TextKind::Prose);
        assert_eq!(request(1, "x", 1, "plaintext").kind, TextKind::Prose);
        assert_eq!(request(1, "x", 1, "rust").kind, TextKind::Code);
    }
}
