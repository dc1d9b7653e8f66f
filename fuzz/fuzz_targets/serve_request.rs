//! `serve`'s request-head parser on arbitrary bytes (`view::http::parse_head` and
//! `admit`): a head, "need more" within the byte bound, or a 4xx with a reason; never a panic.
//! The checks are tests/fuzz/http_head.rs, shared with tests/fuzz.rs.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../tests/fuzz/http_head.rs"]
mod http_head;

fuzz_target!(|data: &[u8]| {
    http_head::check(data);
});
