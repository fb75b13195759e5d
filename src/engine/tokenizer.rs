//! The `laya-tok-1` tokenizer (models/FORMAT.md): words, newlines and single
//! punctuation characters; blanks are skipped. Also splits the text before the
//! cursor into context and the word being typed (the prefix).

/// METRICS.md's word character: ASCII `[A-Za-z0-9_]`.
#[inline]
pub fn is_word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

#[inline]
fn is_word_byte(b: u8) -> bool {
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
    fn prefix_is_the_trailing_word() {
        assert_eq!(split_prefix("hello wor"), ("hello ", "wor"));
        assert_eq!(split_prefix("hello "), ("hello ", ""));
        assert_eq!(split_prefix("a.b_c9"), ("a.", "b_c9"));
        assert_eq!(split_prefix("é"), ("é", ""));
        assert_eq!(split_prefix(""), ("", ""));
    }
}
