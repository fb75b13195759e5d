//! What is never learnt: secret files (by path) and lines that look like
//! secrets. The Lua side also refuses special buffers and the user's deny
//! list before any text reaches the host; this is the host's own guard.

/// File names and folders whose text is never learnt.
pub fn is_secret_path(path: &str) -> bool {
    let p = path.replace('\\', "/");
    let name = p.rsplit('/').next().unwrap_or("");
    let dirs = [
        "/.ssh/",
        "/.gnupg/",
        "/.password-store/",
        "/.aws/",
        "/.kube/",
    ];
    name.starts_with(".env")
        || name.starts_with("id_")
        || [".pem", ".key", ".p12", ".pfx", ".gpg", ".asc", ".kdbx"]
            .iter()
            .any(|ext| name.ends_with(ext))
        || name == ".netrc"
        || name == ".pgpass"
        || name == ".git-credentials"
        || dirs.iter().any(|d| p.contains(d))
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
        ] {
            assert!(is_secret_path(p), "{p}");
        }
        for p in [
            "/p/src/main.rs",
            "/p/README.md",
            "/p/environment.txt",
            "/p/keyboard.lua",
        ] {
            assert!(!is_secret_path(p), "{p}");
        }
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
