//! What `serve`'s request parser must do on any bytes (tests/fuzz.rs and
//! fuzz/fuzz_targets/serve_request.rs include this file by path): a head, "need more" or a
//! refusal, never a panic; "need more" never past `MAX_HEAD_BYTES` (what `serve` buffers is
//! bounded); a head is the same with more bytes after it; a refusal is a 4xx or 505 with a
//! reason; `admit` decides on every head without a panic, and never admits a Host that is
//! not loopback.

use distlock_sim::view::http::{self, MAX_HEAD_BYTES};

/// Checks the parser on `data`; true when it gave a head (for the campaign's figures).
pub fn check(data: &[u8]) -> bool {
    match http::parse_head(data) {
        Ok(None) => {
            assert!(
                data.len() <= MAX_HEAD_BYTES,
                "need more past {MAX_HEAD_BYTES} bytes"
            );
            false
        }
        Ok(Some(h)) => {
            assert!(h.target.starts_with('/'), "{h:?}");
            assert!(!h.target.bytes().any(|b| b.is_ascii_whitespace()), "{h:?}");
            assert!(h.minor <= 1, "{h:?}");
            let mut longer = data.to_vec();
            longer.extend_from_slice(data);
            assert_eq!(
                http::parse_head(&longer),
                Ok(Some(h.clone())),
                "bytes after the head"
            );
            for computes in [false, true] {
                if http::admit(&h, computes).is_ok()
                    && let Some(host) = &h.host
                {
                    assert!(http::loopback_host(host), "admitted Host {host:?}");
                }
            }
            true
        }
        Err(r) => {
            assert!(matches!(r.status, 400 | 414 | 431 | 505), "{r:?}");
            assert!(!r.why.is_empty(), "{r:?}");
            false
        }
    }
}
