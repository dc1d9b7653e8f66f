//! Placeholder until the Lua bridge lands.
use crate::proto::reply::Reply;
#[derive(Default)]
pub struct LuaEngine;
impl LuaEngine {
    pub fn new() -> LuaEngine {
        LuaEngine
    }
    pub fn compile(&self, _source: &[u8]) -> Result<(), String> {
        Ok(())
    }
    pub fn run(
        &self,
        _source: &[u8],
        _sha1_hex: &str,
        _keys: &[Vec<u8>],
        _argv: &[Vec<u8>],
        _call: &mut dyn FnMut(&[Vec<u8>], bool) -> Reply,
    ) -> Reply {
        Reply::err("ERR Lua not available")
    }
}
