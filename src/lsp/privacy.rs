//! Which documents Laya never predicts in nor learns from: files whose name
//! matches a secret-file glob. The default list is the Neovim plugin's
//! `disabled_files` (lua/laya/config.lua); both must list the same globs.
//! A client may replace it with `initializationOptions.disabled_files`.

/// Globs on a file's name (its last path component), matched ignoring case:
/// `*` is any run of characters, `?` one character.
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
];

/// The secret-file globs of a session.
#[derive(Debug, Clone, PartialEq)]
pub struct SecretFiles(Vec<String>);

impl Default for SecretFiles {
    fn default() -> Self {
        SecretFiles(SECRET_FILES.iter().map(|s| s.to_string()).collect())
    }
}

impl SecretFiles {
    /// The client's list from `initializationOptions.disabled_files` when it
    /// gives one (a list of strings), else the default.
    pub fn from_options(options: Option<&serde_json::Value>) -> SecretFiles {
        let given = options
            .and_then(|o| o.get("disabled_files"))
            .and_then(|v| v.as_array());
        match given {
            Some(list) => SecretFiles(
                list.iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect(),
            ),
            None => SecretFiles::default(),
        }
    }

    /// Is the document at `uri` a secret file?
    pub fn matches(&self, uri: &str) -> bool {
        let name = file_name(uri).to_lowercase();
        !name.is_empty()
            && self
                .0
                .iter()
                .any(|g| glob(&g.to_lowercase().chars().collect::<Vec<_>>(), &name))
    }
}

/// The last path component of a URI (or a plain path), percent-decoded,
/// without query or fragment.
fn file_name(uri: &str) -> String {
    let path = uri.split(['?', '#']).next().unwrap_or("");
    let last = path.rsplit(['/', '\\']).next().unwrap_or("");
    percent_decode(last)
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Does the whole of `name` match `pattern` (`*` and `?` wildcards)?
fn glob(pattern: &[char], name: &str) -> bool {
    let name: Vec<char> = name.chars().collect();
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_file_names_match_in_any_folder_and_case() {
        let s = SecretFiles::default();
        for uri in [
            "file:///tmp/x/.env",
            "file:///tmp/x/.env.local",
            "file:///home/u/.ssh/id_ed25519",
            "file:///srv/tls/server.PEM",
            "file:///a/b.key",
            "file:///home/u/.netrc",
            "file:///home/u/.pgpass",
            "file:///a/notes.txt.gpg",
            "file:///home/u/.aws/credentials",
            "file:///app/config/secrets.yaml",
            "file:///a/%2Eenv",
            "file:///C:/Users/u/.env?x=1",
        ] {
            assert!(s.matches(uri), "{uri}");
        }
        for uri in [
            "file:///tmp/x/notes.txt",
            "file:///tmp/.env/notes.txt",
            "file:///a/environment.md",
            "file:///a/keys.txt",
            "file:///a/my_id_card.txt",
            "untitled:Untitled-1",
            "file:///",
        ] {
            assert!(!s.matches(uri), "{uri}");
        }
    }

    #[test]
    fn the_client_may_replace_the_list() {
        let opts = serde_json::json!({ "disabled_files": ["*.secret", "diary?.txt"] });
        let s = SecretFiles::from_options(Some(&opts));
        assert!(s.matches("file:///a/b.SECRET"));
        assert!(s.matches("file:///a/diary1.txt"));
        assert!(!s.matches("file:///a/diary12.txt"));
        assert!(!s.matches("file:///a/.env"));
        let none = SecretFiles::from_options(Some(&serde_json::json!({})));
        assert_eq!(none, SecretFiles::default());
        let empty = SecretFiles::from_options(Some(&serde_json::json!({ "disabled_files": [] })));
        assert!(!empty.matches("file:///a/.env"));
    }
}
