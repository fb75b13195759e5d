//! What the engine keeps per buffer between keystrokes.

use super::context::BufferContext;
use super::corrections::Fixes;
use super::dist::Dist;
use super::give_way::TypedPast;
use super::kind::TextKind;

/// Ghost continuation computed for (context version, accepted word).
pub(crate) struct Continuation {
    pub version: u64,
    pub word: String,
    pub text: String,
}

pub(crate) struct BufferEntry {
    pub ctx: BufferContext,
    /// The last correction search, narrowed as the unknown word is typed on.
    pub fixes: Option<Fixes>,
    pub dist: Option<Dist>,
    pub continuation: Option<Continuation>,
    /// (context version, token) of the last prediction's best candidate word.
    pub best: Option<(u64, u32)>,
    /// Tells this context from earlier ones of the same buffer number (a
    /// think-ahead job names the context it started from).
    pub serial: u64,
    /// Top candidates of the current word the user typed past.
    pub typed_past: Option<TypedPast>,
    /// The kind of text at the cursor in the last request: as the editor
    /// said or, where it did not, as the text read (`Engine::kind_at_cursor`).
    pub kind: TextKind,
    /// How the text before the cursor reads where the editor did not say
    /// (`KindShares::reads_as`), for a context version.
    pub reads_as: Option<(u64, TextKind)>,
}

impl BufferEntry {
    pub fn new(serial: u64) -> BufferEntry {
        BufferEntry {
            ctx: BufferContext::new(),
            fixes: None,
            dist: None,
            continuation: None,
            best: None,
            serial,
            typed_past: None,
            kind: TextKind::Unknown,
            reads_as: None,
        }
    }

    /// After a panic part-way through a keystroke: drops the token cache and
    /// everything derived from it, keeping the words and pairs learnt.
    pub fn recover(&mut self) {
        self.ctx.recover();
        self.fixes = None;
        self.dist = None;
        self.continuation = None;
        self.best = None;
        self.typed_past = None;
    }

    /// The model's distribution for the current context, if computed.
    pub fn current_dist(&self) -> Option<&Dist> {
        self.dist.as_ref().filter(|d| d.version == self.ctx.version)
    }
}
