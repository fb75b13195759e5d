//! One whole message from Neovim, decoded: a request, a notification or a
//! response, with its method and params. A message that is whole but not a
//! valid msgpack-RPC envelope is an error naming what is wrong (and the
//! request id when there is one, so the request can be answered); the
//! stream stays in sync and the next message is read as usual.

use rmpv::Value;

#[derive(Debug, PartialEq)]
pub enum Incoming {
    Request {
        id: u64,
        method: String,
        params: Vec<Value>,
    },
    Notification {
        method: String,
        params: Vec<Value>,
    },
    /// The host sends Neovim no requests, so a response answers nothing.
    Response {
        id: u64,
    },
}

#[derive(Debug, PartialEq)]
pub struct BadMessage {
    /// The request's id, when it had a readable one.
    pub id: Option<u64>,
    pub error: String,
}

/// Decodes the bytes of one whole message (see `framing`).
pub fn decode(bytes: &[u8]) -> Result<Incoming, BadMessage> {
    let bad = |id, error: String| BadMessage { id, error };
    let value = rmpv::decode::read_value(&mut &bytes[..])
        .map_err(|e| bad(None, format!("undecodable message: {e}")))?;
    let Value::Array(items) = value else {
        return Err(bad(None, "a message must be an array".into()));
    };
    let kind = items.first().and_then(Value::as_u64);
    let id = items.get(1).and_then(Value::as_u64);
    match (kind, items.len()) {
        (Some(0), 4) => {
            let id = id.ok_or_else(|| bad(None, "a request's id must be an integer".into()))?;
            let mut items = items.into_iter().skip(2);
            let method = method(items.next()).map_err(|e| bad(Some(id), e))?;
            let params = params(items.next(), &method).map_err(|e| bad(Some(id), e))?;
            Ok(Incoming::Request { id, method, params })
        }
        (Some(1), 4) => Ok(Incoming::Response {
            id: id.ok_or_else(|| bad(None, "a response's id must be an integer".into()))?,
        }),
        (Some(2), 3) => {
            let mut items = items.into_iter().skip(1);
            let method = method(items.next()).map_err(|e| bad(None, e))?;
            let params = params(items.next(), &method).map_err(|e| bad(None, e))?;
            Ok(Incoming::Notification { method, params })
        }
        (Some(k @ 0..=2), n) => Err(bad(
            if k == 0 { id } else { None },
            format!(
                "a message of kind {k} has {n} items, not {}",
                if k == 2 { 3 } else { 4 }
            ),
        )),
        _ => Err(bad(None, "a message's kind must be 0, 1 or 2".into())),
    }
}

/// The method name; bytes that are not UTF-8 are replaced (such a name is
/// then simply unknown).
fn method(v: Option<Value>) -> Result<String, String> {
    match v {
        Some(Value::String(s)) => Ok(String::from_utf8_lossy(s.as_bytes()).into_owned()),
        _ => Err("a method name must be a string".into()),
    }
}

fn params(v: Option<Value>, method: &str) -> Result<Vec<Value>, String> {
    match v {
        Some(Value::Array(a)) => Ok(a),
        _ => Err(format!(
            "the params of `{}` must be an array",
            super::handler::name_head(method)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(v: Value) -> Vec<u8> {
        let mut b = Vec::new();
        rmpv::encode::write_value(&mut b, &v).unwrap();
        b
    }

    fn arr(v: Vec<Value>) -> Vec<u8> {
        bytes(Value::Array(v))
    }

    #[test]
    fn requests_notifications_and_responses() {
        assert_eq!(
            decode(&arr(vec![
                0.into(),
                9.into(),
                "status".into(),
                Value::Array(vec![])
            ])),
            Ok(Incoming::Request {
                id: 9,
                method: "status".into(),
                params: vec![]
            })
        );
        assert_eq!(
            decode(&arr(vec![
                2.into(),
                "predict".into(),
                Value::Array(vec![1.into()])
            ])),
            Ok(Incoming::Notification {
                method: "predict".into(),
                params: vec![1.into()]
            })
        );
        assert_eq!(
            decode(&arr(vec![1.into(), 4.into(), Value::Nil, Value::Nil])),
            Ok(Incoming::Response { id: 4 })
        );
    }

    #[test]
    fn bad_envelopes_name_the_problem_and_keep_the_id() {
        let err = |b: Vec<u8>| decode(&b).unwrap_err();
        let e = err(arr(vec![
            0.into(),
            9.into(),
            5.into(),
            Value::Array(vec![]),
        ]));
        assert_eq!(
            (e.id, e.error.as_str()),
            (Some(9), "a method name must be a string")
        );
        let e = err(arr(vec![0.into(), 9.into(), "status".into(), 3.into()]));
        assert_eq!(e.id, Some(9));
        assert!(e.error.contains("params of `status`"), "{}", e.error);
        let e = err(arr(vec![0.into(), 9.into(), "status".into()]));
        assert_eq!(e.id, Some(9));
        assert!(e.error.contains("3 items, not 4"), "{}", e.error);
        let e = err(arr(vec![2.into(), "x".into(), Value::Nil, Value::Nil]));
        assert!(e.error.contains("4 items, not 3"), "{}", e.error);
        assert!(
            err(arr(vec![0.into(), "id".into(), "s".into(), Value::Nil]))
                .error
                .contains("id must be an integer")
        );
        assert!(err(arr(vec![7.into(), 1.into(), 2.into()]))
            .error
            .contains("kind"));
        assert!(err(bytes(Value::from(3))).error.contains("array"));
        assert!(err(vec![0x93, 0x02]).error.contains("undecodable"));
    }

    #[test]
    fn a_method_name_that_is_not_utf8_is_read_lossily() {
        // [2, "pre\xffdict", []]
        let b = [
            0x93, 0x02, 0xa8, b'p', b'r', b'e', 0xff, b'd', b'i', b'c', b't', 0x90,
        ];
        assert_eq!(
            decode(&b),
            Ok(Incoming::Notification {
                method: "pre\u{fffd}dict".into(),
                params: vec![]
            })
        );
    }
}
