//! The personal store on disk: one file (`personal.bin`, see `format`) in a
//! directory of its own (mode 0700, files 0600).
//!
//! Crash-safe: a save writes a temporary file, syncs it and renames it over
//! the store, so a kill at any moment leaves the old or the new store whole.
//! Several hosts at once: a save takes an exclusive lock on `personal.lock`,
//! reads the store as others left it, adds only what this host learnt since
//! its last save, and writes the sum, so nobody's learning is lost.
//! A store that cannot be read (corrupt, or from a newer Laya) is renamed
//! aside with one message, never deleted.

use super::format::{self, DecodeError};
use super::{Learnt, Rejection};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

pub const FILE: &str = "personal.bin";
const LOCK: &str = "personal.lock";
/// The default bound on the store's size.
pub const DEFAULT_MAX_BYTES: usize = 16 << 20;

/// What a save removes besides adding the new counts.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum Forget {
    #[default]
    Nothing,
    All,
    Words(Vec<String>),
}

/// The folder the Neovim plugin keeps the store in by default,
/// `stdpath('data')/laya`: `$XDG_DATA_HOME/nvim/laya`, else
/// `~/.local/share/nvim/laya` (`nvim` is `$NVIM_APPNAME` when set, as for
/// Neovim). None without a home. What `laya lsp` uses when its client
/// names no folder, so that it and the plugin share one store.
pub fn default_dir() -> Option<PathBuf> {
    let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    let data = var("XDG_DATA_HOME")
        .map(PathBuf::from)
        .or_else(|| var("HOME").map(|h| PathBuf::from(h).join(".local/share")))?;
    let app = var("NVIM_APPNAME").unwrap_or_else(|| "nvim".into());
    Some(data.join(app).join("laya"))
}

pub struct Store {
    dir: PathBuf,
    max_bytes: usize,
}

/// What a load or save found.
#[derive(Debug, Default)]
pub struct Report {
    /// The store as it is now on disk.
    pub words: usize,
    pub pairs: usize,
    pub bytes: usize,
    /// A store that could not be read and was renamed aside: the message.
    pub set_aside: Option<String>,
}

impl Store {
    pub fn new(dir: impl Into<PathBuf>, max_bytes: usize) -> Store {
        Store {
            dir: dir.into(),
            max_bytes,
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn path(&self) -> PathBuf {
        self.dir.join(FILE)
    }

    fn ensure_dir(&self) -> io::Result<()> {
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.dir)?;
        fs::set_permissions(&self.dir, fs::Permissions::from_mode(0o700))
    }

    fn lock(&self) -> io::Result<File> {
        self.ensure_dir()?;
        let f = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open(self.dir.join(LOCK))?;
        f.lock()?;
        Ok(f)
    }

    /// Reads the store (empty when there is none). An unreadable one is
    /// renamed aside and reported; only I/O errors are errors.
    pub fn load(&self) -> io::Result<(Learnt, Report)> {
        let _lock = self.lock()?;
        self.read_locked()
    }

    fn read_locked(&self) -> io::Result<(Learnt, Report)> {
        let (l, mut report) = self.read_with(format::decode)?;
        let l = l.unwrap_or_default();
        report.words = l.words.len();
        report.pairs = l.pairs.len();
        Ok((l, report))
    }

    /// Reads the store with `read` (`format::decode`, or a visitor that
    /// builds something else from the bytes): None when there is no store
    /// or it could not be read (then renamed aside and reported; the
    /// report's counts are left to the caller).
    pub fn load_with<T>(
        &self,
        read: impl FnOnce(&[u8]) -> Result<T, DecodeError>,
    ) -> io::Result<(Option<T>, Report)> {
        let _lock = self.lock()?;
        self.read_with(read)
    }

    fn read_with<T>(
        &self,
        read: impl FnOnce(&[u8]) -> Result<T, DecodeError>,
    ) -> io::Result<(Option<T>, Report)> {
        let path = self.path();
        let bytes = match fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok((None, Report::default())),
            Err(e) => return Err(e),
        };
        match read(&bytes) {
            Ok(t) => {
                let report = Report {
                    bytes: bytes.len(),
                    ..Report::default()
                };
                Ok((Some(t), report))
            }
            Err(why) => {
                let aside = self.set_aside(&why)?;
                let message = format!(
                    "personal store {} is {why}: moved to {} and starting afresh",
                    path.display(),
                    aside.display()
                );
                let report = Report {
                    set_aside: Some(message),
                    ..Report::default()
                };
                Ok((None, report))
            }
        }
    }

    fn set_aside(&self, why: &DecodeError) -> io::Result<PathBuf> {
        let tag = match why {
            DecodeError::Corrupt(_) => "corrupt".to_string(),
            DecodeError::FutureVersion(v) => format!("format{v}"),
        };
        let mut n = 0;
        loop {
            let aside = self.dir.join(format!("{FILE}.{tag}-{}-{n}", super::now()));
            if !aside.exists() {
                fs::rename(self.path(), &aside)?;
                return Ok(aside);
            }
            n += 1;
        }
    }

    /// Adds `new` (learnt since the last save) to the store as it is on
    /// disk now, after removing what `forget` names and the rejections
    /// `taken_back` (words written where they had been rejected, before
    /// `new`'s rejections, which came after); bounded by the cap.
    pub fn save(
        &self,
        new: &Learnt,
        forget: &Forget,
        taken_back: &[Rejection],
    ) -> io::Result<Report> {
        let _lock = self.lock()?;
        let (mut all, mut report) = self.read_locked()?;
        match forget {
            Forget::Nothing => {}
            Forget::All => all = Learnt::default(),
            Forget::Words(words) => words.iter().for_each(|w| all.forget_word(w)),
        }
        all.take_back(taken_back);
        all.merge(new);
        all.evict_to(self.max_bytes);
        let bytes = format::encode(&all);
        self.write_atomically(&bytes)?;
        report.words = all.words.len();
        report.pairs = all.pairs.len();
        report.bytes = bytes.len();
        Ok(report)
    }

    fn write_atomically(&self, bytes: &[u8]) -> io::Result<()> {
        // Left by a writer killed mid-save (the lock says none is writing now).
        if let Ok(entries) = fs::read_dir(&self.dir) {
            for e in entries.flatten() {
                if e.file_name()
                    .to_string_lossy()
                    .starts_with(&format!("{FILE}.tmp-"))
                {
                    let _ = fs::remove_file(e.path());
                }
            }
        }
        let tmp = self.dir.join(format!("{FILE}.tmp-{}", std::process::id()));
        let mut f = OpenOptions::new()
            .create(true)
            .truncate(true)
            .write(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        drop(f);
        fs::rename(&tmp, self.path())?;
        // The rename itself reaches the disk with the directory.
        File::open(&self.dir)?.sync_all()
    }

    /// Size in bytes and the permission bits of the directory and file
    /// (`None` where missing), for status and checkhealth.
    pub fn describe(&self) -> (Option<u64>, Option<u32>, Option<u32>) {
        let file = fs::metadata(self.path()).ok();
        let dir = fs::metadata(&self.dir).ok();
        (
            file.as_ref().map(|m| m.len()),
            dir.map(|m| m.permissions().mode() & 0o777),
            file.map(|m| m.permissions().mode() & 0o777),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmpdir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("laya-store-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        d
    }

    fn learnt(text: &str) -> Learnt {
        let mut l = Learnt::default();
        l.add_text(text, 1);
        l
    }

    #[test]
    fn saves_add_up_and_permissions_are_private() {
        let d = tmpdir("add");
        let s = Store::new(d.join("laya"), DEFAULT_MAX_BYTES);
        assert!(s.load().unwrap().0.is_empty());
        s.save(&learnt("alpha beta"), &Forget::Nothing, &[])
            .unwrap();
        // A second host's save adds to the first's.
        Store::new(d.join("laya"), DEFAULT_MAX_BYTES)
            .save(&learnt("alpha gamma"), &Forget::Nothing, &[])
            .unwrap();
        let (l, _) = s.load().unwrap();
        assert_eq!(l.words["alpha"].count, 2);
        assert_eq!(l.words["gamma"].count, 1);
        let (size, dir_mode, file_mode) = s.describe();
        assert!(size.unwrap() > 0);
        assert_eq!((dir_mode, file_mode), (Some(0o700), Some(0o600)));
        s.save(
            &Learnt::default(),
            &Forget::Words(vec!["alpha".into()]),
            &[],
        )
        .unwrap();
        assert!(!s.load().unwrap().0.words.contains_key("alpha"));
        s.save(&Learnt::default(), &Forget::All, &[]).unwrap();
        assert!(s.load().unwrap().0.is_empty());
        fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn a_save_takes_back_rejections_before_adding_the_new_ones() {
        let d = tmpdir("taken-back");
        let s = Store::new(&d, DEFAULT_MAX_BYTES);
        let mut l = Learnt::default();
        l.add_rejection("the ", "zorb", 1);
        l.add_rejection("the ", "plonk", 1);
        s.save(&l, &Forget::Nothing, &[]).unwrap();
        s.save(&l, &Forget::Nothing, &[]).unwrap();
        // Written after "the  " (the same context), then rejected there again.
        let mut again = Learnt::default();
        again.add_rejection("the ", "zorb", 2);
        let written = ("the  ".into(), "zorb".into());
        s.save(&again, &Forget::Nothing, &[written]).unwrap();
        let r = s.load().unwrap().0.rejections;
        assert_eq!(r[&("the ".into(), "zorb".into())].count, 1);
        assert_eq!(r[&("the ".into(), "plonk".into())].count, 2);
        fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn unreadable_stores_are_set_aside_not_deleted() {
        let d = tmpdir("aside");
        let s = Store::new(&d, DEFAULT_MAX_BYTES);
        s.save(&learnt("alpha"), &Forget::Nothing, &[]).unwrap();
        let good = fs::read(s.path()).unwrap();
        for (bytes, tag) in [
            (good[..good.len() - 3].to_vec(), "corrupt"),
            (
                {
                    let mut b = good.clone();
                    b[14..18].copy_from_slice(&9u32.to_le_bytes());
                    b
                },
                "format9",
            ),
        ] {
            fs::write(s.path(), &bytes).unwrap();
            let (l, report) = s.load().unwrap();
            assert!(l.is_empty());
            let msg = report.set_aside.expect("a message");
            assert!(msg.contains(tag) || msg.contains("newer"), "{msg}");
            assert!(!s.path().exists());
            let kept: Vec<_> = fs::read_dir(&d)
                .unwrap()
                .filter_map(|e| e.ok())
                .filter(|e| e.file_name().to_string_lossy().contains(tag))
                .collect();
            assert_eq!(kept.len(), 1, "{tag}");
            assert_eq!(fs::read(kept[0].path()).unwrap(), bytes);
            fs::remove_file(kept[0].path()).unwrap();
        }
        fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn a_save_cut_short_leaves_the_previous_store() {
        let d = tmpdir("torn");
        let s = Store::new(&d, DEFAULT_MAX_BYTES);
        s.save(&learnt("alpha"), &Forget::Nothing, &[]).unwrap();
        // What a writer killed mid-save leaves: half a temporary file.
        let bytes = format::encode(&learnt("alpha beta gamma"));
        let torn = d.join(format!("{FILE}.tmp-999999"));
        fs::write(&torn, &bytes[..bytes.len() / 2]).unwrap();
        let (l, report) = s.load().unwrap();
        assert!(l.words.contains_key("alpha") && report.set_aside.is_none());
        s.save(&learnt("delta"), &Forget::Nothing, &[]).unwrap();
        assert!(!torn.exists(), "the next save clears it");
        fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn concurrent_savers_lose_nothing() {
        let d = tmpdir("concurrent");
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let d = d.clone();
                std::thread::spawn(move || {
                    let s = Store::new(&d, DEFAULT_MAX_BYTES);
                    for i in 0..25 {
                        s.save(&learnt(&format!("shared w{t}x{i}")), &Forget::Nothing, &[])
                            .unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let (l, _) = Store::new(&d, DEFAULT_MAX_BYTES).load().unwrap();
        assert_eq!(l.words["shared"].count, 100);
        assert_eq!(l.words.len(), 101);
        fs::remove_dir_all(d).unwrap();
    }
}
