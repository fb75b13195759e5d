//! Which documents Laya never predicts in nor learns from: files whose name
//! matches a secret-file glob, by default the one list of
//! `learn::privacy::SECRET_FILES` (the Neovim plugin's `disabled_files`).
//! A client may replace it with `initializationOptions.disabled_files`;
//! learning also refuses what `learn::privacy::is_secret_path` does.

use crate::learn::privacy::{Globs, SECRET_FILES};

/// The secret-file globs of a server.
#[derive(Debug, Clone, PartialEq)]
pub struct SecretFiles(Globs);

impl Default for SecretFiles {
    fn default() -> Self {
        SecretFiles(Globs::new(SECRET_FILES))
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
            Some(list) => {
                let globs: Vec<&str> = list.iter().filter_map(|v| v.as_str()).collect();
                SecretFiles(Globs::new(&globs))
            }
            None => SecretFiles::default(),
        }
    }

    /// Is the document at `uri` a secret file?
    pub fn matches(&self, uri: &str) -> bool {
        self.0.matches(file_name(&uri_path(uri)))
    }
}

/// The path of a URI (or a plain path), percent-decoded, without scheme,
/// authority, query or fragment: what the privacy rules look at.
pub fn uri_path(uri: &str) -> String {
    let path = uri.split(['?', '#']).next().unwrap_or("");
    let path = match path.split_once("://") {
        Some((_, rest)) => rest.find('/').map_or("", |i| &rest[i..]),
        None => path,
    };
    percent_decode(path)
}

fn file_name(path: &str) -> &str {
    path.rsplit(['/', '\\']).next().unwrap_or("")
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
        assert_eq!(uri_path("file:///home/u/a%20b.txt"), "/home/u/a b.txt");
        assert_eq!(uri_path("file://host/x/.ssh/config?q#f"), "/x/.ssh/config");
        assert_eq!(uri_path("untitled:Untitled-1"), "untitled:Untitled-1");
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
