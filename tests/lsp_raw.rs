//! `laya lsp` driven by a raw JSON-RPC client over its stdin/stdout (the
//! real binary, the real default model): every method it serves, the
//! lifecycle, and malformed input, after each of which the next valid
//! request is still answered.
//!
//! The words completed ("zephyrine", "quokkalike") are the document's own,
//! so the expectations do not depend on the trained model.

#[path = "support/lsp_client.rs"]
mod lsp_client;

use lsp_client::{error_code, Client, TEXT, URI};
use serde_json::{json, Value};

#[test]
fn initialize_announces_completion_inline_completion_and_incremental_sync() {
    let mut c = Client::start();
    let r = c.call(
        "initialize",
        json!({ "capabilities": { "general": { "positionEncodings": ["utf-8", "utf-16"] } } }),
    );
    let caps = &r["result"]["capabilities"];
    assert_eq!(caps["positionEncoding"], "utf-8", "{r}");
    assert_eq!(caps["textDocumentSync"]["change"], 2, "incremental: {r}");
    assert_eq!(caps["textDocumentSync"]["save"], true, "{r}");
    assert!(caps["completionProvider"].is_object(), "{r}");
    assert_eq!(caps["inlineCompletionProvider"], true, "{r}");
    c.notify("initialized", json!({}));
    assert_eq!(c.finish(), 0);
}

#[test]
fn completion_completes_a_word_of_the_document_replacing_the_prefix() {
    let mut c = Client::initialized();
    c.open(&format!("{TEXT}the quokk"));
    let r = c.completion(2, 9);
    let list = &r["result"];
    assert_eq!(list["isIncomplete"], true, "{r}");
    let first = &list["items"][0];
    assert!(
        first["label"].as_str().unwrap().starts_with("quokkalike"),
        "{r}"
    );
    let edit = &first["textEdit"];
    assert!(
        edit["newText"].as_str().unwrap().starts_with("quokkalike"),
        "{r}"
    );
    assert_eq!(
        edit["range"]["start"],
        json!({ "line": 2, "character": 4 }),
        "{r}"
    );
    assert_eq!(
        edit["range"]["end"],
        json!({ "line": 2, "character": 9 }),
        "{r}"
    );
    // Our order is the client's: sortText rises with the rank.
    let sort: Vec<&str> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["sortText"].as_str().unwrap())
        .collect();
    let mut sorted = sort.clone();
    sorted.sort();
    assert_eq!(sort, sorted);
    assert_eq!(c.finish(), 0);
}

#[test]
fn inline_completion_is_the_ghost_text() {
    let mut c = Client::initialized();
    c.open(&format!("{TEXT}a zeph"));
    let r = c.inline(2, 6);
    let item = &r["result"]["items"][0];
    assert!(
        item["insertText"]
            .as_str()
            .unwrap()
            .starts_with("zephyrine"),
        "{r}"
    );
    assert_eq!(item["range"]["start"]["character"], 2, "{r}");
    // Completion's first item inserts the same text.
    let labels = c.labels(2, 6);
    assert_eq!(labels[0], item["insertText"].as_str().unwrap());
    assert_eq!(c.finish(), 0);
}

#[test]
fn incremental_changes_are_applied_and_close_forgets_the_document() {
    let mut c = Client::initialized();
    c.open(TEXT);
    // Type "a quok" on the last (empty) line, one key per didChange, in
    // UTF-16 positions after a character outside the BMP.
    let mut col = 0;
    for (i, key) in ["😀", " ", "q", "u", "o", "k"].iter().enumerate() {
        let change = json!({
            "range": { "start": { "line": 2, "character": col }, "end": { "line": 2, "character": col } },
            "text": key,
        });
        c.notify(
            "textDocument/didChange",
            json!({ "textDocument": { "uri": URI, "version": i + 2 }, "contentChanges": [change] }),
        );
        col += key.encode_utf16().count() as u32;
    }
    let labels = c.labels(2, col);
    assert!(labels[0].starts_with("quokkalike"), "{labels:?}");
    // A whole-text change replaces everything.
    c.notify(
        "textDocument/didChange",
        json!({ "textDocument": { "uri": URI, "version": 20 }, "contentChanges": [{ "text": format!("{TEXT}zeph") }] }),
    );
    assert!(c.labels(2, 4)[0].starts_with("zephyrine"));
    c.notify(
        "textDocument/didClose",
        json!({ "textDocument": { "uri": URI } }),
    );
    let r = c.completion(2, 4);
    assert_eq!(error_code(&r), -32602, "a closed document: {r}");
    assert_eq!(c.finish(), 0);
}

#[test]
fn cancelled_requests_get_the_cancelled_error_and_the_next_is_answered() {
    let mut c = Client::initialized();
    c.open(&format!("{TEXT}zeph"));
    // Requests and the cancel arrive together: the cancel is seen first.
    let mut batch = Vec::new();
    let ids: Vec<i64> = (0..3).map(|i| 100 + i).collect();
    for id in &ids {
        let body = json!({ "jsonrpc": "2.0", "id": id, "method": "textDocument/completion", "params": Client::at(2, 4) }).to_string();
        batch.extend(format!("Content-Length: {}\r\n\r\n{body}", body.len()).into_bytes());
    }
    let cancel = json!({ "jsonrpc": "2.0", "method": "$/cancelRequest", "params": { "id": 101 } })
        .to_string();
    batch.extend(format!("Content-Length: {}\r\n\r\n{cancel}", cancel.len()).into_bytes());
    c.raw(&batch);
    let mut answers = Vec::new();
    for _ in &ids {
        answers.push(c.recv());
    }
    for (id, a) in ids.iter().zip(&answers) {
        assert_eq!(a["id"], json!(id), "answers in order: {answers:?}");
    }
    // 101 was cancelled: an error, or (when the server had answered it
    // before the cancel came) a result; never nothing.
    let cancelled = &answers[1];
    assert!(
        cancelled["error"]["code"] == -32800 || cancelled.get("result").is_some(),
        "{cancelled}"
    );
    // The last is answered in full.
    let last = &answers[2]["result"]["items"][0]["label"];
    assert!(
        last.as_str().unwrap().starts_with("zephyrine"),
        "{answers:?}"
    );
    assert_eq!(c.finish(), 0);
}

#[test]
fn lifecycle_errors_unknown_methods_and_documents_are_answered_not_fatal() {
    let mut c = Client::start();
    // Before initialize.
    let r = c.call("textDocument/completion", Client::at(0, 0));
    assert_eq!(error_code(&r), -32002, "{r}");
    let r = c.call("initialize", json!({ "capabilities": {} }));
    assert!(r["result"]["capabilities"].is_object(), "{r}");
    // Twice.
    let r = c.call("initialize", json!({ "capabilities": {} }));
    assert_eq!(error_code(&r), -32600, "{r}");
    c.notify("initialized", json!({}));
    // Unknown methods: requests get MethodNotFound, notifications nothing.
    c.notify("laya/unknownNotification", json!({ "x": 1 }));
    let r = c.call("laya/unknown", json!({}));
    assert_eq!(error_code(&r), -32601, "{r}");
    // Unknown document, bad params, positions out of range.
    let r = c.completion(0, 0);
    assert_eq!(error_code(&r), -32602, "{r}");
    let r = c.call("textDocument/completion", json!({ "textDocument": 5 }));
    assert_eq!(error_code(&r), -32602, "{r}");
    c.open(TEXT);
    let r = c.completion(99, 0);
    assert_eq!(error_code(&r), -32602, "line past the end: {r}");
    let r = c.completion(0, 999);
    assert!(
        r["result"]["items"].is_array(),
        "character past the line's end is its end: {r}"
    );
    // A change out of range is ignored; the document stays usable.
    c.notify(
        "textDocument/didChange",
        json!({ "textDocument": { "uri": URI, "version": 2 }, "contentChanges": [
            { "range": { "start": { "line": 50, "character": 0 }, "end": { "line": 51, "character": 0 } }, "text": "x" }
        ] }),
    );
    c.notify("textDocument/didChange", json!({ "bad": true }));
    let r = c.inline(1, 3);
    assert!(r["result"]["items"].is_array(), "{r}");
    // After shutdown, requests are refused; exit then ends with 0.
    let r = c.call("shutdown", Value::Null);
    assert!(r.get("error").is_none(), "{r}");
    let r = c.completion(0, 1);
    assert_eq!(error_code(&r), -32600, "{r}");
    c.notify("exit", Value::Null);
    assert_eq!(c.wait(), 0);
}

#[test]
fn exit_without_shutdown_ends_with_code_1() {
    let mut c = Client::initialized();
    c.notify("exit", Value::Null);
    assert_eq!(c.wait(), 1);
}

#[test]
fn malformed_input_gets_an_error_and_the_next_request_is_answered() {
    let mut c = Client::initialized();
    c.open(&format!("{TEXT}zeph"));
    let body = json!({ "jsonrpc": "2.0", "id": 900, "method": "textDocument/completion", "params": Client::at(2, 4) }).to_string();
    let bad_inputs: Vec<(&str, Vec<u8>)> = vec![
        (
            "invalid JSON",
            b"Content-Length: 9\r\n\r\n{not json".to_vec(),
        ),
        (
            "JSON that is no message",
            b"Content-Length: 7\r\n\r\n[1,2,3]".to_vec(),
        ),
        ("a header that is not one", b"Hello there\r\n\r\n".to_vec()),
        (
            "a bad Content-Length",
            b"Content-Length: ten\r\n\r\n".to_vec(),
        ),
        (
            "a Content-Length too short",
            format!("Content-Length: 20\r\n\r\n{body}").into_bytes(),
        ),
        (
            "a Content-Length too long",
            format!("Content-Length: {}\r\n\r\n{body}", body.len() + 40).into_bytes(),
        ),
        (
            "a message over the size limit (its 65 MiB body skipped unread)",
            [
                format!("Content-Length: {}\r\n\r\n", 65 << 20).into_bytes(),
                vec![b' '; 65 << 20],
            ]
            .concat(),
        ),
    ];
    for (what, bytes) in bad_inputs {
        // The bad input and a valid request right behind it, in one write:
        // the server cannot tell where the bad one ends by waiting.
        c.next_id += 1;
        let id = c.next_id;
        let valid = json!({ "jsonrpc": "2.0", "id": id, "method": "textDocument/completion", "params": Client::at(2, 4) }).to_string();
        let valid = format!("Content-Length: {}\r\n\r\n{valid}", valid.len());
        c.raw(&[bytes, valid.into_bytes()].concat());
        let err = c.recv();
        assert!(err["id"].is_null(), "{what}: {err}");
        let code = error_code(&err);
        assert!(code == -32700 || code == -32600, "{what}: {err}");
        let r = c.response(id);
        let label = r["result"]["items"][0]["label"]
            .as_str()
            .unwrap_or_default();
        assert!(label.starts_with("zephyrine"), "after {what}: {r}");
    }
    // A huge document (8 MB) is taken, and completion near its end works.
    let huge = format!(
        "{}\n{TEXT}zeph",
        "lorem ipsum dolor sit amet ".repeat(300_000)
    );
    let last_line = huge.matches('\n').count() as u32;
    c.open(&huge);
    let labels = c.labels(last_line, 4);
    assert!(labels[0].starts_with("zephyrine"), "{labels:?}");
    assert_eq!(c.finish(), 0);
}

#[test]
fn secret_files_get_nothing_and_teach_nothing() {
    let mut c = Client::initialized();
    let text = "quokkalike zephyrine quokkalike zephyrine\nthe quokk";
    let secret = "file:///tmp/x/.env";
    c.open_at(secret, text);
    let (labels, inline) = c.offers(secret, 1, 9);
    assert!(
        labels.is_empty() && inline.is_empty(),
        "{labels:?} {inline:?}"
    );
    // Typing on in it changes nothing.
    let change = json!({
        "range": { "start": { "line": 1, "character": 9 }, "end": { "line": 1, "character": 9 } },
        "text": "a",
    });
    c.notify(
        "textDocument/didChange",
        json!({ "textDocument": { "uri": secret, "version": 2 }, "contentChanges": [change] }),
    );
    let (labels, inline) = c.offers(secret, 1, 10);
    assert!(
        labels.is_empty() && inline.is_empty(),
        "{labels:?} {inline:?}"
    );
    // Saved and closed, its words are not learnt: a new document does not
    // offer them.
    c.save_and_close(secret);
    let other = "file:///tmp/x/other.txt";
    c.open_at(other, "the quokk");
    let (labels, _) = c.offers(other, 0, 9);
    assert!(
        !labels.iter().any(|l| l.starts_with("quokkalike")),
        "{labels:?}"
    );
    // The same text in an ordinary file does get them.
    let notes = "file:///tmp/x/notes.txt";
    c.open_at(notes, text);
    let (labels, inline) = c.offers(notes, 1, 9);
    assert!(labels[0].starts_with("quokkalike"), "{labels:?}");
    assert!(inline[0].starts_with("quokkalike"), "{inline:?}");
    assert_eq!(c.finish(), 0);
}

#[test]
fn the_client_may_give_its_own_secret_files() {
    let mut c = Client::start();
    let opts = json!({ "disabled_files": ["*.diary"] });
    let r = c.call(
        "initialize",
        json!({ "capabilities": {}, "initializationOptions": opts }),
    );
    assert!(r.get("error").is_none(), "{r}");
    c.notify("initialized", json!({}));
    let text = "quokkalike zephyrine quokkalike\nthe quokk";
    for (uri, secret) in [
        ("file:///tmp/x/mine.DIARY", true),
        ("file:///tmp/x/.env", false),
    ] {
        c.open_at(uri, text);
        let (labels, _) = c.offers(uri, 1, 9);
        assert_eq!(labels.is_empty(), secret, "{uri}: {labels:?}");
    }
    assert_eq!(c.finish(), 0);
}

#[test]
fn words_of_a_saved_or_closed_document_are_offered_in_others() {
    let mut c = Client::initialized();
    let later = "file:///tmp/x/later.txt";
    c.open_at(later, "the quokk\na zeph");
    // Nothing of the first document is known yet.
    let (labels, _) = c.offers(later, 0, 9);
    assert!(
        !labels.iter().any(|l| l.starts_with("quokkalike")),
        "{labels:?}"
    );
    let (labels, _) = c.offers(later, 1, 6);
    assert!(
        !labels.iter().any(|l| l.starts_with("zephyrine")),
        "{labels:?}"
    );
    // Saved (still open): its words are learnt.
    let first = "file:///tmp/x/first.txt";
    c.open_at(first, "The quokkalike hills, the quokkalike valleys.\n");
    c.notify(
        "textDocument/didSave",
        json!({ "textDocument": { "uri": first } }),
    );
    let (labels, inline) = c.offers(later, 0, 9);
    assert!(labels[0].starts_with("quokkalike"), "{labels:?}");
    assert!(inline[0].starts_with("quokkalike"), "{inline:?}");
    // Closed without a save: learnt too.
    let second = "file:///tmp/x/second.md";
    c.open_at(second, "A zephyrine light, a zephyrine sky.\n");
    c.notify(
        "textDocument/didClose",
        json!({ "textDocument": { "uri": second } }),
    );
    let (labels, _) = c.offers(later, 1, 6);
    assert!(labels[0].starts_with("zephyrine"), "{labels:?}");
    assert_eq!(c.finish(), 0);
}

#[test]
fn the_kind_of_text_comes_from_the_language_id() {
    // After a full stop a next word takes a space in prose (a new
    // sentence) and none in code (member access).
    let mut c = Client::initialized();
    let text = "the end. quokkaline the end. quokkaline the end.";
    for (language, first) in [
        ("markdown", " quokkaline"),
        ("plaintext", " quokkaline"),
        ("rust", "quokkaline"),
        ("python", "quokkaline"),
    ] {
        let uri = format!("file:///tmp/x/doc-{language}");
        c.open_as(&uri, language, text);
        let (labels, inline) = c.offers(&uri, 0, text.len() as u32);
        assert_eq!(
            labels.first().map(String::as_str),
            Some(first),
            "{language}: {labels:?}"
        );
        assert_eq!(
            inline.first().map(String::as_str),
            Some(first),
            "{language}: {inline:?}"
        );
    }
    assert_eq!(c.finish(), 0);
}
