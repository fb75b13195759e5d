//! What kind of text the cursor is in, as the editor tells it with each
//! request (from the filetype and the syntax at the cursor): prose, a
//! comment, a string, or code. Words are preferred in the first three,
//! identifiers in code; the separator before a next word depends on it too.

/// The kind of text at the cursor; `Unknown` when the editor did not say.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TextKind {
    #[default]
    Unknown,
    Prose,
    Comment,
    String,
    Code,
}

impl TextKind {
    /// The editor's name for it (`prose`, `comment`, `string`, `code`);
    /// anything else is `Unknown`.
    pub fn parse(s: &str) -> TextKind {
        match s {
            "prose" => TextKind::Prose,
            "comment" => TextKind::Comment,
            "string" => TextKind::String,
            "code" => TextKind::Code,
            _ => TextKind::Unknown,
        }
    }

    /// Text of a document in language `id` (an LSP `languageId` or a Neovim
    /// filetype) when the editor says no more: prose for the languages of
    /// `PROSE_LANGUAGES`, else code.
    pub fn of_language(id: &str) -> TextKind {
        if PROSE_LANGUAGES.contains(&id) {
            TextKind::Prose
        } else {
            TextKind::Code
        }
    }

    /// Written for people to read: prose, comments, strings.
    pub fn is_wordy(self) -> bool {
        matches!(self, TextKind::Prose | TextKind::Comment | TextKind::String)
    }
}

/// Languages written as prose: the Neovim plugin's default
/// `prose_filetypes` (a test checks) and the other names editors give them
/// as LSP language ids.
pub const PROSE_LANGUAGES: &[&str] = &[
    "",
    "text",
    "markdown",
    "gitcommit",
    "mail",
    "rst",
    "org",
    "norg",
    "asciidoc",
    "tex",
    "plaintex",
    "help",
    // LSP language ids of the same (VS Code's and others' spellings).
    "plaintext",
    "git-commit",
    "restructuredtext",
    "latex",
    "mdx",
    "txt",
    "vimdoc",
];

/// Does `word` look like an identifier rather than a word of prose: an
/// underscore, a digit, or a capital after a small letter (camelCase)?
pub fn looks_like_code(word: &str) -> bool {
    let mut prev_lower = false;
    for c in word.chars() {
        if c == '_' || c.is_ascii_digit() || (prev_lower && c.is_uppercase()) {
            return true;
        }
        prev_lower = c.is_lowercase();
    }
    false
}

/// How much a candidate `word` keeps of its score in text of `kind`:
/// identifier-shaped words count for `code_in_words` in prose, comments and
/// strings; everything else keeps its score.
pub fn prior(kind: TextKind, word: &str, code_in_words: f32) -> f32 {
    if kind.is_wordy() && looks_like_code(word) {
        code_in_words
    } else {
        1.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_and_unknown_names_are_unknown() {
        assert_eq!(TextKind::parse("comment"), TextKind::Comment);
        assert_eq!(TextKind::parse("prose"), TextKind::Prose);
        assert_eq!(TextKind::parse(""), TextKind::Unknown);
        assert_eq!(TextKind::parse("markdown"), TextKind::Unknown);
    }

    #[test]
    fn prose_languages_are_prose_and_others_code() {
        for id in [
            "markdown",
            "plaintext",
            "text",
            "gitcommit",
            "git-commit",
            "help",
            "",
        ] {
            assert_eq!(TextKind::of_language(id), TextKind::Prose, "{id}");
        }
        for id in ["rust", "python", "lua", "Markdown"] {
            assert_eq!(TextKind::of_language(id), TextKind::Code, "{id}");
        }
    }

    /// The plugin's `prose_filetypes` (lua/laya/config.lua) are the first
    /// of `PROSE_LANGUAGES`, in order.
    #[test]
    fn the_plugin_lists_the_same_prose_filetypes() {
        let lua = crate::lua_lists::read("lua/laya/config.lua", "prose_filetypes");
        assert_eq!(lua, PROSE_LANGUAGES[..lua.len()]);
    }

    #[test]
    fn identifier_shapes_are_code() {
        for w in [
            "isFunction",
            "is_alpha",
            "utf8",
            "getElementById",
            "__init__",
        ] {
            assert!(looks_like_code(w), "{w}");
        }
        for w in ["issue", "isolation", "Weather", "NASA", "naïve", "Élan"] {
            assert!(!looks_like_code(w), "{w}");
        }
    }

    #[test]
    fn the_prior_applies_in_wordy_text_only() {
        assert_eq!(prior(TextKind::Prose, "isFunction", 0.1), 0.1);
        assert_eq!(prior(TextKind::Comment, "is_alpha", 0.1), 0.1);
        assert_eq!(prior(TextKind::Code, "isFunction", 0.1), 1.0);
        assert_eq!(prior(TextKind::Unknown, "isFunction", 0.1), 1.0);
        assert_eq!(prior(TextKind::Prose, "issue", 0.1), 1.0);
    }
}
