use super::*;

/// A tiny Redis: the few commands the scripts below use, with Redis's error texts
/// for commands run from a script.
#[derive(Default)]
struct FakeRedis {
    data: BTreeMap<Vec<u8>, Vec<u8>>,
    calls: Vec<(Vec<Vec<u8>>, bool)>,
}

impl FakeRedis {
    fn exec(&mut self, argv: &[Vec<u8>], raise: bool) -> Reply {
        self.calls.push((argv.to_vec(), raise));
        let name = String::from_utf8_lossy(&argv[0]).to_ascii_lowercase();
        let arity_error =
            || Reply::err("ERR Wrong number of args calling Redis command from script");
        match name.as_str() {
            "get" if argv.len() == 2 => match self.data.get(&argv[1]) {
                Some(v) => Reply::Bulk(v.clone()),
                None => Reply::Nil,
            },
            "set" if argv.len() == 3 => {
                self.data.insert(argv[1].clone(), argv[2].clone());
                Reply::Ok
            }
            "incr" if argv.len() == 2 => {
                let current = self.data.get(&argv[1]).cloned().unwrap_or(b"0".to_vec());
                match String::from_utf8_lossy(&current).parse::<i64>() {
                    Ok(n) => {
                        self.data
                            .insert(argv[1].clone(), (n + 1).to_string().into_bytes());
                        Reply::Int(n + 1)
                    }
                    Err(_) => Reply::err("ERR value is not an integer or out of range"),
                }
            }
            "pexpire" if argv.len() == 3 => Reply::Int(i64::from(self.data.contains_key(&argv[1]))),
            "mget" if argv.len() >= 2 => Reply::Array(
                argv[1..]
                    .iter()
                    .map(|k| {
                        self.data
                            .get(k)
                            .map_or(Reply::Nil, |v| Reply::Bulk(v.clone()))
                    })
                    .collect(),
            ),
            "echo" if argv.len() == 2 => Reply::Bulk(argv[1].clone()),
            "ping" => Reply::Status("PONG".to_string()),
            "wrongtype" => {
                Reply::err("WRONGTYPE Operation against a key holding the wrong kind of value")
            }
            "get" | "set" | "incr" | "pexpire" | "mget" | "echo" => arity_error(),
            _ => Reply::err("ERR Unknown Redis command called from script"),
        }
    }
}

fn sha(script: &str) -> String {
    hex(&Sha1::digest(script.as_bytes()))
}

fn eval_with(
    engine: &LuaEngine,
    redis: &mut FakeRedis,
    script: &str,
    keys: &[&str],
    args: &[&str],
) -> Reply {
    let keys: Vec<Vec<u8>> = keys.iter().map(|k| k.as_bytes().to_vec()).collect();
    let args: Vec<Vec<u8>> = args.iter().map(|a| a.as_bytes().to_vec()).collect();
    engine.run(
        script.as_bytes(),
        &sha(script),
        &keys,
        &args,
        &mut |argv, raise| redis.exec(argv, raise),
    )
}

fn eval(script: &str, keys: &[&str], args: &[&str]) -> String {
    eval_with(
        &LuaEngine::new(),
        &mut FakeRedis::default(),
        script,
        keys,
        args,
    )
    .to_string()
}

#[test]
fn a_shebang_declares_flags_and_no_shebang_declares_none() {
    assert_eq!(shebang_flags(b"return 1"), Ok(None));
    assert_eq!(
        shebang_flags(b"#!lua\nreturn 1"),
        Ok(Some(ScriptFlags::default()))
    );
    let both = ScriptFlags {
        no_writes: true,
        allow_stale: true,
        ..ScriptFlags::default()
    };
    // Several flags= options add up, as Redis 7.0.15 accepts them.
    assert_eq!(
        shebang_flags(b"#!lua flags=no-writes flags=allow-stale\nreturn 1"),
        Ok(Some(both))
    );
    assert_eq!(
        shebang_flags(b"#!lua flags=allow-oom,no-cluster\r\nreturn 1"),
        Ok(Some(ScriptFlags {
            allow_oom: true,
            no_cluster: true,
            ..ScriptFlags::default()
        }))
    );
    assert_eq!(
        shebang_flags(b"#!lua flags=no-writes"),
        Err("ERR Invalid script shebang".to_string())
    );
    assert_eq!(
        shebang_flags(b"#!lua flags=no-writes,bogus\nreturn 1"),
        Err("ERR Unexpected flag in script shebang: bogus".to_string())
    );
}

#[test]
fn a_script_past_the_memory_cap_gets_redis_not_enough_memory_error() {
    for script in [
        // One instruction that asks for 1.26 GB (3^31 is cut to an int by string.rep).
        "return #string.rep('x', 3^31)",
        // A table grown in a loop, well inside the instruction budget.
        "local t = {} for i = 1, 1e9 do t[i] = i end return #t",
        // Strings kept alive by doubling.
        "local s = 'x' local k = {} for i = 1, 40 do s = s .. s k[i] = s end return #s",
    ] {
        assert_eq!(
            eval(script, &[], &[]),
            format!(
                "(error) ERR Error running script {}, not enough memory",
                sha(script)
            ),
            "{script}"
        );
    }
}

#[test]
fn pcall_catches_running_out_of_memory_as_the_plain_lua_message() {
    assert_eq!(
        eval(
            "local ok, e = pcall(string.rep, 'x', 3^31) return {tostring(ok), e}",
            &[],
            &[]
        ),
        "[\"false\", \"not enough memory\"]"
    );
}

#[test]
fn a_state_that_ran_out_of_memory_runs_the_next_script_with_its_memory_back() {
    let engine = LuaEngine::new();
    let mut redis = FakeRedis::default();
    let big = "return #string.rep('x', 3^31)";
    assert!(
        eval_with(&engine, &mut redis, big, &[], &[])
            .to_string()
            .ends_with("not enough memory")
    );
    assert!(engine.lua.used_memory() <= SCRIPT_MEMORY_COLLECT_ABOVE);
    // A script that builds an 8 MiB string (a few times that in pieces on the way) runs,
    // again and again: garbage from the failed run, or from the previous one, never
    // counts against it.
    let big_but_fits = "return #string.rep('x', 8 * 1024 * 1024)";
    for _ in 0..5 {
        assert_eq!(
            eval_with(&engine, &mut redis, big_but_fits, &[], &[]).to_string(),
            "(integer) 8388608"
        );
    }
}

#[test]
fn corpus_script_shas_match_the_recorded_ones() {
    for (script, recorded) in [
        (
            "return redis.call('nosuchcmd')",
            "4f5958446b28593dea988ad0a5603cbd6962dd95",
        ),
        (
            "return redis.call('incr',KEYS[1])",
            "6f5ade10a69975e903c6d07b10ea44c6382381a5",
        ),
        (
            "return redis.call('get')",
            "f187dee77f607f7cff00bbabc9df38507582c78d",
        ),
        ("error('boom')", "82903a0434f1503e152f89c03c9acd881a0e8150"),
        (
            "return redis.call()",
            "0a907e1429221a4d85516cab7fd219a82a9439d8",
        ),
        (
            "if redis.call('get',KEYS[1]) == ARGV[1] then return redis.call('pexpire',KEYS[1],ARGV[2]) else return 0 end",
            "0be193f9697b4b30826e1bc553c0064e0e04668c",
        ),
    ] {
        assert_eq!(sha(script), recorded, "{script}");
    }
}

#[test]
fn corpus_return_values() {
    assert_eq!(eval("return nil", &[], &[]), "(nil)");
    assert_eq!(eval("return 42", &[], &[]), "(integer) 42");
    assert_eq!(eval("return -7", &[], &[]), "(integer) -7");
    assert_eq!(eval("return 3.99", &[], &[]), "(integer) 3");
    assert_eq!(eval("return 'hello'", &[], &[]), "\"hello\"");
    assert_eq!(eval("return true", &[], &[]), "(integer) 1");
    assert_eq!(eval("return false", &[], &[]), "(nil)");
    assert_eq!(
        eval("return {1,'two',{3,'four'}}", &[], &[]),
        "[(integer) 1, \"two\", [(integer) 3, \"four\"]]"
    );
    assert_eq!(eval("return {1,nil,3}", &[], &[]), "[(integer) 1]");
    assert_eq!(eval("return {}", &[], &[]), "[]");
    assert_eq!(
        eval("return {err='custom failure'}", &[], &[]),
        "(error) custom failure"
    );
    assert_eq!(
        eval("return redis.error_reply('MYERR custom')", &[], &[]),
        "(error) MYERR custom"
    );
    assert_eq!(eval("return redis.status_reply('FINE')", &[], &[]), "FINE");
    assert_eq!(eval("return {ok='DONE'}", &[], &[]), "DONE");
    assert_eq!(
        eval(
            "return KEYS[1]..'/'..ARGV[1]..'/'..#KEYS..'/'..#ARGV",
            &["k"],
            &["a", "b"]
        ),
        "\"k/a/1/2\""
    );
}

#[test]
fn corpus_redis_call() {
    let engine = LuaEngine::new();
    let mut redis = FakeRedis::default();
    let mut run = |script: &str, keys: &[&str], args: &[&str]| {
        eval_with(&engine, &mut redis, script, keys, args).to_string()
    };
    assert_eq!(
        run("return redis.call('get',KEYS[1])", &["missing"], &[]),
        "(nil)"
    );
    assert_eq!(
        run("return redis.call('set',KEYS[1],'w')", &["k"], &[]),
        "OK"
    );
    assert_eq!(
        run("return redis.call('nosuchcmd')", &[], &[]),
        "(error) ERR Unknown Redis command called from script script: \
             4f5958446b28593dea988ad0a5603cbd6962dd95, on @user_script:1."
    );
    assert_eq!(
        run("return redis.pcall('nosuchcmd')", &[], &[]),
        "(error) ERR Unknown Redis command called from script"
    );
    assert_eq!(
        run(
            "local ok = redis.pcall('nosuchcmd') return 'after'",
            &[],
            &[]
        ),
        "\"after\""
    );
    assert_eq!(
        run("return redis.call('set',KEYS[1],'abc')", &["s"], &[]),
        "OK"
    );
    assert_eq!(
        run("return redis.call('incr',KEYS[1])", &["s"], &[]),
        "(error) ERR value is not an integer or out of range script: \
             6f5ade10a69975e903c6d07b10ea44c6382381a5, on @user_script:1."
    );
    assert_eq!(
        run("return redis.pcall('incr',KEYS[1])", &["s"], &[]),
        "(error) ERR value is not an integer or out of range"
    );
    assert_eq!(
        run("return redis.call('get')", &[], &[]),
        "(error) ERR Wrong number of args calling Redis command from script script: \
             f187dee77f607f7cff00bbabc9df38507582c78d, on @user_script:1."
    );
    assert_eq!(
        run("return redis.call()", &[], &[]),
        "(error) ERR Please specify at least one argument for this redis lib call script: \
             0a907e1429221a4d85516cab7fd219a82a9439d8, on @user_script:1."
    );
    assert_eq!(
        run("return redis.call('set',KEYS[1],'a')", &["lock"], &[]),
        "OK"
    );
    assert_eq!(
        run(
            "if redis.call('get',KEYS[1]) == ARGV[1] then return redis.call('pexpire',KEYS[1],ARGV[2]) else return 0 end",
            &["lock"],
            &["a"],
        ),
        "(error) ERR Lua redis lib command arguments must be strings or integers script: \
             0be193f9697b4b30826e1bc553c0064e0e04668c, on @user_script:1."
    );
}

#[test]
fn corpus_compile_and_runtime_errors() {
    assert_eq!(
        eval("return (", &[], &[]),
        "(error) ERR Error compiling script (new function): user_script:1: \
             unexpected symbol near '<eof>'"
    );
    assert_eq!(
        eval("error('boom')", &[], &[]),
        "(error) ERR user_script:1: boom script: \
             82903a0434f1503e152f89c03c9acd881a0e8150, on @user_script:1."
    );
    let engine = LuaEngine::new();
    assert_eq!(
        engine.compile(b"return ("),
        Err("ERR Error compiling script (new function): user_script:1: \
                 unexpected symbol near '<eof>'"
            .to_string())
    );
    assert_eq!(engine.compile(b"return 1"), Ok(()));
}

#[test]
fn host_sees_arguments_as_redis_formats_them() {
    let engine = LuaEngine::new();
    let mut redis = FakeRedis::default();
    eval_with(
        &engine,
        &mut redis,
        "redis.call('SET', 'k', 10) redis.call('set', 'k', 0.1) \
             redis.call('set', 'k', 1e20) redis.call('set', 'k', -2.5) \
             redis.call('set', 'k', 123456789012345678) redis.pcall('set', 'k', 1/0) \
             redis.call('set', 'k', 'a\\0b') return redis.pcall('echo', 7)",
        &[],
        &[],
    );
    let sent: Vec<(String, bool)> = redis
        .calls
        .iter()
        .map(|(argv, raise)| {
            let args: Vec<String> = argv
                .iter()
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect();
            (args.join(" "), *raise)
        })
        .collect();
    let expected = [
        ("SET k 10", true),
        ("set k 0.10000000000000001", true),
        ("set k 1e+20", true),
        ("set k -2.5", true),
        ("set k 1.2345678901234568e+17", true),
        ("set k inf", false),
        ("set k a\0b", true),
        ("echo 7", false),
    ];
    let expected: Vec<(String, bool)> = expected.iter().map(|(s, r)| (s.to_string(), *r)).collect();
    assert_eq!(sent, expected);
}

#[test]
fn argument_errors_of_pcall_are_returned_not_raised() {
    assert_eq!(
        eval("return redis.pcall()", &[], &[]),
        "(error) ERR Please specify at least one argument for this redis lib call"
    );
    assert_eq!(
        eval("return redis.pcall('get', {})", &[], &[]),
        "(error) ERR Lua redis lib command arguments must be strings or integers"
    );
    assert_eq!(
        eval("local e = redis.pcall('get', true) return e.err", &[], &[]),
        "\"ERR Lua redis lib command arguments must be strings or integers\""
    );
}

#[test]
fn replies_reach_lua_as_redis_converts_them() {
    let engine = LuaEngine::new();
    let mut redis = FakeRedis::default();
    let mut run = |script: &str| eval_with(&engine, &mut redis, script, &[], &[]).to_string();
    assert_eq!(
        run("redis.call('set','a','1') return type(redis.call('incr','a'))"),
        "\"number\""
    );
    assert_eq!(
        run("return redis.call('get','nope') == false"),
        "(integer) 1"
    );
    assert_eq!(run("return redis.call('set','b','x').ok"), "\"OK\"");
    assert_eq!(run("return redis.call('ping')"), "PONG");
    assert_eq!(run("return redis.call('ping').ok"), "\"PONG\"");
    assert_eq!(
        run("local r = redis.call('mget','a','nope','b') return {#r, r[1], tostring(r[2]), r[3]}"),
        "[(integer) 3, \"2\", \"false\", \"x\"]"
    );
    assert_eq!(
        run(
            "local e = redis.pcall('wrongtype') return {e.err, tostring(e.ignore_error_stats_update)}"
        ),
        "[\"WRONGTYPE Operation against a key holding the wrong kind of value\", \"true\"]"
    );
    assert_eq!(
        run("return redis.call('wrongtype')"),
        format!(
            "(error) WRONGTYPE Operation against a key holding the wrong kind of value \
                 script: {}, on @user_script:1.",
            sha("return redis.call('wrongtype')")
        )
    );
}

#[test]
fn script_error_reports_the_line_of_the_failing_call() {
    let script =
        "local x = 1\n\nlocal function f()\n  return redis.call('nosuchcmd')\nend\nreturn f()";
    assert_eq!(
        eval(script, &[], &[]),
        format!(
            "(error) ERR Unknown Redis command called from script script: {}, on @user_script:4.",
            sha(script)
        )
    );
    let script = "local t = nil\nreturn t.x";
    assert_eq!(
        eval(script, &[], &[]),
        format!(
            "(error) ERR user_script:2: attempt to index local 't' (a nil value) script: {}, on @user_script:2.",
            sha(script)
        )
    );
    let script = "\nerror({err='MINE raised'})";
    assert_eq!(
        eval(script, &[], &[]),
        format!(
            "(error) MINE raised script: {}, on @user_script:2.",
            sha(script)
        )
    );
    let script = "error('no position', 0)";
    assert_eq!(
        eval(script, &[], &[]),
        format!(
            "(error) ERR no position script: {}, on @user_script:1.",
            sha(script)
        )
    );
    let script = "error()";
    assert_eq!(
        eval(script, &[], &[]),
        format!(
            "(error) ERR nil script: {}, on @user_script:1.",
            sha(script)
        )
    );
}

#[test]
fn scripts_catch_redis_errors_with_pcall_as_strings() {
    assert_eq!(
        eval(
            "local ok, e = pcall(redis.call, 'nosuchcmd') return {tostring(ok), e}",
            &[],
            &[]
        ),
        "[\"false\", \"ERR Unknown Redis command called from script\"]"
    );
    assert_eq!(
        eval("local ok, e = pcall(error, {err='X y'}) return e", &[], &[]),
        "\"X y\""
    );
    assert_eq!(
        eval("local ok, e = pcall(error, 'plain') return e", &[], &[]),
        "\"plain\""
    );
    assert_eq!(
        eval("return {pcall(function() return 1, 2 end)}", &[], &[]),
        "[(integer) 1, (integer) 1, (integer) 2]"
    );
    assert_eq!(
        eval("local ok, e = pcall(math.random, 0) return e", &[], &[]),
        "\"bad argument #1 to '?' (interval is empty)\""
    );
    assert_eq!(
        eval(
            "return {xpcall(function() redis.call('x') end, function(e) return e.err end)}",
            &[],
            &[]
        ),
        "[(nil), \"ERR Unknown Redis command called from script\"]"
    );
}

#[test]
fn globals_are_read_only_as_in_redis_7() {
    let script = "x = 1";
    assert_eq!(
        eval(script, &[], &[]),
        format!(
            "(error) ERR user_script:1: Attempt to modify a readonly table script: {}, on @user_script:1.",
            sha(script)
        )
    );
    let script = "local a = 1\nfunction f() end";
    assert_eq!(
        eval(script, &[], &[]),
        format!(
            "(error) ERR user_script:2: Attempt to modify a readonly table script: {}, on @user_script:2.",
            sha(script)
        )
    );
    let script = "table.extend = function() end";
    assert_eq!(
        eval(script, &[], &[]),
        format!(
            "(error) ERR user_script:1: Attempt to modify a readonly table script: {}, on @user_script:1.",
            sha(script)
        )
    );
    let script = "return print('x')";
    assert_eq!(
        eval(script, &[], &[]),
        format!(
            "(error) ERR user_script:1: Script attempted to access nonexistent global variable 'print' script: {}, on @user_script:1.",
            sha(script)
        )
    );
    let script = "rawset(_G, 'x', 1)";
    assert_eq!(
        eval(script, &[], &[]),
        format!(
            "(error) ERR Attempt to modify a readonly table script: {}, on @user_script:1.",
            sha(script)
        )
    );
    let script = "setmetatable(_G, nil)";
    assert_eq!(
        eval(script, &[], &[]),
        format!(
            "(error) ERR Attempt to modify a readonly table script: {}, on @user_script:1.",
            sha(script)
        )
    );
    assert_eq!(
        eval("return type(rawget(_G, 'redis'))", &[], &[]),
        "\"table\""
    );
    assert_eq!(
        eval("return rawget(_G, 'nothing') == nil", &[], &[]),
        "(integer) 1"
    );
    assert_eq!(
        eval(
            "local n = 0 for k in pairs(math) do n = n + 1 end return n > 20",
            &[],
            &[]
        ),
        "(integer) 1"
    );
    assert_eq!(
        eval("return _G == getfenv(1) and _G._G == _G", &[], &[]),
        "(integer) 1"
    );
    assert_eq!(
        eval("return ('abc'):upper() .. string.rep('x', 2)", &[], &[]),
        "\"ABCxx\""
    );
    assert_eq!(
        eval(
            "local t = setmetatable({}, {__index = {a = 5}}) return t.a",
            &[],
            &[]
        ),
        "(integer) 5"
    );
    assert_eq!(
        eval("KEYS[1] = 'changed' return KEYS[1]", &["k"], &[]),
        "\"changed\""
    );
    assert_eq!(
        eval(
            "return {type(print), type(dofile), type(loadfile), type(os), type(io), type(debug)}",
            &[],
            &[]
        )
        .matches("Script attempted to access nonexistent global variable 'print'")
        .count(),
        1
    );
    assert_eq!(
        eval(
            "return rawget(_G, 'debug') == nil and rawget(_G, 'os') == nil",
            &[],
            &[]
        ),
        "(integer) 1"
    );
}

#[test]
fn each_run_gets_fresh_keys_and_argv() {
    let engine = LuaEngine::new();
    let mut redis = FakeRedis::default();
    let script = "return {#KEYS, #ARGV, KEYS[1] or 'none'}";
    assert_eq!(
        eval_with(&engine, &mut redis, script, &["a", "b"], &["c"]).to_string(),
        "[(integer) 2, (integer) 1, \"a\"]"
    );
    assert_eq!(
        eval_with(&engine, &mut redis, script, &[], &[]).to_string(),
        "[(integer) 0, (integer) 0, \"none\"]"
    );
}

#[test]
fn return_conversions_follow_redis_for_the_less_common_shapes() {
    assert_eq!(
        eval("return {1, true, false, 2}", &[], &[]),
        "[(integer) 1, (integer) 1, (nil), (integer) 2]"
    );
    assert_eq!(
        eval("return {1, {err='inner'}, {ok='OK'}}", &[], &[]),
        "[(integer) 1, (error) inner, OK]"
    );
    assert_eq!(
        eval("return {err='two\\nlines\\r\\n'}", &[], &[]),
        "(error) two lines"
    );
    assert_eq!(eval("return {ok='a\\nb'}", &[], &[]), "a b");
    assert_eq!(eval("return {err=5}", &[], &[]), "[]");
    assert_eq!(eval("return {double=3.5}", &[], &[]), "\"3.5\"");
    assert_eq!(eval("return {double=1/0}", &[], &[]), "\"inf\"");
    assert_eq!(eval("return {map={a=1}}", &[], &[]), "[\"a\", (integer) 1]");
    assert_eq!(eval("return {set={x=true}}", &[], &[]), "[\"x\"]");
    assert_eq!(eval("return {big_number='123'}", &[], &[]), "\"123\"");
    assert_eq!(
        eval(
            "return {verbatim_string={format='txt', string='v'}}",
            &[],
            &[]
        ),
        "\"v\""
    );
    assert_eq!(
        eval("return 1e300", &[], &[]),
        format!("(integer) {}", i64::MIN)
    );
    assert_eq!(eval("return -3.99", &[], &[]), "(integer) -3");
    assert_eq!(eval("return 'a\\0b'", &[], &[]), "\"a\\x00b\"");
    assert_eq!(eval("return function() end", &[], &[]), "(nil)");
    assert_eq!(eval("return 1, 2", &[], &[]), "(integer) 1");
    assert_eq!(eval("return _G", &[], &[]), "[]");
}

#[test]
fn self_referencing_table_stops_at_the_lua_stack_limit() {
    let reply = eval_with(
        &LuaEngine::new(),
        &mut FakeRedis::default(),
        "local t = {} t[1] = t return t",
        &[],
        &[],
    );
    let mut depth = 0;
    let mut node = &reply;
    while let Reply::Array(items) = node {
        assert_eq!(items.len(), 1);
        depth += 1;
        node = &items[0];
    }
    assert_eq!(depth, 7995);
    assert_eq!(node, &Reply::err("ERR reached lua stack limit"));
}

#[test]
fn redis_library_helpers() {
    assert_eq!(
        eval("return redis.error_reply('boom')", &[], &[]),
        "(error) ERR boom"
    );
    assert_eq!(
        eval("return redis.error_reply('-CODE text')", &[], &[]),
        "(error) CODE text"
    );
    assert_eq!(
        eval("return redis.error_reply(5)", &[], &[]),
        "(error) ERR wrong number or type of arguments"
    );
    assert_eq!(
        eval("return redis.error_reply('X y').err", &[], &[]),
        "\"X y\""
    );
    assert_eq!(eval("return redis.status_reply('OK')", &[], &[]), "OK");
    assert_eq!(
        eval("return redis.sha1hex('')", &[], &[]),
        "\"da39a3ee5e6b4b0d3255bfef95601890afd80709\""
    );
    assert_eq!(
        eval("return redis.sha1hex('abc')", &[], &[]),
        "\"a9993e364706816aba3e25717850c26c9cd0d89d\""
    );
    let script = "redis.sha1hex()";
    assert_eq!(
        eval(script, &[], &[]),
        format!(
            "(error) ERR wrong number of arguments script: {}, on @user_script:1.",
            sha(script)
        )
    );
    assert_eq!(
        eval(
            "redis.log(redis.LOG_WARNING, 'hi') return redis.LOG_NOTICE",
            &[],
            &[]
        ),
        "(integer) 2"
    );
    let script = "redis.log(9, 'x')";
    assert_eq!(
        eval(script, &[], &[]),
        format!(
            "(error) ERR Invalid debug level. script: {}, on @user_script:1.",
            sha(script)
        )
    );
    assert_eq!(eval("return redis.REDIS_VERSION", &[], &[]), "\"7.0.15\"");
    assert_eq!(
        eval("return redis.REDIS_VERSION_NUM", &[], &[]),
        "(integer) 458767"
    );
    assert_eq!(
        eval("return redis.replicate_commands()", &[], &[]),
        "(integer) 1"
    );
    assert_eq!(
        eval("redis.set_repl(redis.REPL_ALL) return 1", &[], &[]),
        "(integer) 1"
    );
    assert_eq!(eval("redis.setresp(2) return 1", &[], &[]), "(integer) 1");
}

#[test]
fn math_random_is_redis_lrand48() {
    // Known Redis output for math.random(1000000) after seeding with 0.
    assert_eq!(
        eval(
            "math.randomseed(0) return {math.random(1000000), math.random(1000000), math.random(1000000)}",
            &[],
            &[]
        ),
        "[(integer) 170829, (integer) 749902, (integer) 96372]"
    );
    assert_eq!(
        eval(
            "math.randomseed(0) return tostring(math.random())",
            &[],
            &[]
        ),
        "\"0.17082803611217\""
    );
    // The generator keeps its state across runs, as it does in Redis 7.
    let engine = LuaEngine::new();
    let mut redis = FakeRedis::default();
    let first = eval_with(
        &engine,
        &mut redis,
        "return tostring(math.random())",
        &[],
        &[],
    );
    let second = eval_with(
        &engine,
        &mut redis,
        "return tostring(math.random())",
        &[],
        &[],
    );
    assert_ne!(first, second);
    assert_eq!(
        first,
        eval_with(
            &LuaEngine::new(),
            &mut redis,
            "return tostring(math.random())",
            &[],
            &[]
        )
    );
    let script = "return math.random(0)";
    assert_eq!(
        eval(script, &[], &[]),
        format!(
            "(error) ERR user_script:1: bad argument #1 to 'random' (interval is empty) script: {}, on @user_script:1.",
            sha(script)
        )
    );
    let script = "return math.random(3, 1)";
    assert_eq!(
        eval(script, &[], &[]),
        format!(
            "(error) ERR user_script:1: bad argument #2 to 'random' (interval is empty) script: {}, on @user_script:1.",
            sha(script)
        )
    );
    let script = "return math.random('x')";
    assert_eq!(
        eval(script, &[], &[]),
        format!(
            "(error) ERR user_script:1: bad argument #1 to 'random' (number expected, got string) script: {}, on @user_script:1.",
            sha(script)
        )
    );
    assert_eq!(
        eval(
            "local r = math.random(5, 7) return r >= 5 and r <= 7",
            &[],
            &[]
        ),
        "(integer) 1"
    );
}

#[test]
fn compile_rules() {
    let engine = LuaEngine::new();
    assert_eq!(engine.compile(b"#!lua flags=no-writes\nreturn 1"), Ok(()));
    assert_eq!(
        eval(
            "#!lua flags=no-writes,allow-stale\nreturn redis.call('nosuchcmd')",
            &[],
            &[]
        ),
        format!(
            "(error) ERR Unknown Redis command called from script script: {}, on @user_script:2.",
            sha("#!lua flags=no-writes,allow-stale\nreturn redis.call('nosuchcmd')")
        )
    );
    assert_eq!(
        engine.compile(b"#!lua"),
        Err("ERR Invalid script shebang".to_string())
    );
    assert_eq!(
        engine.compile(b"#!python\nreturn 1"),
        Err("ERR Unexpected engine in script shebang: #!python".to_string())
    );
    assert_eq!(
        engine.compile(b"#!lua flags=bogus\nreturn 1"),
        Err("ERR Unexpected flag in script shebang: bogus".to_string())
    );
    assert_eq!(
        engine.compile(b"#!lua name=x\nreturn 1"),
        Err("ERR Unknown lua shebang option: name=x".to_string())
    );
    assert_eq!(
            engine.compile(b"\x1bLua\x51\x00"),
            Err(
                "ERR Error compiling script (new function): user_script:1: unexpected symbol near 'char(27)'"
                    .to_string()
            )
        );
    assert_eq!(
            engine.compile(b"return 1 +\n\n"),
            Err("ERR Error compiling script (new function): user_script:3: unexpected symbol near '<eof>'"
                .to_string())
        );
    // A compiled script is found again by its sha, as EVALSHA needs.
    let body = b"return 'cached'";
    engine.compile(body).unwrap();
    let reply = engine.run(b"", &hex(&Sha1::digest(body)), &[], &[], &mut |_, _| {
        Reply::Nil
    });
    assert_eq!(reply, Reply::Bulk(b"cached".to_vec()));
}

#[test]
fn too_many_call_arguments_end_the_script_with_an_error() {
    // mlua reports this limit by panicking (its message shows on stderr); the panic
    // is contained and the engine keeps working.
    let engine = LuaEngine::new();
    let mut redis = FakeRedis::default();
    let script = "local t = {} for i = 1, 7990 do t[i] = 'x' end return redis.call(unpack(t))";
    let reply = eval_with(&engine, &mut redis, script, &[], &[]);
    assert!(
        reply.to_string().starts_with(&format!(
            "(error) ERR Error running script {}, script engine limit",
            sha(script)
        )),
        "{reply}"
    );
    assert_eq!(
        eval_with(
            &engine,
            &mut redis,
            "return redis.call('echo', 'fine')",
            &[],
            &[]
        ),
        Reply::Bulk(b"fine".to_vec())
    );
    // Well below the limit, large calls go through.
    let script = "local t = {'mget'} for i = 1, 5000 do t[i + 1] = 'k' .. i end return #redis.call(unpack(t))";
    assert_eq!(
        eval_with(&engine, &mut redis, script, &[], &[]),
        Reply::Int(5000)
    );
}

#[test]
#[should_panic(expected = "host bug")]
fn a_panicking_host_is_not_turned_into_a_reply() {
    let engine = LuaEngine::new();
    let script = "local ok = pcall(redis.call, 'x') return redis.call('y')";
    engine.run(script.as_bytes(), &sha(script), &[], &[], &mut |_, _| {
        panic!("host bug")
    });
}

#[test]
fn nothing_panics_on_odd_scripts() {
    for script in [
        "local function f() return f() + 1 end return f()",
        "local s = string.rep('x', 10) return coroutine.wrap(function() redis.call('nosuchcmd') end)()",
        "return coroutine.resume(coroutine.create(function() redis.call('nosuchcmd') end))",
        "return select(2, coroutine.resume(coroutine.create(function() redis.call('nosuchcmd') end))).err",
        "return pcall()",
        "return xpcall(error)",
        "return next(_G) ~= nil",
        "return rawset({}, nil, 1)",
        "return setmetatable(1, {})",
        "return tostring(getmetatable(_G))",
        "getmetatable(_G).x = 1",
        "return loadstring('return 1 +')",
        "return loadstring('return redis.call(\"ping\")')()",
        "error(setmetatable({}, {__index = function() error('inner') end}))",
        "error({})",
        "while false do end return string.format('%d', 'x')",
        "return redis.call(redis)",
        "return #redis.call('mget', 'a')",
    ] {
        let reply = eval(script, &[], &[]);
        assert!(!reply.is_empty(), "{script}");
    }
    assert_eq!(
        eval(
            "return loadstring('return redis.call(\"ping\")')()",
            &[],
            &[]
        ),
        "PONG"
    );
    let script = "return setmetatable(1, {})";
    assert_eq!(
        eval(script, &[], &[]),
        format!(
            "(error) ERR user_script:1: bad argument #1 to 'setmetatable' (table expected, got number) script: {}, on @user_script:1.",
            sha(script)
        )
    );
    let script = "local function f() return f() + 1 end return f()";
    assert!(eval(script, &[], &[]).contains("stack overflow"));
}

mod budget_tests {
    use super::*;

    #[test]
    fn an_endless_script_is_stopped_not_hung() {
        let lua = LuaEngine::new();
        let mut host = |_: &[Vec<u8>], _: bool| Reply::Nil;
        for src in [
            "while true do end",
            "while true do pcall(function() while true do end end) end",
        ] {
            let sha = hex(&Sha1::digest(src.as_bytes()));
            let r = lua.run(src.as_bytes(), &sha, &[], &[], &mut host);
            assert!(
                matches!(&r, Reply::Error(e) if e.contains("budget")),
                "{src}: {r:?}"
            );
        }
        // The engine still works afterwards.
        let src = "return 1";
        let sha = hex(&Sha1::digest(src.as_bytes()));
        assert_eq!(
            lua.run(src.as_bytes(), &sha, &[], &[], &mut host),
            Reply::Int(1)
        );
    }
}
