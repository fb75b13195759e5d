//! The LSP session: lifecycle (initialize … shutdown, exit), the open
//! documents, and completion / inline completion answered by the engine on
//! this thread. Messages arrive from the reader thread through a channel;
//! before answering a completion, the ones already waiting are looked at,
//! so a cancelled or superseded request costs no engine call.
//!
//! Secret files (`privacy`) are neither kept, predicted in nor learnt from.
//! Other documents' words are learnt (the user's history, shared by every
//! document of the session) when they are saved and when they are closed.

use super::answer;
use super::documents::{offset, Documents, Encoding};
use super::privacy::SecretFiles;
use super::transport::{self, Frame};
use crate::engine::{Engine, Prediction};
use log::{debug, error, info, warn};
use lsp_server::{ErrorCode, Message, Notification, Request, RequestId, Response};
use lsp_types::{
    CompletionOptions, DidChangeTextDocumentParams, DidCloseTextDocumentParams,
    DidOpenTextDocumentParams, DidSaveTextDocumentParams, InitializeParams, InitializeResult,
    OneOf, PositionEncodingKind, ServerCapabilities, ServerInfo, TextDocumentPositionParams,
    TextDocumentSyncCapability, TextDocumentSyncKind, TextDocumentSyncOptions,
    TextDocumentSyncSaveOptions,
};
use serde::de::DeserializeOwned;
use std::collections::{HashSet, VecDeque};
use std::hash::{Hash, Hasher};
use std::io::Write;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc::Receiver;

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
    enc: Encoding,
    phase: Phase,
    out: W,
    inbox: Receiver<Frame>,
    /// Messages taken from the channel ahead of their turn.
    waiting: VecDeque<Frame>,
    cancelled: HashSet<RequestId>,
}

/// How the session ended: the process's exit code.
pub type ExitCode = i32;

impl<W: Write> Server<W> {
    pub fn new(engine: Engine, inbox: Receiver<Frame>, out: W) -> Self {
        Server {
            engine,
            docs: Documents::default(),
            secrets: SecretFiles::default(),
            enc: Encoding::Utf16,
            phase: Phase::Starting,
            out,
            inbox,
            waiting: VecDeque::new(),
            cancelled: HashSet::new(),
        }
    }

    /// Serves until `exit` (0 after a shutdown, else 1, as LSP says) or the
    /// end of input.
    pub fn run(mut self) -> ExitCode {
        loop {
            let frame = match self.waiting.pop_front() {
                Some(f) => f,
                None => match self.inbox.recv() {
                    Ok(f) => f,
                    Err(_) => {
                        info!("input closed, exiting");
                        return i32::from(self.phase != Phase::ShutDown);
                    }
                },
            };
            match frame {
                Frame::Bad { code, why } => {
                    warn!("bad input: {why}");
                    if let Err(e) = transport::write_error(&mut self.out, code, &why) {
                        error!("cannot write to the client: {e}");
                    }
                }
                Frame::Message(Message::Request(r)) => self.request(r),
                Frame::Message(Message::Notification(n)) => {
                    if n.method == "exit" {
                        info!("exit");
                        return i32::from(self.phase != Phase::ShutDown);
                    }
                    self.notification(n);
                }
                Frame::Message(Message::Response(r)) => debug!("ignored a response ({:?})", r.id),
            }
        }
    }

    fn send(&mut self, msg: Message) {
        if let Err(e) = transport::write(&mut self.out, msg) {
            error!("cannot write to the client: {e}");
        }
    }

    fn reply<T: serde::Serialize>(&mut self, id: RequestId, result: T) {
        self.send(Response::new_ok(id, result).into());
    }

    fn fail(&mut self, id: RequestId, code: ErrorCode, why: String) {
        debug!("request {id} failed: {why}");
        self.send(Response::new_err(id, code as i32, why).into());
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
                format!("{} before initialize", r.method),
            ),
            (Phase::ShutDown, _) => self.fail(
                r.id,
                ErrorCode::InvalidRequest,
                format!("{} after shutdown", r.method),
            ),
            (Phase::Running, "initialize") => self.fail(
                r.id,
                ErrorCode::InvalidRequest,
                "initialized already".into(),
            ),
            (Phase::Running, "shutdown") => {
                self.phase = Phase::ShutDown;
                self.reply(r.id, ());
            }
            (Phase::Running, COMPLETION) => self.complete(r, COMPLETION),
            (Phase::Running, INLINE) => self.complete(r, INLINE),
            (Phase::Running, other) => {
                let why = format!("unknown method {other}");
                self.fail(r.id, ErrorCode::MethodNotFound, why)
            }
        }
    }

    fn initialize(&mut self, r: Request) {
        let params: InitializeParams = match parse(&r.params) {
            Ok(p) => p,
            Err(why) => return self.fail(r.id, ErrorCode::InvalidParams, why),
        };
        self.secrets = SecretFiles::from_options(params.initialization_options.as_ref());
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
            return debug!("ignored {} (not running)", n.method);
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
                debug!("ignored notification {other}");
                Ok(())
            }
        };
        if let Err(why) = outcome {
            warn!("{}: {why}", n.method);
        }
    }

    fn did_open(&mut self, p: DidOpenTextDocumentParams) {
        let d = p.text_document;
        if self.secrets.matches(d.uri.as_str()) {
            return debug!("{} is a secret file: not kept", d.uri.as_str());
        }
        if let Some(old) = self
            .docs
            .open(d.uri.as_str(), &d.language_id, d.version, d.text)
        {
            self.engine.forget(old);
        }
    }

    fn did_change(&mut self, p: DidChangeTextDocumentParams) {
        let d = p.text_document;
        if self.secrets.matches(d.uri.as_str()) {
            return;
        }
        if let Err(e) = self
            .docs
            .change(d.uri.as_str(), d.version, p.content_changes, self.enc)
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

    /// The engine learns the words of open document `uri` (never a secret
    /// file: those are not kept), unless it learnt this very text already.
    fn learn(&mut self, uri: &str) {
        let Some(doc) = self.docs.get_mut(uri) else {
            return;
        };
        let mut h = std::collections::hash_map::DefaultHasher::new();
        doc.text.hash(&mut h);
        let hash = h.finish();
        if doc.learnt == Some(hash) {
            return;
        }
        doc.learnt = Some(hash);
        let (engine, text) = (&mut self.engine, &doc.text);
        if catch_unwind(AssertUnwindSafe(|| engine.learn(text))).is_err() {
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
                    && parse::<TextDocumentPositionParams>(&r.params)
                        .is_ok_and(|p| p.text_document.uri.as_str() == uri)
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
        let at: TextDocumentPositionParams = match parse(&r.params) {
            Ok(p) => p,
            Err(why) => return self.fail(r.id, ErrorCode::InvalidParams, why),
        };
        let uri = at.text_document.uri.as_str().to_string();
        let pos = at.position;
        let stale = self.superseded(method, &uri);
        let prediction = match self.predict(&uri, pos, stale) {
            Ok(p) => p,
            Err((code, why)) => return self.fail(r.id, code, why),
        };
        if method == COMPLETION {
            let list = answer::completion_list(&prediction, pos, self.enc);
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
        if self.secrets.matches(uri) {
            return Ok(Prediction::default());
        }
        let doc = self
            .docs
            .get(uri)
            .ok_or_else(|| (ErrorCode::InvalidParams, format!("{uri} is not open")))?;
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

fn parse<T: DeserializeOwned>(params: &serde_json::Value) -> Result<T, String> {
    serde_json::from_value(params.clone()).map_err(|e| format!("bad params: {e}"))
}
