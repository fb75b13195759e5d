//! The LSP session: lifecycle (initialize … shutdown, exit), the open
//! documents, and completion / inline completion answered by the engine on
//! this thread. Messages arrive from the reader thread through a channel;
//! before answering a completion, the ones already waiting are looked at,
//! so a cancelled or superseded request costs no engine call.
//!
//! Secret files (`privacy`) are neither kept, predicted in nor learnt from.
//! Other documents' lines are learnt when they are saved and when they are
//! closed (each line once), by the engine at once and, as the Neovim host
//! does (`learn::learning`), into the personal store on disk a few seconds
//! later, at shutdown and at the end.

use super::answer;
use super::documents::{offset, Documents, Encoding};
use super::options;
use super::privacy::{uri_path, SecretFiles};
use super::transport::{self, cut, Frame};
use crate::engine::{Engine, Prediction};
use crate::learn::learning::Learning;
use log::{debug, error, info, warn};
use lsp_server::{ErrorCode, Message, Notification, Request, RequestId};
use lsp_types::{
    CompletionOptions, DidCloseTextDocumentParams, DidOpenTextDocumentParams,
    DidSaveTextDocumentParams, InitializeParams, InitializeResult, OneOf, PositionEncodingKind,
    ServerCapabilities, ServerInfo, TextDocumentContentChangeEvent, TextDocumentSyncCapability,
    TextDocumentSyncKind, TextDocumentSyncOptions, TextDocumentSyncSaveOptions,
};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use std::collections::{HashSet, VecDeque};
use std::io::Write;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::mpsc::{Receiver, RecvTimeoutError};

const COMPLETION: &str = "textDocument/completion";
const INLINE: &str = "textDocument/inlineCompletion";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Starting,
    Running,
    ShutDown,
}

pub struct Server<W: Write> {
    engine: Engine,
    docs: Documents,
    secrets: SecretFiles,
    learning: Learning,
    /// The personal store's folder when the client names none.
    default_store: Option<PathBuf>,
    enc: Encoding,
    phase: Phase,
    out: W,
    inbox: Receiver<Frame>,
    /// Messages taken from the channel ahead of their turn.
    waiting: VecDeque<Frame>,
    cancelled: HashSet<RequestId>,
    /// The last message changed a document.
    changed: bool,
}

/// How long the server waits awake for the request that usually follows a
/// didChange.
const SPIN_AFTER_CHANGE: std::time::Duration = std::time::Duration::from_micros(50);

/// How the session ended: the process's exit code.
pub type ExitCode = i32;

impl<W: Write> Server<W> {
    /// A server answering on `out` the frames that come through `inbox`;
    /// its personal store is in `default_store` unless the client names
    /// another folder or none (None: learnt words live in memory only).
    pub fn new(
        engine: Engine,
        inbox: Receiver<Frame>,
        out: W,
        default_store: Option<PathBuf>,
    ) -> Self {
        Server {
            engine,
            docs: Documents::default(),
            secrets: SecretFiles::default(),
            learning: Learning::new(None, Default::default()),
            default_store,
            enc: Encoding::Utf16,
            phase: Phase::Starting,
            out,
            inbox,
            waiting: VecDeque::new(),
            cancelled: HashSet::new(),
            changed: false,
        }
    }

    /// Serves until `exit` (0 after a shutdown, else 1, as LSP says) or the
    /// end of input; what was learnt is saved before it returns.
    pub fn run(&mut self) -> ExitCode {
        let code = loop {
            let Some(frame) = self.next_frame() else {
                info!("input closed, exiting");
                break i32::from(self.phase != Phase::ShutDown);
            };
            if let Some(code) = self.handle(frame) {
                break code;
            }
            self.learning.maybe_save();
        };
        self.learning.poll(&mut self.engine);
        self.learning.finish();
        code
    }

    /// Saves what was learnt and not saved yet (`run` does at its end).
    pub fn finish_learning(&mut self) {
        self.learning.poll(&mut self.engine);
        self.learning.finish();
    }

    /// The engine, when the server is done with it.
    pub fn into_engine(self) -> Engine {
        self.engine
    }

    /// The next frame, saving what was learnt when that is due while
    /// waiting; None at the end of input.
    fn next_frame(&mut self) -> Option<Frame> {
        if let Some(f) = self.waiting.pop_front() {
            return Some(f);
        }
        // A document change comes with a request right behind it (the
        // client asks for completions at the new cursor): waiting for it
        // awake a moment spares a sleep and a wake-up on the keystroke's path.
        if std::mem::take(&mut self.changed) {
            let until = std::time::Instant::now() + SPIN_AFTER_CHANGE;
            while std::time::Instant::now() < until {
                match self.inbox.try_recv() {
                    Ok(f) => return Some(f).filter(|f| !matches!(f, Frame::Closed)),
                    Err(std::sync::mpsc::TryRecvError::Empty) => std::hint::spin_loop(),
                    Err(std::sync::mpsc::TryRecvError::Disconnected) => return None,
                }
            }
        }
        let frame = loop {
            if !self.learning.has_news() && !self.learning.measuring() {
                break self.inbox.recv().ok();
            }
            match self.inbox.recv_timeout(self.learning.until_due()) {
                Ok(f) => break Some(f),
                Err(RecvTimeoutError::Timeout) => {
                    self.learning.poll(&mut self.engine);
                    self.learning.maybe_save()
                }
                Err(RecvTimeoutError::Disconnected) => break None,
            }
        };
        frame.filter(|f| !matches!(f, Frame::Closed))
    }

    /// Answers one frame; the exit code when it ends the server (`exit`).
    pub fn handle(&mut self, frame: Frame) -> Option<ExitCode> {
        // A personal store still loading is adopted as soon as it is read.
        self.learning.poll(&mut self.engine);
        match frame {
            Frame::Bad { code, why } => {
                warn!("bad input: {why}");
                if let Err(e) = transport::write_error(&mut self.out, None, code, &why) {
                    error!("cannot write to the client: {e}");
                }
            }
            Frame::Closed => return Some(i32::from(self.phase != Phase::ShutDown)),
            Frame::Message(Message::Request(r)) => self.request(r),
            Frame::Message(Message::Notification(n)) => {
                if n.method == "exit" {
                    info!("exit");
                    return Some(i32::from(self.phase != Phase::ShutDown));
                }
                self.notification(n);
            }
            Frame::Message(Message::Response(_)) => debug!("ignored a response"),
        }
        None
    }

    fn reply<T: serde::Serialize>(&mut self, id: RequestId, result: T) {
        if let Err(e) = transport::write_result(&mut self.out, &id, &result) {
            error!("cannot write to the client: {e}");
        }
    }

    fn fail(&mut self, id: RequestId, code: ErrorCode, why: String) {
        debug!("request {id} failed: {why}");
        if let Err(e) = transport::write_error(&mut self.out, Some(&id), code as i32, &why) {
            error!("cannot write to the client: {e}");
        }
    }

    fn request(&mut self, r: Request) {
        if self.cancelled.remove(&r.id) {
            return self.fail(r.id, ErrorCode::RequestCanceled, "cancelled".into());
        }
        match (self.phase, r.method.as_str()) {
            (Phase::Starting, "initialize") => self.initialize(r),
            (Phase::Starting, _) => self.fail(
                r.id,
                ErrorCode::ServerNotInitialized,
                format!("{} before initialize", cut(&r.method, 100)),
            ),
            (Phase::ShutDown, _) => self.fail(
                r.id,
                ErrorCode::InvalidRequest,
                format!("{} after shutdown", cut(&r.method, 100)),
            ),
            (Phase::Running, "initialize") => self.fail(
                r.id,
                ErrorCode::InvalidRequest,
                "initialized already".into(),
            ),
            (Phase::Running, "shutdown") => {
                self.phase = Phase::ShutDown;
                // Learnt words are on disk when the client hears back.
                self.learning.finish();
                self.reply(r.id, ());
            }
            (Phase::Running, COMPLETION) => self.complete(r, COMPLETION),
            (Phase::Running, INLINE) => self.complete(r, INLINE),
            (Phase::Running, other) => {
                let why = format!("unknown method {}", cut(other, 100));
                self.fail(r.id, ErrorCode::MethodNotFound, why)
            }
        }
    }

    fn initialize(&mut self, r: Request) {
        let params: InitializeParams = match parse(&r.params) {
            Ok(p) => p,
            Err(why) => return self.fail(r.id, ErrorCode::InvalidParams, why),
        };
        let opts = params.initialization_options.as_ref();
        self.secrets = SecretFiles::from_options(opts);
        let store = options::store(opts, self.default_store.as_deref());
        self.learning = Learning::new(store, Default::default());
        let engine = &mut self.engine;
        let learning = &mut self.learning;
        if catch_unwind(AssertUnwindSafe(|| learning.load(engine))).is_err() {
            error!("panicked loading the personal store");
        }
        let utf8 = params
            .capabilities
            .general
            .and_then(|g| g.position_encodings)
            .is_some_and(|e| e.contains(&PositionEncodingKind::UTF8));
        self.enc = if utf8 {
            Encoding::Utf8
        } else {
            Encoding::Utf16
        };
        // Letters, digits and the space: clients that complete only on
        // trigger characters then ask on every key of a word and for the
        // next word after a space.
        let triggers = ('a'..='z')
            .chain('A'..='Z')
            .chain('0'..='9')
            .chain(['_', ' '])
            .map(String::from)
            .collect();
        let capabilities = ServerCapabilities {
            position_encoding: Some(if utf8 {
                PositionEncodingKind::UTF8
            } else {
                PositionEncodingKind::UTF16
            }),
            text_document_sync: Some(TextDocumentSyncCapability::Options(
                TextDocumentSyncOptions {
                    open_close: Some(true),
                    change: Some(TextDocumentSyncKind::INCREMENTAL),
                    save: Some(TextDocumentSyncSaveOptions::Supported(true)),
                    ..TextDocumentSyncOptions::default()
                },
            )),
            completion_provider: Some(CompletionOptions {
                trigger_characters: Some(triggers),
                ..CompletionOptions::default()
            }),
            inline_completion_provider: Some(OneOf::Left(true)),
            ..ServerCapabilities::default()
        };
        let result = InitializeResult {
            capabilities,
            server_info: Some(ServerInfo {
                name: "laya".into(),
                version: Some(env!("CARGO_PKG_VERSION").into()),
            }),
            offset_encoding: None,
        };
        self.phase = Phase::Running;
        info!("initialized (positions in {:?})", self.enc);
        self.reply(r.id, result);
    }

    fn notification(&mut self, n: Notification) {
        if self.phase != Phase::Running {
            return debug!("ignored {} (not running)", cut(&n.method, 100));
        }
        let outcome = match n.method.as_str() {
            "textDocument/didOpen" => parse(&n.params).map(|p| self.did_open(p)),
            "textDocument/didChange" => parse(&n.params).map(|p| self.did_change(p)),
            "textDocument/didSave" => parse(&n.params).map(|p| self.did_save(p)),
            "textDocument/didClose" => parse(&n.params).map(|p| self.did_close(p)),
            "$/cancelRequest" => parse::<lsp_types::CancelParams>(&n.params).map(|p| {
                let id = match p.id {
                    lsp_types::NumberOrString::Number(n) => RequestId::from(n),
                    lsp_types::NumberOrString::String(s) => RequestId::from(s),
                };
                self.cancelled.insert(id);
            }),
            other => {
                debug!("ignored notification {}", cut(other, 100));
                Ok(())
            }
        };
        if let Err(why) = outcome {
            warn!("{}: {why}", cut(&n.method, 100));
        }
    }

    fn did_open(&mut self, p: DidOpenTextDocumentParams) {
        let d = p.text_document;
        if self.secrets.matches(d.uri.as_str()) {
            return debug!("{} is a secret file: not kept", cut(d.uri.as_str(), 200));
        }
        if let Some(old) = self
            .docs
            .open(d.uri.as_str(), &d.language_id, d.version, d.text)
        {
            self.engine.forget(old);
        }
    }

    fn did_change(&mut self, p: Changes) {
        self.changed = true;
        let d = p.text_document;
        // An open document is no secret one (those are not kept).
        if self.docs.get(&d.uri).is_none() && self.secrets.matches(&d.uri) {
            return;
        }
        if let Err(e) = self
            .docs
            .change(&d.uri, d.version, p.content_changes, self.enc)
        {
            warn!("didChange: {}", e.0);
        }
    }

    fn did_save(&mut self, p: DidSaveTextDocumentParams) {
        self.learn(p.text_document.uri.as_str());
    }

    fn did_close(&mut self, p: DidCloseTextDocumentParams) {
        let uri = p.text_document.uri.as_str();
        self.learn(uri);
        if let Some(doc) = self.docs.close(uri) {
            self.engine.forget(doc.id);
        }
    }

    /// The engine learns the lines of open document `uri` it has not
    /// learnt yet (never a secret file's: those are not kept), and so does
    /// the personal store, under the same privacy rules as the Neovim host's.
    fn learn(&mut self, uri: &str) {
        let Some(doc) = self.docs.get_mut(uri) else {
            return;
        };
        let text = doc.lines_to_learn();
        if text.is_empty() {
            return;
        }
        let path = uri_path(uri);
        let (engine, learning) = (&mut self.engine, &mut self.learning);
        if catch_unwind(AssertUnwindSafe(|| learning.learn(engine, &text, &path))).is_err() {
            error!("engine panicked in learn");
        }
    }

    /// Takes the messages already waiting off the channel, noting cancels.
    fn look_ahead(&mut self) {
        while let Ok(f) = self.inbox.try_recv() {
            if let Frame::Message(Message::Notification(n)) = &f {
                if n.method == "$/cancelRequest" {
                    self.notification(n.clone());
                    continue;
                }
            }
            self.waiting.push_back(f);
        }
    }

    /// Is a newer request of this kind for this document already waiting?
    fn superseded(&self, method: &str, uri: &str) -> bool {
        self.waiting.iter().any(|f| match f {
            Frame::Message(Message::Request(r)) => {
                r.method == method
                    && parse::<At>(&r.params).is_ok_and(|p| p.text_document.uri == uri)
            }
            _ => false,
        })
    }

    fn complete(&mut self, r: Request, method: &str) {
        self.look_ahead();
        if self.cancelled.remove(&r.id) {
            return self.fail(r.id, ErrorCode::RequestCanceled, "cancelled".into());
        }
        // CompletionParams and InlineCompletionParams both flatten the
        // document and position to the top level.
        let at: At = match parse(&r.params) {
            Ok(p) => p,
            Err(why) => return self.fail(r.id, ErrorCode::InvalidParams, why),
        };
        let uri = at.text_document.uri;
        let pos = at.position;
        let stale = self.superseded(method, &uri);
        let prediction = match self.predict(&uri, pos, stale) {
            Ok(p) => p,
            Err((code, why)) => return self.fail(r.id, code, why),
        };
        if method == COMPLETION {
            let choices = answer::choices(&prediction);
            let list = answer::completion_list(&prediction, &choices, pos, self.enc);
            self.reply(r.id, list);
        } else {
            let list = answer::inline_list(&prediction, pos, self.enc);
            self.reply(r.id, list);
        }
    }

    /// The engine's prediction at `pos` of `uri`; an empty one for a
    /// request a newer one supersedes (the client will not show it).
    fn predict(
        &mut self,
        uri: &str,
        pos: lsp_types::Position,
        stale: bool,
    ) -> Result<Prediction, (ErrorCode, String)> {
        let Some(doc) = self.docs.get(uri) else {
            // A secret file is not kept, and gets nothing.
            if self.secrets.matches(uri) {
                return Ok(Prediction::default());
            }
            let why = format!("{} is not open", cut(uri, 200));
            return Err((ErrorCode::InvalidParams, why));
        };
        let at = offset(&doc.text, pos, self.enc).map_err(|e| (ErrorCode::InvalidParams, e.0))?;
        if stale {
            return Ok(Prediction::default());
        }
        let request = answer::request(doc.id, &doc.text, at, &doc.language);
        let engine = &mut self.engine;
        catch_unwind(AssertUnwindSafe(|| engine.predict(&request))).map_err(|_| {
            error!("engine panicked in predict");
            (ErrorCode::InternalError, "the engine failed".into())
        })
    }
}

/// The params of didChange, as `DidChangeTextDocumentParams` but with the
/// URI as the client spelt it (the key of the open documents): parsing it
/// as a URI on every key would cost time for nothing.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Changes {
    text_document: VersionedDoc,
    content_changes: Vec<TextDocumentContentChangeEvent>,
}

#[derive(Deserialize)]
struct VersionedDoc {
    uri: String,
    version: i32,
}

/// A document and a position (`TextDocumentPositionParams`, which
/// CompletionParams and InlineCompletionParams flatten), the URI as spelt.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct At {
    text_document: Doc,
    position: lsp_types::Position,
}

#[derive(Deserialize)]
struct Doc {
    uri: String,
}

fn parse<T: DeserializeOwned>(params: &serde_json::Value) -> Result<T, String> {
    T::deserialize(params).map_err(|e| format!("bad params: {}", transport::describe(&e)))
}
