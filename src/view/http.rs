//! The head of an HTTP/1.x request as `serve` reads it: a pure function of the bytes received
//! so far, so that the limits hold while reading (the caller never holds more than
//! [`MAX_HEAD_BYTES`] plus one read) and so that it can be fuzzed on its own
//! (`fuzz/fuzz_targets/serve_request.rs`, `tests/serve.rs`).
//!
//! It answers "need more", a [`Head`], or a refusal (status and reason): 414 for a request
//! line past [`MAX_REQUEST_LINE_BYTES`], 431 for header lines past [`MAX_HEADER_BYTES`] or
//! [`MAX_HEADERS`], 400 for what is not HTTP/1.x, 505 for another version. [`admit`] then
//! decides whether a head may be served: the Host must be loopback (DNS rebinding), and a
//! request that computes must come from no other origin.

/// Longest request line (method, target, version), CRLF excluded. `respond` refuses targets
/// past 4,096 bytes anyway; this bounds what is read to find out.
pub const MAX_REQUEST_LINE_BYTES: usize = 8 * 1024;
/// Most bytes of header lines, the blank line that ends them included.
pub const MAX_HEADER_BYTES: usize = 16 * 1024;
/// Most header lines.
pub const MAX_HEADERS: usize = 64;
/// Blank lines allowed before the request line.
const MAX_LEADING_BLANK_BYTES: usize = 8;
/// Most bytes a head can take (leading blank lines, request line, header lines, their line
/// ends): more without a verdict from [`parse_head`] cannot happen.
pub const MAX_HEAD_BYTES: usize =
    MAX_LEADING_BLANK_BYTES + MAX_REQUEST_LINE_BYTES + 2 + MAX_HEADER_BYTES;

/// A request head that parsed. Only the headers `serve` reads are kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    pub method: String,
    /// Path and query, as sent (origin-form: begins with `/`).
    pub target: String,
    /// 0 for HTTP/1.0, 1 for HTTP/1.1.
    pub minor: u8,
    pub host: Option<String>,
    pub origin: Option<String>,
    /// `Sec-Fetch-Site`, which browsers send on every request (`none`: typed or bookmarked).
    pub fetch_site: Option<String>,
}

/// A request refused before it is served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub status: u16,
    pub why: String,
}

fn refuse(status: u16, why: impl Into<String>) -> Refusal {
    Refusal {
        status,
        why: why.into(),
    }
}

/// Where the line that starts at `from` ends: (its end without CR, the start of the next
/// line), or `None` when no LF came yet.
fn line_end(buf: &[u8], from: usize) -> Option<(usize, usize)> {
    let lf = from + buf[from..].iter().position(|&b| b == b'\n')?;
    let end = if lf > from && buf[lf - 1] == b'\r' {
        lf - 1
    } else {
        lf
    };
    Some((end, lf + 1))
}

fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// The head in `buf` (the bytes received so far): `Ok(None)` when more bytes are needed,
/// which never happens past [`MAX_HEAD_BYTES`]. Bytes after the head are ignored (`serve`
/// reads no body and answers one request per connection).
pub fn parse_head(buf: &[u8]) -> Result<Option<Head>, Refusal> {
    // Blank lines before the request line are allowed (RFC 9112 §2.2); a bounded number.
    let mut start = 0;
    while start < buf.len().min(MAX_LEADING_BLANK_BYTES)
        && (buf[start] == b'\r' || buf[start] == b'\n')
    {
        start += 1;
    }
    let Some((line_stop, mut at)) = line_end(buf, start) else {
        // + 1: the CR of a line of the longest length may have come without its LF.
        if buf.len() - start > MAX_REQUEST_LINE_BYTES + 1 {
            return Err(refuse(414, "the request line is too long"));
        }
        return Ok(None);
    };
    let line = &buf[start..line_stop];
    if line.len() > MAX_REQUEST_LINE_BYTES {
        return Err(refuse(414, "the request line is too long"));
    }
    let mut parts = line.split(|&b| b == b' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(refuse(
            400,
            "the request line is not METHOD TARGET HTTP/1.x",
        ));
    };
    if method.is_empty() || !method.iter().all(|&b| is_tchar(b)) {
        return Err(refuse(400, "the method is not a token"));
    }
    if target.first() != Some(&b'/') || !target.iter().all(|&b| b.is_ascii_graphic()) {
        return Err(refuse(400, "the target is not a path beginning with /"));
    }
    let minor = match version {
        b"HTTP/1.1" => 1,
        b"HTTP/1.0" => 0,
        v if v.starts_with(b"HTTP/") => {
            return Err(refuse(505, "only HTTP/1.0 and HTTP/1.1 are served"));
        }
        _ => {
            return Err(refuse(
                400,
                "the request line is not METHOD TARGET HTTP/1.x",
            ));
        }
    };
    let headers_from = at;
    let mut head = Head {
        // Both are ASCII: checked above.
        method: String::from_utf8_lossy(method).into_owned(),
        target: String::from_utf8_lossy(target).into_owned(),
        minor,
        host: None,
        origin: None,
        fetch_site: None,
    };
    let mut count = 0usize;
    loop {
        let Some((stop, next)) = line_end(buf, at) else {
            if buf.len() - headers_from > MAX_HEADER_BYTES {
                return Err(refuse(431, "the header lines are too large"));
            }
            return Ok(None);
        };
        if next - headers_from > MAX_HEADER_BYTES {
            return Err(refuse(431, "the header lines are too large"));
        }
        let field = &buf[at..stop];
        at = next;
        if field.is_empty() {
            break;
        }
        count += 1;
        if count > MAX_HEADERS {
            return Err(refuse(431, format!("more than {MAX_HEADERS} header lines")));
        }
        if field[0] == b' ' || field[0] == b'\t' {
            return Err(refuse(400, "a folded header line (obsolete, refused)"));
        }
        let Some(colon) = field.iter().position(|&b| b == b':') else {
            return Err(refuse(400, "a header line without ':'"));
        };
        let name = &field[..colon];
        if name.is_empty() || !name.iter().all(|&b| is_tchar(b)) {
            return Err(refuse(400, "a header name is not a token"));
        }
        let value = field[colon + 1..].trim_ascii();
        if value.iter().any(|&b| b.is_ascii_control() && b != b'\t') {
            return Err(refuse(400, "a control character in a header value"));
        }
        let slot = if name.eq_ignore_ascii_case(b"host") {
            &mut head.host
        } else if name.eq_ignore_ascii_case(b"origin") {
            &mut head.origin
        } else if name.eq_ignore_ascii_case(b"sec-fetch-site") {
            &mut head.fetch_site
        } else {
            continue;
        };
        if slot.is_some() {
            return Err(refuse(
                400,
                format!("{} given twice", String::from_utf8_lossy(name)),
            ));
        }
        // Non-ASCII in these is never a loopback address or our origin: refused in `admit`.
        *slot = Some(String::from_utf8_lossy(value).into_owned());
    }
    if head.minor == 1 && head.host.is_none() {
        return Err(refuse(400, "an HTTP/1.1 request without Host"));
    }
    Ok(Some(head))
}

/// `host[:port]` when host is a loopback name: `127.0.0.1`, `localhost` or `[::1]`, any
/// port (a tunnel may forward another one). A page on another site that resolves its own
/// name to 127.0.0.1 (DNS rebinding) sends its own name here.
pub fn loopback_host(host: &str) -> bool {
    let name = match host.rsplit_once(':') {
        Some((n, port))
            if !n.ends_with(':')
                && !port.is_empty()
                && port.len() <= 5
                && port.bytes().all(|b| b.is_ascii_digit()) =>
        {
            n
        }
        _ => host,
    };
    name == "127.0.0.1" || name.eq_ignore_ascii_case("localhost") || name == "[::1]"
}

/// Whether the head may be served: `Err` with 421 for a Host that is not loopback, 403 for
/// a request that computes (`computes`: it runs a model) sent by a page of another origin:
/// an `Origin` that is not `http://` + this Host, or `Sec-Fetch-Site` other than
/// `same-origin` or `none` (which browsers send on `<img>`/`<script>` loads and links from
/// other sites, that carry no `Origin`). Absent headers pass: curl and scripts send neither.
pub fn admit(head: &Head, computes: bool) -> Result<(), Refusal> {
    if let Some(h) = &head.host
        && !loopback_host(h)
    {
        return Err(refuse(
            421,
            format!(
                "Host {h:?} is not this server: it answers only to 127.0.0.1, localhost or [::1]"
            ),
        ));
    }
    if !computes {
        return Ok(());
    }
    if let Some(o) = &head.origin {
        let same = head
            .host
            .as_deref()
            .is_some_and(|h| o.strip_prefix("http://") == Some(h));
        if !same {
            return Err(refuse(
                403,
                format!("Origin {o:?}: a page of another origin may not run models here"),
            ));
        }
    }
    if let Some(site) = &head.fetch_site
        && site != "same-origin"
        && site != "none"
    {
        return Err(refuse(
            403,
            format!(
                "Sec-Fetch-Site {site:?}: a page of another site may not run models here (open the address yourself)"
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(s: &str) -> Result<Option<Head>, Refusal> {
        parse_head(s.as_bytes())
    }

    #[test]
    fn a_whole_head_parses_and_a_partial_one_asks_for_more() {
        let h = head("GET /model/x?seed=1 HTTP/1.1\r\nHost: 127.0.0.1:8417\r\nOrigin: http://127.0.0.1:8417\r\n\r\n")
            .unwrap()
            .unwrap();
        assert_eq!(h.method, "GET");
        assert_eq!(h.target, "/model/x?seed=1");
        assert_eq!(h.host.as_deref(), Some("127.0.0.1:8417"));
        assert_eq!(h.origin.as_deref(), Some("http://127.0.0.1:8417"));
        assert_eq!(head("GET / HTTP/1.1\r\nHost: a\r\n"), Ok(None));
        assert_eq!(head("GET / HTT"), Ok(None));
        assert_eq!(head("GET / HTTP/1.0\n\n").unwrap().unwrap().minor, 0);
    }

    #[test]
    fn limits_hold_on_partial_input_so_nothing_unbounded_is_buffered() {
        let long = format!("GET /{}", "a".repeat(MAX_REQUEST_LINE_BYTES));
        assert_eq!(head(&long).unwrap_err().status, 414);
        let many = format!(
            "GET / HTTP/1.1\r\nHost: x\r\n{}",
            "X-a: b\r\n".repeat(MAX_HEADERS)
        );
        assert_eq!(head(&many).unwrap_err().status, 431);
        let big = format!(
            "GET / HTTP/1.1\r\nHost: x\r\nX-a: {}",
            "b".repeat(MAX_HEADER_BYTES)
        );
        assert_eq!(head(&big).unwrap_err().status, 431);
    }

    #[test]
    fn malformed_heads_are_refused_with_a_reason() {
        for (s, status) in [
            ("GET\r\n\r\n", 400),
            ("GET / HTTP/2.0\r\n\r\n", 505),
            ("GET http://x/ HTTP/1.1\r\nHost: x\r\n\r\n", 400),
            ("GET / HTTP/1.1\r\n\r\n", 400),
            ("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400),
            ("GET / HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n", 400),
            ("GET / HTTP/1.1\r\nHost a\r\n\r\n", 400),
            ("G(T / HTTP/1.1\r\nHost: a\r\n\r\n", 400),
        ] {
            assert_eq!(head(s).unwrap_err().status, status, "{s:?}");
        }
    }

    #[test]
    fn only_loopback_hosts_and_same_origin_pages_are_admitted() {
        let mk = |host: &str, origin: Option<&str>, site: Option<&str>| Head {
            method: "GET".into(),
            target: "/".into(),
            minor: 1,
            host: Some(host.into()),
            origin: origin.map(Into::into),
            fetch_site: site.map(Into::into),
        };
        for ok in [
            "127.0.0.1",
            "127.0.0.1:8417",
            "localhost:1",
            "LOCALHOST",
            "[::1]:8417",
        ] {
            assert_eq!(admit(&mk(ok, None, None), true), Ok(()), "{ok}");
        }
        for no in [
            "evil.example",
            "evil.example:8417",
            "127.0.0.1.evil.example",
            "localhost.:80",
            "127.0.0.2",
            "[::1]x",
            "",
        ] {
            assert_eq!(
                admit(&mk(no, None, None), false).unwrap_err().status,
                421,
                "{no}"
            );
        }
        let h = "127.0.0.1:8417";
        assert_eq!(
            admit(&mk(h, Some("http://127.0.0.1:8417"), None), true),
            Ok(())
        );
        assert_eq!(admit(&mk(h, None, Some("same-origin")), true), Ok(()));
        assert_eq!(admit(&mk(h, None, Some("none")), true), Ok(()));
        assert_eq!(
            admit(&mk(h, Some("http://evil.example"), None), false),
            Ok(())
        );
        for (o, s) in [
            (Some("http://evil.example"), None),
            (Some("http://localhost:8417"), None),
            (Some("null"), None),
            (None, Some("cross-site")),
            (None, Some("same-site")),
        ] {
            assert_eq!(
                admit(&mk(h, o, s), true).unwrap_err().status,
                403,
                "{o:?} {s:?}"
            );
        }
    }
}
