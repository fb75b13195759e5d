//! What is never predicted in nor learnt from: secret files (by name and
//! folder) and lines that look like secrets. One list for every front end:
//! the host's learning, `laya protocol` and `laya lsp` use these, and the
//! Neovim plugin's default `disabled_files` and `secret_dirs` are the same
//! globs and folders (a test compares them). The Lua side also refuses
//! special buffers and the user's deny list before any text reaches the
//! host; this is the host's own guard.

/// Globs on a file's name (its last path component), matched ignoring
/// case: `*` is any run of characters, `?` one character.
pub const SECRET_FILES: &[&str] = &[
    ".env*",
    "id_*",
    "*.pem",
    "*.key",
    ".netrc",
    ".pgpass",
    "*.gpg",
    "credentials*",
    "secrets*",
    "*.p12",
    "*.pfx",
    "*.asc",
    "*.kdbx",
    ".git-credentials",
];

/// Folders (a path component) whose files are never learnt from.
pub const SECRET_DIRS: &[&str] = &[".ssh", ".gnupg", ".password-store", ".aws", ".kube"];

/// Is the file at `path` secret: its name matches one of `SECRET_FILES`
/// or it lies under one of `SECRET_DIRS`?
pub fn is_secret_path(path: &str) -> bool {
    let p = path.replace('\\', "/");
    let mut parts = p.rsplit('/');
    let name = parts.next().unwrap_or("");
    name_matches(SECRET_FILES, name) || parts.any(|dir| SECRET_DIRS.contains(&dir))
}

/// Does file name `name` match one of `globs` (ignoring case)?
pub fn name_matches<S: AsRef<str>>(globs: &[S], name: &str) -> bool {
    Globs::new(globs).matches(name)
}

/// File-name globs, ready to match (ignoring case).
#[derive(Debug, Clone, PartialEq)]
pub struct Globs(Vec<Vec<char>>);

impl Globs {
    pub fn new<S: AsRef<str>>(globs: &[S]) -> Globs {
        Globs(
            globs
                .iter()
                .map(|g| g.as_ref().to_lowercase().chars().collect())
                .collect(),
        )
    }

    /// Does file name `name` match one of them?
    pub fn matches(&self, name: &str) -> bool {
        if name.is_empty() {
            return false;
        }
        let name: Vec<char> = name.to_lowercase().chars().collect();
        self.0.iter().any(|pattern| glob(pattern, &name))
    }
}

/// Does the whole of `name` match `pattern` (`*` and `?` wildcards)?
fn glob(pattern: &[char], name: &[char]) -> bool {
    let (mut p, mut n) = (0, 0);
    // Where the last `*` was and the name position it now stands for.
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        match pattern.get(p) {
            Some('*') => {
                star = Some((p, n));
                p += 1;
            }
            Some(&c) if c == '?' || c == name[n] => {
                p += 1;
                n += 1;
            }
            _ => match star {
                Some((sp, sn)) => {
                    p = sp + 1;
                    n = sn + 1;
                    star = Some((sp, sn + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|&c| c == '*')
}

/// A line that assigns a secret (`password=`, `token:`, `API_KEY = `) or
/// carries a long random-looking token.
pub fn looks_secret(line: &str) -> bool {
    const NAMES: [&str; 8] = [
        "password",
        "passwd",
        "pass",
        "secret",
        "token",
        "key",
        "auth",
        "credentials",
    ];
    let bytes = line.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        if b != b'=' && b != b':' {
            continue;
        }
        // The name right before the `=` / `:`, past blanks and quotes.
        let head = line[..i].trim_end_matches([' ', '\t', '"', '\'']);
        // Past the last character that is not part of a name (it may be
        // several bytes long).
        let start = head
            .char_indices()
            .rfind(|&(_, c)| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
            .map_or(0, |(k, c)| k + c.len_utf8());
        let name = head[start..].to_ascii_lowercase();
        if NAMES.iter().any(|n| name.ends_with(n)) {
            return true;
        }
    }
    line.split(|c: char| c.is_whitespace() || "\"'`,;()[]{}<>=:".contains(c))
        .any(high_entropy)
}

/// A token of 24+ characters mixing letters and digits with many distinct
/// characters (keys, hashes, tokens), as opposed to a long identifier.
fn high_entropy(token: &str) -> bool {
    if token.len() < 24 {
        return false;
    }
    let digits = token.bytes().filter(u8::is_ascii_digit).count();
    let upper = token.bytes().filter(u8::is_ascii_uppercase).count();
    let lower = token.bytes().filter(u8::is_ascii_lowercase).count();
    let mut seen = [false; 256];
    token.bytes().for_each(|b| seen[b as usize] = true);
    let distinct = seen.iter().filter(|&&s| s).count();
    let classes = [digits, upper, lower].iter().filter(|&&n| n > 0).count();
    let underscores = token.bytes().filter(|&b| b == b'_' || b == b'-').count();
    // Identifiers are words joined by separators; secrets have few.
    distinct >= 16 && classes >= 2 && digits >= 3 && underscores * 8 < token.len()
}

/// `text` without the lines that look like secrets.
pub fn without_secret_lines(text: &str) -> String {
    text.lines()
        .filter(|l| !looks_secret(l))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_after_a_multibyte_character_is_read_without_a_panic() {
        assert!(looks_secret("é€password = x"));
        assert!(!looks_secret("café= x"));
        assert!(!looks_secret("日本: 語"));
    }

    #[test]
    fn secret_paths() {
        for p in [
            "/p/.env",
            "/p/.env.local",
            "/h/.ssh/config",
            "/k/server.pem",
            "/k/a.key",
            "/h/id_ed25519",
            "/h/.gnupg/x",
            "/h/.password-store/a.gpg",
            "/h/.aws/config",
            "/h/.git-credentials",
            "/h/Backup.KDBX",
            "/app/config/secrets.yaml",
            "/h/.aws/credentials",
            "C:\\Users\\u\\.ssh\\known_hosts",
        ] {
            assert!(is_secret_path(p), "{p}");
        }
        for p in [
            "/p/src/main.rs",
            "/p/README.md",
            "/p/environment.txt",
            "/p/keyboard.lua",
            "/p/my_id_card.txt",
            "/p/.sshd/notes.txt",
            "/p/keys.txt",
            "",
        ] {
            assert!(!is_secret_path(p), "{p}");
        }
    }

    /// The plugin's defaults (lua/laya/config.lua `disabled_files`,
    /// lua/laya/learn.lua `secret_dirs`) are this module's lists.
    #[test]
    fn the_plugin_lists_the_same_secret_files_and_folders() {
        let globs = crate::lua_lists::read("lua/laya/config.lua", "disabled_files");
        assert_eq!(globs, SECRET_FILES);
        // Lua patterns: '/%.ssh/' is the folder .ssh.
        let dirs: Vec<String> = crate::lua_lists::read("lua/laya/learn.lua", "M.secret_dirs")
            .iter()
            .filter_map(|d| d.strip_prefix('/')?.strip_suffix('/'))
            .map(|d| d.replace('%', ""))
            .collect();
        assert_eq!(dirs, SECRET_DIRS);
    }

    #[test]
    fn secret_lines() {
        for l in [
            "password=hunter2",
            "  token: abc",
            "export API_KEY=\"x\"",
            "aws_secret_access_key = AKIA",
            "key ghp_Q2x9ZkL0pR7mW3vT8sN1yB4cH6dF5gJ2aE0u",
            "mot de passe — password=x",
        ] {
            assert!(looks_secret(l), "{l}");
        }
        for l in [
            "The password is checked by the server.",
            "let token_count = tokens.len();",
            "fn very_long_identifier_with_many_words_in_it() {}",
            "See https://example.org/docs/reference/configuration.html",
            // A multi-byte character right before the `=` / `:`.
            "\u{c4a}=1",
            "caf\u{e9}: ouvert",
            "\u{65e5}\u{672c}: x",
        ] {
            assert!(!looks_secret(l), "{l}");
        }
    }
}
