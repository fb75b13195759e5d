//! LSP base protocol framing (`Content-Length` header, JSON body) on a byte
//! stream, forgiving of bad input: a malformed header, a wrong length or a
//! body that is not a JSON-RPC message is reported as `Frame::Bad` and the
//! reader finds the next message's header again, so one bad message never
//! ends the session. Messages themselves are lsp-server's.

use lsp_server::Message;
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
        let mut body = vec![0; length];
        let got = self.read_full(&mut body)?;
        body.truncate(got);
        match serde_json::from_slice::<Message>(&body) {
            Ok(m) => Ok(Some(Frame::Message(m))),
            Err(e) => {
                // A Content-Length longer than the body swallows the next
                // message's header: give that part back.
                if let Some(at) = find_header(&body) {
                    let rest = body.split_off(at);
                    self.unread(rest);
                }
                let code = if serde_json::from_slice::<serde_json::Value>(&body).is_ok() {
                    -32600 // JSON, but not a JSON-RPC message
                } else {
                    -32700
                };
                Ok(Some(bad(code, format!("bad message body: {e}"))))
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
            let header = match find_header(text) {
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
                    .map_err(|_| format!("bad Content-Length {:?}", value.trim())),
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

    fn read_full(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let from_back = self.pushback.len().min(buf.len());
        buf[..from_back].copy_from_slice(&self.pushback[..from_back]);
        self.pushback.drain(..from_back);
        let mut got = from_back;
        while got < buf.len() {
            match self.input.read(&mut buf[got..])? {
                0 => break,
                n => got += n,
            }
        }
        Ok(got)
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

/// Writes one message (the only writer of stdout in `laya lsp`).
pub fn write(out: &mut impl Write, msg: Message) -> io::Result<()> {
    msg.write(out)
}

/// Answers input that was no readable request: a JSON-RPC error whose id
/// is null (lsp-server's ids cannot be).
pub fn write_error(out: &mut impl Write, code: i32, message: &str) -> io::Result<()> {
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": { "code": code, "message": message },
    })
    .to_string();
    write!(out, "Content-Length: {}\r\n\r\n{body}", body.len())?;
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
