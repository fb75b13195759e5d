//! What a client may set in `initializationOptions` besides
//! `disabled_files` (`privacy`): the personal store, as the Neovim plugin's
//! `learn` option spells it.
//!
//! ```json
//! "learn": false                                  no store: learnt words live in memory
//! "learn": { "dir": "/path", "max_mb": 16 }       this folder, this bound
//! (absent, or a table without "dir")             the plugin's folder, stdpath('data')/laya
//! ```

use crate::learn::store::{Store, DEFAULT_MAX_BYTES};
use log::warn;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The personal store the client asks for, `default` when it names no
/// folder; None when it turns learning to disk off (or no folder is known).
pub fn store(options: Option<&Value>, default: Option<&Path>) -> Option<Store> {
    let learn = options.and_then(|o| o.get("learn"));
    let (dir, max_mb) = match learn {
        Some(Value::Bool(false)) => return None,
        Some(Value::Object(o)) => (
            o.get("dir").and_then(Value::as_str).map(expand_home),
            o.get("max_mb").and_then(Value::as_f64),
        ),
        Some(Value::Bool(true)) | Some(Value::Null) | None => (None, None),
        Some(other) => {
            warn!("initializationOptions.learn: expected false or a table, got {other}");
            (None, None)
        }
    };
    let max_bytes = match max_mb {
        Some(mb) if mb > 0.0 && mb.is_finite() => (mb * (1u64 << 20) as f64) as usize,
        Some(mb) => {
            warn!("initializationOptions.learn.max_mb: expected a number > 0, got {mb}");
            DEFAULT_MAX_BYTES
        }
        None => DEFAULT_MAX_BYTES,
    };
    let dir = dir.or_else(|| default.map(Path::to_path_buf))?;
    Some(Store::new(dir, max_bytes))
}

/// `~/x` is `$HOME/x` (clients pass paths as the user wrote them).
fn expand_home(path: &str) -> PathBuf {
    match (path.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => PathBuf::from(home).join(rest),
        _ => PathBuf::from(path),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn dir(options: Value) -> Option<PathBuf> {
        store(Some(&options), Some(Path::new("/default"))).map(|s| s.dir().to_path_buf())
    }

    #[test]
    fn the_client_names_the_folder_or_turns_it_off() {
        assert_eq!(dir(json!({})), Some("/default".into()));
        assert_eq!(dir(json!({ "learn": {} })), Some("/default".into()));
        assert_eq!(
            dir(json!({ "learn": { "dir": "/x/y" } })),
            Some("/x/y".into())
        );
        assert_eq!(dir(json!({ "learn": false })), None);
        assert_eq!(dir(json!({ "learn": "nonsense" })), Some("/default".into()));
        assert!(store(None, None).is_none());
        assert!(store(Some(&json!({ "learn": { "dir": "/z" } })), None).is_some());
    }
}
