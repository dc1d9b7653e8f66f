//! What a client's connection set-up sends: HELLO and CLIENT ID / GETNAME / SETNAME, as
//! Redis 7.0.15's `helloCommand` and `clientCommand` answer them on a RESP2 connection. They
//! read and change the connection's state (its name and id, in `connection::Conn`), so
//! connection.rs runs them, outside MULTI and inside EXEC alike.
//!
//! The model speaks RESP2 only: `HELLO 3`, which would switch the connection to RESP3's maps,
//! sets, doubles and pushes, is refused with an error saying so (a client library that asks
//! for RESP3 by default, redis-py 5 with `protocol=3` or Lettuce, must be configured for
//! RESP2). A client id is assigned when a connection first asks for it (Redis assigns one
//! to every connection as it opens: the numbers differ from a real server's, which count
//! every connection it ever had).

use crate::proto::command::{ClientCmd, parse_i64_strict};
use crate::proto::{Bytes, Reply};
use crate::redis::node::RedisNode;
use crate::redis::node::connection::Conn;

/// `clientSetNameOrReply`'s refusal of a name with a byte outside `!`..`~`.
const ERR_NAME_CHARS: &str =
    "ERR Client names cannot contain spaces, newlines or special characters.";

impl RedisNode {
    /// HELLO [protover [AUTH user pass] [SETNAME name]]: the version first (an integer, 2
    /// or 3), then each option in turn, taking effect as it is read (an AUTH or SETNAME
    /// stays done when a later option is refused); the reply is HELLO's map as a RESP2
    /// array. Version 3 is refused by the model after its options, where Redis would switch.
    pub(super) fn hello(&mut self, args: &[Bytes], conn: &mut Conn) -> Reply {
        let mut resp3 = false;
        if let Some(v) = args.first() {
            match parse_i64_strict(v) {
                None => {
                    return Reply::err("ERR Protocol version is not an integer or out of range");
                }
                Some(2) => {}
                Some(3) => resp3 = true,
                Some(_) => return Reply::err("NOPROTO unsupported protocol version"),
            }
        }
        let mut j = 1;
        while j < args.len() {
            let more = args.len() - 1 - j;
            let opt = &args[j];
            if opt.eq_ignore_ascii_case(b"auth") && more >= 2 {
                if let e @ Reply::Error(_) = Self::auth(Some(&args[j + 1])) {
                    return e;
                }
                j += 3;
            } else if opt.eq_ignore_ascii_case(b"setname") && more >= 1 {
                if let Err(e) = set_name(conn, &args[j + 1]) {
                    return e;
                }
                j += 2;
            } else {
                return Reply::Error(format!(
                    "ERR Syntax error in HELLO option '{}'",
                    String::from_utf8_lossy(opt)
                ));
            }
        }
        // Where Redis would switch the connection to RESP3: its options have been read and
        // have taken effect, as they do in Redis.
        if resp3 {
            return Reply::err("ERR the model speaks RESP2 only: HELLO 3 (RESP3) is not modelled");
        }
        let bulk = |s: &str| Reply::Bulk(s.as_bytes().to_vec());
        let role = if self.is_replica() {
            "replica"
        } else {
            "master"
        };
        Reply::Array(vec![
            bulk("server"),
            bulk("redis"),
            bulk("version"),
            bulk("7.0.15"),
            bulk("proto"),
            Reply::Int(2),
            bulk("id"),
            Reply::Int(self.client_id(conn)),
            bulk("mode"),
            bulk("standalone"),
            bulk("role"),
            bulk(role),
            bulk("modules"),
            Reply::Array(Vec::new()),
        ])
    }

    /// CLIENT ID / GETNAME / SETNAME.
    pub(super) fn client(&mut self, cmd: &ClientCmd, conn: &mut Conn) -> Reply {
        match cmd {
            ClientCmd::Id => Reply::Int(self.client_id(conn)),
            ClientCmd::GetName => conn
                .name
                .as_ref()
                .map_or(Reply::Nil, |n| Reply::Bulk(n.to_vec())),
            ClientCmd::SetName(name) => match set_name(conn, name) {
                Ok(()) => Reply::Ok,
                Err(e) => e,
            },
        }
    }

    /// The connection's id, assigned at its first use.
    fn client_id(&mut self, conn: &mut Conn) -> i64 {
        let id = *conn.id.get_or_insert_with(|| {
            self.next_client_id += 1;
            self.next_client_id
        });
        id as i64
    }
}

/// `clientSetNameOrReply`: an empty name removes the name; otherwise every byte must be
/// printable ASCII other than space.
fn set_name(conn: &mut Conn, name: &Bytes) -> Result<(), Reply> {
    if name.is_empty() {
        conn.name = None;
        return Ok(());
    }
    if name.iter().any(|&c| !(b'!'..=b'~').contains(&c)) {
        return Err(Reply::err(ERR_NAME_CHARS));
    }
    conn.name = Some(name.clone());
    Ok(())
}
