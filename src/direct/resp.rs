//! The RESP2 reader of direct connections, measured: the redis crate's
//! general parser costs as much as the rest of a fetch's own work. It reads
//! what a fetch's reply holds (integers, bulk strings, arrays, nil) and hands
//! the rest (status and error replies, anything unexpected) to that parser.

use redis::Value;

use crate::Result;

/// The first RESP2 value in `buf` and its length, or `None` until it is all
/// there. Parsed here rather than by the redis crate's general parser, which
/// costs as much as the rest of a fetch's own work; error replies (rare: a
/// lost function library) and anything unexpected still go through that parser.
#[inline]
pub(super) fn parse_value(buf: &[u8]) -> Result<Option<(Value, usize)>> {
    let Some(line_end) = buf.windows(2).position(|w| w == b"\r\n") else {
        return Ok(None);
    };
    let after = line_end + 2;
    let number = || -> Option<i64> { std::str::from_utf8(&buf[1..line_end]).ok()?.parse().ok() };
    let parsed = match (buf[0], number()) {
        (b':', Some(n)) => (Value::Int(n), after),
        (b'$' | b'*', Some(n)) if n < 0 => (Value::Nil, after),
        (b'$', Some(n)) => {
            let end = after.saturating_add(n as usize);
            if buf.len() < end.saturating_add(2) {
                return Ok(None);
            }
            (Value::BulkString(buf[after..end].to_vec()), end + 2)
        }
        (b'*', Some(n)) => {
            let mut items = Vec::with_capacity((n as usize).min(16));
            let mut at = after;
            for _ in 0..n {
                let Some((item, len)) = parse_value(&buf[at..])? else {
                    return Ok(None);
                };
                items.push(item);
                at += len;
            }
            (Value::Array(items), at)
        }
        (b'+' | b'-', _) => (redis::parse_redis_value(&buf[..after])?, after),
        _ => (redis::parse_redis_value(buf)?, buf.len()),
    };
    Ok(Some(parsed))
}

#[cfg(test)]
mod tests {
    use super::parse_value;
    use redis::Value;

    #[test]
    fn parse_value_needs_the_whole_value() {
        let reply = b"*3\r\n$7\r\ndefault\r\n$3\r\njob\r\n:0\r\n";
        let whole = parse_value(reply).unwrap().unwrap();
        assert_eq!(whole.1, reply.len());
        assert_eq!(whole.0, redis::parse_redis_value(reply).unwrap());
        for cut in 0..reply.len() {
            assert!(
                parse_value(&reply[..cut]).unwrap().is_none(),
                "cut at {cut}"
            );
        }
    }

    /// xorshift64: a small deterministic generator, so that a failure
    /// shows again with the same seed.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }

        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    /// A RESP2 reply as Redis would encode it: a fetch's shapes (integers,
    /// bulk strings with any bytes, CRLF included, nil, nested arrays) and
    /// the status and error lines handed to the redis crate.
    fn reply(rng: &mut Rng, depth: u32, out: &mut Vec<u8>) {
        match rng.below(if depth < 3 { 8 } else { 6 }) {
            0 => out.extend(format!(":{}\r\n", rng.next() as i64 >> rng.below(64)).bytes()),
            1 => out.extend_from_slice(b"$-1\r\n"),
            2 => out.extend_from_slice(if rng.below(2) == 0 {
                b"+OK\r\n"
            } else {
                b"+QUEUED\r\n"
            }),
            3 => out.extend_from_slice(b"-NOSCRIPT No matching script\r\n"),
            4 | 5 => {
                let len = [0, 1, 2, 40, 300][rng.below(5) as usize];
                let bytes: Vec<u8> = (0..len)
                    .map(|_| [b'\r', b'\n', b'$', b'*', 0, 255, b'a'][rng.below(7) as usize])
                    .collect();
                out.extend(format!("${len}\r\n").bytes());
                out.extend(bytes);
                out.extend_from_slice(b"\r\n");
            }
            6 => out.extend_from_slice(b"*-1\r\n"),
            _ => {
                let n = rng.below(5);
                out.extend(format!("*{n}\r\n").bytes());
                for _ in 0..n {
                    reply(rng, depth + 1, out);
                }
            }
        }
    }

    #[test]
    fn parse_value_agrees_with_the_redis_crate_on_generated_replies() {
        let mut rng = Rng(0x5eed_1e55_f00d_cafe);
        for case in 0..2000 {
            let mut one = Vec::new();
            reply(&mut rng, 0, &mut one);
            let expected = redis::parse_redis_value(&one).unwrap();
            // Followed by the next reply, as on a pipelined connection.
            let mut two = one.clone();
            reply(&mut rng, 0, &mut two);
            let (value, len) = parse_value(&two).unwrap().unwrap();
            assert_eq!((value, len), (expected, one.len()), "case {case}: {one:?}");
            for cut in 0..one.len() {
                assert!(
                    parse_value(&one[..cut]).unwrap().is_none(),
                    "case {case} cut at {cut}: {one:?}"
                );
            }
        }
    }

    #[test]
    fn parse_value_reads_nil_status_and_errors() {
        assert_eq!(
            parse_value(b"$-1\r\n+OK\r\n").unwrap(),
            Some((Value::Nil, 5))
        );
        assert_eq!(parse_value(b"*-1\r\n").unwrap(), Some((Value::Nil, 5)));
        assert_eq!(parse_value(b"+OK\r\n").unwrap(), Some((Value::Okay, 5)));
        let (error, len) = parse_value(b"-NOSCRIPT x\r\n").unwrap().unwrap();
        assert!(matches!(error, Value::ServerError(e) if e.code() == "NOSCRIPT"));
        assert_eq!(len, 13);
    }
}
