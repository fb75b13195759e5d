//! LSP base protocol framing (`Content-Length` header, JSON body) on a byte
//! stream, forgiving of bad input: a malformed header, a wrong length or a
//! body that is not a JSON-RPC message is reported as `Frame::Bad` and the
//! reader finds the next message's header again, so one bad message never
//! ends the session. Messages themselves are lsp-server's.

use lsp_server::{Message, RequestId};
use serde::Serialize;
use std::io::{self, BufRead, Read, Write};

/// Largest message body read (a whole document in a didOpen fits); a larger
/// one is skipped unread.
pub const MAX_BODY: usize = 64 << 20;

const HEADER: &[u8] = b"content-length:";

/// One thing read from the client.
#[derive(Debug)]
pub enum Frame {
    Message(Message),
    /// Not a message; the text says why (answered with a JSON-RPC error
    /// with a null id).
    Bad {
        code: i32,
        why: String,
    },
    /// The end of input (or a signal to stop): serving ends as at `exit`.
    Closed,
}

/// Reads frames from `input`; bytes of a broken message that belong to the
/// next one are pushed back and read again.
pub struct Reader<R> {
    input: R,
    pushback: Vec<u8>,
}

impl<R: BufRead> Reader<R> {
    pub fn new(input: R) -> Self {
        Reader {
            input,
            pushback: Vec::new(),
        }
    }

    /// The next frame; None at the end of input.
    pub fn next_frame(&mut self) -> io::Result<Option<Frame>> {
        let Some(length) = self.read_header()? else {
            return Ok(None);
        };
        let length = match length {
            Ok(n) => n,
            Err(why) => return Ok(Some(bad(-32700, why))),
        };
        if length > MAX_BODY {
            let skipped = self.skip(length)?;
            return Ok(Some(bad(
                -32600,
                format!("message of {length} bytes is over the {MAX_BODY}-byte limit ({skipped} bytes skipped)"),
            )));
        }
        // As much as arrives, not as much as the header claims: a lying
        // length costs no memory beyond the bytes really sent.
        let mut body = self.read_up_to(length)?;
        match serde_json::from_slice::<Message>(&body) {
            Ok(m) => Ok(Some(Frame::Message(m))),
            Err(e) => {
                // A Content-Length longer than the body swallows the next
                // message's header (or the start of it, when the input has
                // no more yet): give that part back.
                if let Some(at) = find_header(&body).or_else(|| partial_header(&body)) {
                    let rest = body.split_off(at);
                    self.unread(rest);
                }
                let code = if serde_json::from_slice::<serde_json::Value>(&body).is_ok() {
                    -32600 // JSON, but not a JSON-RPC message
                } else {
                    -32700
                };
                Ok(Some(bad(
                    code,
                    format!("bad message body: {}", describe(&e)),
                )))
            }
        }
    }

    /// Reads header lines up to the blank line; the body's length, or why
    /// there is none. Junk before a `Content-Length` header is skipped.
    fn read_header(&mut self) -> io::Result<Option<Result<usize, String>>> {
        let mut length: Option<Result<usize, String>> = None;
        let mut junk = false;
        loop {
            let mut line = Vec::new();
            if self.read_line(&mut line)? == 0 {
                return Ok(None);
            }
            let text = trim_eol(&line);
            if text.is_empty() {
                if let Some(l) = length {
                    return Ok(Some(l));
                }
                if junk {
                    return Ok(Some(Err("a header without Content-Length".into())));
                }
                continue; // blank lines between messages
            }
            // The last header of a line: junk without a line end before a
            // message runs into its header.
            let header = match rfind_header(text) {
                Some(at) => {
                    junk |= at > 0;
                    &text[at..]
                }
                None => {
                    junk = true;
                    continue;
                }
            };
            let value = String::from_utf8_lossy(&header[HEADER.len()..]);
            length = Some(
                value
                    .trim()
                    .parse::<usize>()
                    .map_err(|_| format!("bad Content-Length {:?}", cut(value.trim(), 40))),
            );
        }
    }

    fn unread(&mut self, mut bytes: Vec<u8>) {
        bytes.extend_from_slice(&self.pushback);
        self.pushback = bytes;
    }

    fn read_line(&mut self, line: &mut Vec<u8>) -> io::Result<usize> {
        if !self.pushback.is_empty() {
            match self.pushback.iter().position(|&b| b == b'\n') {
                Some(i) => {
                    line.extend(self.pushback.drain(..=i));
                    return Ok(line.len());
                }
                None => line.append(&mut self.pushback),
            }
        }
        self.input.read_until(b'\n', line)?;
        Ok(line.len())
    }

    /// Up to `n` bytes (fewer at the end of input).
    fn read_up_to(&mut self, n: usize) -> io::Result<Vec<u8>> {
        let from_back = self.pushback.len().min(n);
        // Room for a usual message at once; a claimed length beyond it
        // grows as bytes arrive.
        let mut body = Vec::with_capacity(n.min(1 << 20));
        body.extend(self.pushback.drain(..from_back));
        (&mut self.input)
            .take((n - from_back) as u64)
            .read_to_end(&mut body)?;
        Ok(body)
    }

    fn skip(&mut self, n: usize) -> io::Result<u64> {
        let from_back = self.pushback.len().min(n);
        self.pushback.drain(..from_back);
        let rest = io::copy(
            &mut (&mut self.input).take((n - from_back) as u64),
            &mut io::sink(),
        )?;
        Ok(from_back as u64 + rest)
    }
}

fn bad(code: i32, why: String) -> Frame {
    Frame::Bad { code, why }
}

fn trim_eol(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// Where a `Content-Length:` header starts in `bytes` (any case).
fn find_header(bytes: &[u8]) -> Option<usize> {
    bytes
        .windows(HEADER.len())
        .position(|w| w.eq_ignore_ascii_case(HEADER))
}

/// Where the last `Content-Length:` header starts in `bytes` (any case).
fn rfind_header(bytes: &[u8]) -> Option<usize> {
    bytes
        .windows(HEADER.len())
        .rposition(|w| w.eq_ignore_ascii_case(HEADER))
}

/// Where the start of a header (`Cont`, `content-len`) ends `bytes`.
fn partial_header(bytes: &[u8]) -> Option<usize> {
    let from = bytes.len().saturating_sub(HEADER.len() - 1);
    (from..bytes.len()).find(|&i| HEADER[..bytes.len() - i].eq_ignore_ascii_case(&bytes[i..]))
}

/// A JSON error as a client may read it and a log may keep: what is wrong
/// and where, without the values it quotes (they may be document text),
/// at most `MAX_WHY` bytes.
pub fn describe(e: &serde_json::Error) -> String {
    let full = e.to_string();
    let mut out = String::with_capacity(full.len().min(MAX_WHY));
    let mut quoted = false;
    let mut escaped = false;
    for c in full.chars() {
        match (quoted, c) {
            (false, '"') => {
                quoted = true;
                out.push_str("\"…\"");
            }
            (false, c) => out.push(c),
            (true, '\\') if !escaped => escaped = true,
            (true, '"') if !escaped => quoted = false,
            (true, _) => escaped = false,
        }
    }
    cut(&out, MAX_WHY).to_string()
}

/// Most bytes of a reason given to the client or the log.
pub const MAX_WHY: usize = 300;

/// `s` cut to at most `max` bytes at a character boundary.
pub fn cut(s: &str, max: usize) -> &str {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// A response as it is written: the result (or error) serialized straight
/// into the message, with no JSON tree built in between.
#[derive(Serialize)]
struct Reply<'a, T: Serialize> {
    jsonrpc: &'static str,
    id: Option<&'a RequestId>,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<&'a T>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<ReplyError<'a>>,
}

#[derive(Serialize)]
struct ReplyError<'a> {
    code: i32,
    message: &'a str,
}

/// Answers request `id` with `result` (`()` is null).
pub fn write_result<T: Serialize>(
    out: &mut impl Write,
    id: &RequestId,
    result: &T,
) -> io::Result<()> {
    write_frame(
        out,
        &Reply {
            jsonrpc: "2.0",
            id: Some(id),
            result: Some(result),
            error: None,
        },
    )
}

/// Answers request `id` (None: input that was no readable request, a null
/// id) with an error.
pub fn write_error(
    out: &mut impl Write,
    id: Option<&RequestId>,
    code: i32,
    message: &str,
) -> io::Result<()> {
    write_frame(
        out,
        &Reply::<()> {
            jsonrpc: "2.0",
            id,
            result: None,
            error: Some(ReplyError { code, message }),
        },
    )
}

/// One message, header and body, in one write (the only writer of stdout
/// in `laya lsp`).
fn write_frame(out: &mut impl Write, msg: &impl Serialize) -> io::Result<()> {
    // Room for the header before the body, written once the length is known.
    const ROOM: usize = 40;
    let mut buf = Vec::with_capacity(512);
    buf.resize(ROOM, 0);
    serde_json::to_writer(&mut buf, msg).map_err(io::Error::other)?;
    let header = format!("Content-Length: {}\r\n\r\n", buf.len() - ROOM);
    let start = ROOM - header.len();
    buf[start..ROOM].copy_from_slice(header.as_bytes());
    out.write_all(&buf[start..])?;
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(body: &str) -> String {
        format!("Content-Length: {}\r\n\r\n{body}", body.len())
    }

    fn read_all(input: &str) -> Vec<Frame> {
        let mut r = Reader::new(input.as_bytes());
        let mut out = Vec::new();
        while let Some(f) = r.next_frame().unwrap() {
            out.push(f);
        }
        out
    }

    fn is_request(f: &Frame, method: &str) -> bool {
        matches!(f, Frame::Message(Message::Request(r)) if r.method == method)
    }

    const PING: &str = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;

    #[test]
    fn well_formed_messages_are_read_in_order() {
        let f = read_all(&(frame(PING) + &frame(PING)));
        assert_eq!(f.len(), 2);
        assert!(is_request(&f[0], "ping") && is_request(&f[1], "ping"));
    }

    #[test]
    fn a_short_length_is_reported_and_the_next_message_still_read() {
        let short = format!("Content-Length: 10\r\n\r\n{PING}");
        let f = read_all(&(short + &frame(PING)));
        assert!(matches!(f[0], Frame::Bad { .. }), "{f:?}");
        assert!(is_request(f.last().unwrap(), "ping"), "{f:?}");
    }

    #[test]
    fn a_long_length_gives_back_the_next_header() {
        let long = format!("Content-Length: {}\r\n\r\n{PING}", PING.len() + 30);
        let f = read_all(&(long + &frame(PING)));
        assert!(matches!(f[0], Frame::Bad { .. }), "{f:?}");
        assert!(is_request(&f[1], "ping"), "{f:?}");
    }

    #[test]
    fn a_header_cut_short_by_a_lying_length_is_given_back() {
        // Length 10 swallows "Content-L" of the next frame's header.
        let input = format!("Content-Length: 10\r\n\r\n{}", frame(PING));
        let f = read_all(&input);
        assert!(matches!(f[0], Frame::Bad { .. }), "{f:?}");
        assert!(is_request(&f[1], "ping"), "{f:?}");
        // Junk without a line end runs into the next header.
        let f = read_all(&format!("Content-Length: 3{}", frame(PING)));
        assert!(is_request(f.last().unwrap(), "ping"), "{f:?}");
    }

    #[test]
    fn replies_are_framed_as_the_reader_reads_them() {
        let mut out = Vec::new();
        write_result(
            &mut out,
            &RequestId::from(7),
            &serde_json::json!({ "a": [1] }),
        )
        .unwrap();
        write_result(&mut out, &RequestId::from("x".to_string()), &()).unwrap();
        write_error(&mut out, None, -32700, "bad \"input\"").unwrap();
        let text = String::from_utf8(out.clone()).unwrap();
        assert!(text.starts_with("Content-Length:"), "{text}");
        let mut r = Reader::new(&out[..]);
        let mut got = Vec::new();
        while let Some(Frame::Message(Message::Response(m))) = r.next_frame().unwrap() {
            got.push(m);
        }
        assert_eq!(got.len(), 2, "{text}"); // the null id is no lsp-server response
        let result = |m: &lsp_server::Response| serde_json::to_value(m).unwrap()["result"].clone();
        assert_eq!(result(&got[0]), serde_json::json!({ "a": [1] }));
        assert_eq!(result(&got[1]), serde_json::Value::Null);
        assert!(
            text.ends_with(
                r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"bad \"input\""}}"#
            ),
            "{text}"
        );
    }

    #[test]
    fn errors_do_not_quote_the_values() {
        let e = serde_json::from_str::<u32>(r#""secret \" text""#).unwrap_err();
        let d = describe(&e);
        assert!(!d.contains("secret") && d.contains("expected u32"), "{d}");
        assert_eq!(cut("aé", 2), "a");
    }

    #[test]
    fn junk_headers_and_invalid_json_are_reported_not_fatal() {
        let input = "garbage line\r\n\r\n".to_string()
            + "Content-Length: x\r\n\r\n"
            + &frame("{not json")
            + &frame(r#"{"jsonrpc":"2.0","hello":1}"#)
            + &frame(PING);
        let f = read_all(&input);
        assert!(is_request(f.last().unwrap(), "ping"), "{f:?}");
        let codes: Vec<i32> = f
            .iter()
            .filter_map(|f| match f {
                Frame::Bad { code, .. } => Some(*code),
                _ => None,
            })
            .collect();
        assert_eq!(codes, [-32700, -32700, -32700, -32600], "{f:?}");
    }
}
