//! The `laya-tok-1` tokenizer (models/FORMAT.md): words, newlines and single
//! punctuation characters; blanks are skipped. Also splits the text before the
//! cursor into context and the word being typed (the prefix).

/// METRICS.md's word character: ASCII `[A-Za-z0-9_]`.
#[inline]
pub fn is_word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

#[inline]
pub(crate) fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// Blanks carry no token: space, tab, `\r`, `\v`, `\f`.
#[inline]
fn is_blank(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\r' | '\u{0b}' | '\u{0c}')
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenKind {
    Word,
    Newline,
    /// Any other single code point (punctuation, operators, non-ASCII).
    Symbol,
}

/// One token: its text (`"\n"` for a newline) and byte offset in the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Token<'a> {
    pub text: &'a str,
    pub start: usize,
    pub kind: TokenKind,
}

/// Iterator over the tokens of a text.
pub struct Tokens<'a> {
    text: &'a str,
    pos: usize,
}

impl<'a> Iterator for Tokens<'a> {
    type Item = Token<'a>;

    fn next(&mut self) -> Option<Token<'a>> {
        let bytes = self.text.as_bytes();
        loop {
            let start = self.pos;
            let c = self.text[start..].chars().next()?;
            if is_word_char(c) {
                let len = bytes[start..]
                    .iter()
                    .position(|&b| !is_word_byte(b))
                    .unwrap_or(bytes.len() - start);
                self.pos = start + len;
                return Some(Token {
                    text: &self.text[start..self.pos],
                    start,
                    kind: TokenKind::Word,
                });
            }
            self.pos = start + c.len_utf8();
            if is_blank(c) {
                continue;
            }
            let kind = if c == '\n' {
                TokenKind::Newline
            } else {
                TokenKind::Symbol
            };
            return Some(Token {
                text: &self.text[start..self.pos],
                start,
                kind,
            });
        }
    }
}

/// The tokens of `text`, left to right.
pub fn tokenize(text: &str) -> Tokens<'_> {
    Tokens { text, pos: 0 }
}

/// The last `n` tokens of `text` (all of them when it has fewer), with
/// their offsets in `text`, found without reading the rest.
pub fn tokenize_tail(text: &str, n: usize) -> impl Iterator<Item = Token<'_>> {
    let cut = tail_start(text, n);
    tokenize(&text[cut..]).map(move |t| Token {
        start: t.start + cut,
        ..t
    })
}

/// Where the last `n` tokens of `text` start (0 when it has fewer): the
/// tokens of `&text[tail_start(text, n)..]` are the last `n` of `text`'s,
/// found without reading the rest.
pub fn tail_start(text: &str, n: usize) -> usize {
    let b = text.as_bytes();
    let mut end = b.len();
    for _ in 0..n {
        // Blanks carry no token.
        while end > 0 && matches!(b[end - 1], b' ' | b'\t' | b'\r' | 0x0b | 0x0c) {
            end -= 1;
        }
        if end == 0 {
            return 0;
        }
        if is_word_byte(b[end - 1]) {
            while end > 0 && is_word_byte(b[end - 1]) {
                end -= 1;
            }
        } else {
            // One character: back over UTF-8 continuation bytes to its start.
            end -= 1;
            while end > 0 && !text.is_char_boundary(end) {
                end -= 1;
            }
        }
    }
    end
}

/// Splits the text before the cursor into (context, prefix): the prefix is the
/// run of word characters that ends at the cursor (possibly empty).
pub fn split_prefix(before: &str) -> (&str, &str) {
    let bytes = before.as_bytes();
    let word_len = bytes.iter().rev().take_while(|&&b| is_word_byte(b)).count();
    before.split_at(before.len() - word_len)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<&str> {
        tokenize(s).map(|t| t.text).collect()
    }

    #[test]
    fn splits_words_symbols_newlines_and_skips_blanks() {
        assert_eq!(
            toks("fn main() {\n\tx_1 = 42;\r\n}"),
            vec!["fn", "main", "(", ")", "{", "\n", "x_1", "=", "42", ";", "\n", "}"]
        );
        assert_eq!(toks("café ü"), vec!["caf", "é", "ü"]);
        assert_eq!(toks(" \t\u{0c}\u{0b}"), Vec::<&str>::new());
    }

    #[test]
    fn a_tail_has_the_last_tokens() {
        let text = "fn main() {\n\tx_1 = 42;\r\n}  café ü über_x, \u{0c}end";
        let all: Vec<Token> = tokenize(text).collect();
        for n in 0..all.len() + 3 {
            let tail: Vec<Token> = tokenize_tail(text, n).collect();
            assert_eq!(tail, all[all.len().saturating_sub(n)..], "n = {n}");
        }
    }

    #[test]
    fn prefix_is_the_trailing_word() {
        assert_eq!(split_prefix("hello wor"), ("hello ", "wor"));
        assert_eq!(split_prefix("hello "), ("hello ", ""));
        assert_eq!(split_prefix("a.b_c9"), ("a.", "b_c9"));
        assert_eq!(split_prefix("é"), ("é", ""));
        assert_eq!(split_prefix(""), ("", ""));
    }
}
