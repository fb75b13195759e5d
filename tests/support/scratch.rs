//! A scratch directory for a test, removed when dropped. Included by the
//! engine tests with `#[path = "support/scratch.rs"] mod scratch;`.

use std::path::PathBuf;

pub struct Dir {
    pub path: PathBuf,
}

impl Dir {
    /// A fresh, empty directory unique to this process, thread and `tag`.
    pub fn new(tag: &str) -> Dir {
        let path = std::env::temp_dir().join(format!(
            "laya-{tag}-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap();
        Dir { path }
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}
