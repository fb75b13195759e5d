//! The separator a next word needs after what is before the cursor, so that
//! accepting a next-word candidate never glues two words together
//! (`open(path)` + `as` reads `open(path) as`). It is part of the
//! candidate's insert text, so the ghost text, the completion menu and any
//! other client insert the same thing.

use super::kind::TextKind;
use super::Prediction;

/// What goes between `before` (the text before the cursor, which ends
/// where a next word would start: no partial word) and a next word in text
/// of `kind`: a space or nothing.
///
/// A space after `,` `;` `=` and closing brackets in every kind of text
/// (`a, b`, `x = y`, `f(x) as`), after `:` except in `::` (`x: int`, not
/// `std::vec`), and after `.` `!` `?` in prose, comments and strings (the
/// end of a sentence; in code `.` is member access). Nothing after a blank,
/// an opening bracket, a quote or any other character (`f(x`, `"word`,
/// `a.b`, `->next`). The text's own habit wins: where that character is
/// followed by a word more often than by a space earlier in `before`
/// (`x=1`, `f(a,b)`), nothing. Nothing either when the kind of text is not
/// known (a client that does not say is given the words alone, as before).
pub fn before_word(before: &str, kind: TextKind) -> &'static str {
    if kind == TextKind::Unknown {
        return "";
    }
    let mut rev = before.chars().rev();
    let Some(last) = rev.next() else {
        return "";
    };
    let space = match last {
        ',' | ';' | '=' | ')' | ']' | '}' => true,
        ':' => rev.next() != Some(':'),
        '.' | '!' | '?' => kind.is_wordy(),
        _ => false,
    };
    if space && !glued_by_habit(&before[..before.len() - last.len_utf8()], last) {
        " "
    } else {
        ""
    }
}

/// In `text`, is `ch` followed directly by a word more often than by a space?
fn glued_by_habit(text: &str, ch: char) -> bool {
    let (mut spaced, mut glued) = (0u32, 0u32);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != ch {
            continue;
        }
        match chars.peek() {
            Some(' ') => spaced += 1,
            Some(&n) if n.is_alphanumeric() || n == '_' => glued += 1,
            _ => {}
        }
    }
    glued > spaced
}

/// Prepends `sep` to the inserts (and the ghost) that start a word.
pub fn add(pred: &mut Prediction, sep: &str) {
    if sep.is_empty() {
        return;
    }
    for c in pred.candidates.iter_mut() {
        if c.replace == 0 && starts_a_word(&c.insert) {
            c.insert.insert_str(0, sep);
        }
    }
    if starts_a_word(&pred.ghost) {
        pred.ghost.insert_str(0, sep);
    }
}

/// Does `insert` start a word (so a separator may be needed before it)?
pub fn starts_a_word(insert: &str) -> bool {
    insert
        .chars()
        .next()
        .is_some_and(|c| c.is_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_space_after_closing_brackets_and_assignments() {
        for b in [
            "with open(path)",
            "lines =",
            "int main(int argc,",
            "x: ",
            "a[0]",
            "} ",
        ] {
            let want = if b.ends_with(' ') { "" } else { " " };
            assert_eq!(before_word(b, TextKind::Code), want, "{b:?}");
        }
        assert_eq!(before_word("let x:", TextKind::Code), " ");
    }

    #[test]
    fn nothing_where_words_attach() {
        for b in [
            "open(", "std::", "self.", "p->", "\"", "", "a\n", "x = [", "#",
        ] {
            assert_eq!(before_word(b, TextKind::Code), "", "{b:?}");
        }
    }

    #[test]
    fn the_texts_own_habit_wins() {
        assert_eq!(before_word("a=1\nb=2\nc=", TextKind::Code), "");
        assert_eq!(before_word("f(a,b)\ng(c,", TextKind::Code), "");
        assert_eq!(before_word("a = 1\nb=2\nc = 3\nd=", TextKind::Code), " ");
        assert_eq!(before_word("f(a, b)\ng(c,", TextKind::Code), " ");
    }

    #[test]
    fn sentence_ends_take_a_space_in_wordy_text_only() {
        assert_eq!(before_word("It rained.", TextKind::Prose), " ");
        assert_eq!(before_word("// It rained.", TextKind::Comment), " ");
        assert_eq!(before_word("Really?", TextKind::String), " ");
        assert_eq!(before_word("self.", TextKind::Code), "");
        assert_eq!(before_word("end.", TextKind::Unknown), "");
        assert_eq!(before_word("f(x)", TextKind::Unknown), "");
    }
}
