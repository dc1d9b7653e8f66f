//! FUNCTION LOAD/DELETE/LIST/FLUSH and FCALL/FCALL_RO on a node (Redis 7.0.15's
//! `functions.c`, `script.c`): the library store is `redis::functions`, the Lua side
//! `redis::lua::functions`; here are what a node adds: the checks FCALL makes in Redis's
//! order, a function's flags as processCommand reads them (a function without `no-writes`
//! makes FCALL a write), replication (FUNCTION LOAD/DELETE/FLUSH go to replicas as sent,
//! FCALL by its effects) and a full sync's libraries. A child of node: it only adds `impl`
//! blocks to `RedisNode`.

use crate::proto::command::{FunctionCmd, parse_i64_strict};
use crate::proto::{Bytes, Command, Reply};
use crate::redis::node::{Caller, InScript, NOREPLICAS, READONLY, RedisNode};
use crate::time::ProcId;

impl RedisNode {
    /// Is `cmd` a write for processCommand's refusals (READONLY on a replica, NOREPLICAS,
    /// a queue-time refusal in MULTI)? `fcallGetCommandFlags`: an FCALL or FCALL_RO of a
    /// known function without `no-writes` is one; of an unknown function it is not.
    pub(crate) fn writes(&self, cmd: &Command) -> bool {
        match cmd {
            Command::FCall { function, .. } => self
                .functions
                .find(function)
                .is_some_and(|f| !f.flags.no_writes),
            _ => cmd.is_write(),
        }
    }

    /// FUNCTION LOAD / DELETE / LIST / FLUSH (`cmd` is the whole command, propagated as
    /// sent when it changed the libraries).
    pub(super) fn function_cmd(&mut self, sub: &FunctionCmd, cmd: &Command) -> Reply {
        let reply = match sub {
            FunctionCmd::Load(args) => match self.functions.load(args) {
                Ok(name) => Reply::Bulk(name),
                Err(e) => Reply::Error(e),
            },
            FunctionCmd::Delete(name) => match self.functions.delete(name) {
                Ok(()) => Reply::Ok,
                Err(e) => Reply::Error(e),
            },
            FunctionCmd::List(args) => return self.functions.list(args),
            FunctionCmd::Flush { typed, args } => match function_flush_args(typed, args) {
                Ok(()) => {
                    self.functions.flush();
                    Reply::Ok
                }
                Err(e) => Reply::Error(e),
            },
        };
        if !reply.is_error() {
            self.propagate(|| cmd.clone());
        }
        reply
    }

    /// FCALL / FCALL_RO (`fcallCommandGeneric`): the function first, then numkeys, then
    /// `scriptPrepareForRun`'s refusal of a write function by FCALL_RO; the callback runs
    /// as a script does (its writes refused when it declared `no-writes`), in the caller's
    /// db, whatever db a SELECT inside it chose.
    pub(super) fn fcall(
        &mut self,
        now: i64,
        cmd: &Command,
        by: Option<ProcId>,
        in_script: bool,
    ) -> Reply {
        let Command::FCall {
            function,
            numkeys,
            rest,
            read_only,
        } = cmd
        else {
            unreachable!("fcall of another command");
        };
        if in_script {
            return Reply::err("ERR This Redis command is not allowed from script");
        }
        let Some(info) = self.functions.find(function) else {
            return Reply::err("ERR Function not found");
        };
        let (name, flags) = (info.name.clone(), info.flags);
        let Some(numkeys) = parse_i64_strict(numkeys) else {
            return Reply::err("ERR Bad number of keys provided");
        };
        if numkeys > rest.len() as i64 {
            return Reply::err("ERR Number of keys can't be greater than number of args");
        }
        let Ok(numkeys) = usize::try_from(numkeys) else {
            return Reply::err("ERR Number of keys can't be negative");
        };
        if *read_only && !flags.no_writes {
            return Reply::err("ERR Can not execute a script with write flag using *_ro command.");
        }
        // A function can change what the cron plans from without an effect (a SELECT).
        self.wrote = true;
        let Some((engine, callback)) = self.functions.take_engine(function) else {
            return Reply::err("ERR Function not found");
        };
        let (keys, args) = rest.split_at(numkeys);
        let to_vecs = |v: &[Bytes]| v.iter().map(|b| b.to_vec()).collect::<Vec<_>>();
        let (keys, args) = (to_vecs(keys), to_vecs(args));
        let ctx = InScript {
            read_only: flags.no_writes,
        };
        let caller_db = self.cur_db;
        let label = String::from_utf8_lossy(&name).into_owned();
        let reply = engine.run_callback(&callback, &label, &keys, &args, &mut |argv, _| {
            self.script_call(now, argv, by, ctx)
        });
        self.switch_db(caller_db);
        self.functions.return_engine(engine);
        reply
    }

    /// `execute_plain` of an FCALL: processCommand's refusals by the function's flags,
    /// then its effects as one unit, as an EVAL's.
    pub(super) fn execute_fcall(&mut self, now: i64, cmd: &Command, caller: Caller) -> Reply {
        if let Some(refusal) = self.refused_as_write(cmd) {
            return refusal;
        }
        let reply = self.fcall(now, cmd, caller.proc, false);
        self.flush_effects(caller.proc, true);
        self.serve_ready(now);
        reply
    }

    /// What a full sync sends of the libraries: one FUNCTION LOAD each (the replica drops
    /// its own libraries first, as loading an RDB does).
    pub(super) fn function_snapshot_cmds(&self) -> Vec<Command> {
        self.functions
            .payloads()
            .into_iter()
            .map(|code| Command::Function(FunctionCmd::Load(vec![Bytes::from_slice(&code)])))
            .collect()
    }
}

/// FUNCTION FLUSH's option (`functionFlushCommand`): none, SYNC or ASYNC; more than one is
/// the subcommand syntax error naming the subcommand as sent.
fn function_flush_args(typed: &[u8], args: &[Bytes]) -> Result<(), String> {
    match args {
        [] => Ok(()),
        [mode] if mode.eq_ignore_ascii_case(b"sync") || mode.eq_ignore_ascii_case(b"async") => {
            Ok(())
        }
        [_] => Err("ERR FUNCTION FLUSH only supports SYNC|ASYNC option".to_string()),
        _ => Err(format!(
            "ERR unknown subcommand or wrong number of arguments for '{}'. Try FUNCTION HELP.",
            String::from_utf8_lossy(typed)
        )),
    }
}

impl RedisNode {
    /// processCommand's refusals of a write (`writes`): READONLY on a replica, NOREPLICAS,
    /// then the memory cap's OOM.
    pub(super) fn refused_as_write(&mut self, cmd: &Command) -> Option<Reply> {
        if !self.writes(cmd) {
            return None;
        }
        if self.is_replica() {
            return Some(Reply::err(READONLY));
        }
        if !self.enough_good_replicas() {
            return Some(Reply::err(NOREPLICAS));
        }
        self.refused_for_memory(cmd)
    }
}

#[cfg(test)]
mod tests {
    use crate::proto::{Command, Reply};
    use crate::redis::node::{Caller, Persistence, RedisConfig, RedisNode};
    use crate::time::ProcId;

    const CLIENT: Caller = Caller {
        proc: Some(ProcId(7)),
    };
    const COUNTER: &str = "#!lua name=c\nlocal n = 0\n\
        redis.register_function('bump', function() n = n + 1 return n end)";

    fn run(n: &mut RedisNode, argv: &[&str]) -> Reply {
        let cmd = Command::parse(argv).expect("parses");
        n.execute(0, &cmd, CLIENT)
    }

    fn node(persistence: Persistence) -> RedisNode {
        RedisNode::new(RedisConfig {
            persistence,
            ..RedisConfig::default()
        })
    }

    #[test]
    fn libraries_survive_a_restart_as_the_keys_do_and_start_with_fresh_upvalues() {
        let mut n = node(Persistence::Rdb { every_ns: 1 });
        assert_eq!(
            run(&mut n, &["FUNCTION", "LOAD", COUNTER]),
            Reply::Bulk(b"c".to_vec())
        );
        assert_eq!(run(&mut n, &["FCALL", "bump", "0"]), Reply::Int(1));
        assert_eq!(run(&mut n, &["FCALL", "bump", "0"]), Reply::Int(2));
        n.save_to_disk();
        n.restart(false);
        // The library came back from the snapshot, compiled by the new process.
        assert_eq!(run(&mut n, &["FCALL", "bump", "0"]), Reply::Int(1));

        let mut gone = node(Persistence::None);
        run(&mut gone, &["FUNCTION", "LOAD", COUNTER]);
        gone.restart(false);
        assert_eq!(
            run(&mut gone, &["FCALL", "bump", "0"]),
            Reply::err("ERR Function not found")
        );
    }

    #[test]
    fn a_function_without_no_writes_is_a_write_and_an_unknown_one_is_not() {
        let mut n = node(Persistence::None);
        let ro = "#!lua name=r\nredis.register_function{function_name='ro', \
            callback=function() return 1 end, flags={'no-writes'}}";
        run(&mut n, &["FUNCTION", "LOAD", COUNTER]);
        run(&mut n, &["FUNCTION", "LOAD", ro]);
        let fcall = |f: &str| Command::parse(&["FCALL_RO", f, "0"]).expect("parses");
        assert!(n.writes(&fcall("BUMP")));
        assert!(!n.writes(&fcall("ro")));
        assert!(!n.writes(&fcall("nope")));
    }
}
