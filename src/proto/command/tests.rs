use super::*;

fn argv(s: &str) -> Vec<Vec<u8>> {
    s.split_whitespace()
        .map(|w| w.as_bytes().to_vec())
        .collect()
}

#[test]
fn strict_integers_follow_string2ll() {
    for ok in [
        "0",
        "1",
        "-1",
        "9223372036854775807",
        "-9223372036854775808",
    ] {
        assert!(parse_i64_strict(ok.as_bytes()).is_some(), "{ok}");
    }
    for bad in [
        "",
        "-",
        "-0",
        "007",
        "+1",
        " 1",
        "1.5",
        "9223372036854775808",
        "abc",
    ] {
        assert_eq!(parse_i64_strict(bad.as_bytes()), None, "{bad}");
    }
}

#[test]
fn set_options_parse_like_redis() {
    assert!(matches!(
        Command::parse(&argv("set k v nx px 100")),
        Ok(Command::Set {
            cond: Some(SetCond::Nx),
            expiry: Some(SetExpiry::Px(100)),
            ..
        })
    ));
    assert!(matches!(
        Command::parse(&argv("SET k v EX 10 EX 20")),
        Ok(Command::Set {
            expiry: Some(SetExpiry::Ex(20)),
            ..
        })
    ));
    for bad in [
        "SET k v NX XX",
        "SET k v EX 10 PX 100",
        "SET k v KEEPTTL PX 1",
        "SET k v EX",
        "SET k v 100",
    ] {
        assert_eq!(
            Command::parse(&argv(bad)),
            Err(ParseError::Reply(ERR_SYNTAX.into())),
            "{bad}"
        );
    }
    assert_eq!(
        Command::parse(&argv("SET k")),
        Err(ParseError::Arity("set"))
    );
}

#[test]
fn typed_commands_round_trip_through_argv() {
    for s in [
        "SET k v NX GET PX 30",
        "PEXPIREAT k 5 GT",
        "DEL a b",
        "EVALSHA ae3671744a5dbb24ea37ef607b8b10ac7856d43e 1 k a",
        "WAIT 1 100",
        "HSET h a 1 b 2",
        "HGET h a",
        "HEXISTS h a",
        "HINCRBY h a -3",
        "HDEL h a b",
        "HGETALL h",
        "HLEN h",
        "HMGET h a b",
        "GETDEL k",
        "GETEX k",
        "GETEX k PERSIST",
        "GETEX k PXAT 5",
        "GETEX k EX abc",
        "TIME",
        "PUBLISH ch m",
        "STRLEN k",
        "APPEND k v",
        "SETRANGE k 3 v",
        "SETRANGE k -1 v",
        "RENAME a b",
        "RENAMENX a b",
        "COPY a b",
        "COPY a b DB 3 REPLACE",
        "COPY a b bogus",
        "OBJECT ENCODING k",
        "ECHO m",
        "HKEYS h",
        "HVALS h",
        "HSETNX h f v",
        "HSTRLEN h f",
        "HMSET h a 1 b 2",
        "LPUSH l a b",
        "LPOP l",
        "LPOP l 3",
        "LPOP l x y",
        "LLEN l",
        "READONLY",
        "READWRITE",
        "AUTH pw",
        "AUTH default pw",
        "RANDOMKEY",
        "BLPOP l 0",
        "HINCRBYFLOAT h f 10.5",
        "HINCRBYFLOAT h f abc",
        "BLPOP a b 0.5",
        "MOVE k 1",
        "MOVE k x",
        "SWAPDB 0 1",
        "HELLO",
        "HELLO 2 AUTH default pw SETNAME app",
        "CLIENT ID",
        "CLIENT GETNAME",
        "CLIENT SETNAME app",
        "INFO",
        "INFO keyspace server",
    ] {
        let c = Command::parse(&argv(s)).unwrap();
        assert_eq!(Command::parse(&c.to_argv()).unwrap(), c, "{s}");
    }
}

#[test]
fn argument_errors_have_redis_70s_texts() {
    let err = |s: &str| Command::parse(&argv(s)).unwrap_err().client_reply();
    let e = |m: &str| Reply::err(m);
    assert_eq!(
        err("WAIT 1 abc"),
        e("ERR timeout is not an integer or out of range")
    );
    assert_eq!(err("WAIT abc abc"), e(ERR_NOT_INTEGER));
    assert_eq!(
        err("SCRIPT EXISTS"),
        e("ERR wrong number of arguments for 'script|exists' command")
    );
    assert_eq!(
        err("SCRIPT LOAD"),
        e("ERR wrong number of arguments for 'script|load' command")
    );
    assert_eq!(
        err("SCRIPT FLUSH bad"),
        e("ERR SCRIPT FLUSH only support SYNC|ASYNC option")
    );
    assert_eq!(
        err("SCRIPT bogus"),
        e("ERR unknown subcommand 'bogus'. Try SCRIPT HELP.")
    );
    // HSET's odd pair is its own check, past the table's arity: a script gets the same
    // text as a client (with the script suffix), not "Wrong number of args".
    let odd = Command::parse(&argv("HSET h a 1 b")).unwrap_err();
    assert_eq!(
        odd.script_reply(),
        e("ERR wrong number of arguments for 'hset' command")
    );
    assert_eq!(
        Command::parse(&argv("HSET h a"))
            .unwrap_err()
            .script_reply(),
        e("ERR Wrong number of args calling Redis command from script")
    );
    for bad in [
        "GETEX k EX 1 PX 1",
        "GETEX k PERSIST PX 1",
        "GETEX k PX",
        "GETEX k KEEPTTL",
    ] {
        assert_eq!(err(bad), e(ERR_SYNTAX), "{bad}");
    }
}

#[test]
fn the_new_commands_are_writes_exactly_when_redis_flags_them_write() {
    for (s, write) in [
        ("HSET h a 1", true),
        ("HINCRBY h a 1", true),
        ("HDEL h a", true),
        ("GETDEL k", true),
        ("GETEX k", true),
        ("HGET h a", false),
        ("HEXISTS h a", false),
        ("HGETALL h", false),
        ("HLEN h", false),
        ("HMGET h a", false),
        ("TIME", false),
        ("PUBLISH c m", false),
        ("APPEND k v", true),
        ("SETRANGE k 0 v", true),
        ("RENAME a b", true),
        ("RENAMENX a b", true),
        ("COPY a b", true),
        ("HSETNX h f v", true),
        ("HMSET h f v", true),
        ("LPUSH l a", true),
        ("LPOP l", true),
        ("STRLEN k", false),
        ("ECHO m", false),
        ("HKEYS h", false),
        ("HVALS h", false),
        ("HSTRLEN h f", false),
        ("LLEN l", false),
        ("READONLY", false),
        ("READWRITE", false),
        ("AUTH pw", false),
        ("RANDOMKEY", false),
        ("BLPOP l 0", true),
        ("HINCRBYFLOAT h f 1.5", true),
    ] {
        let c = Command::parse(&argv(s)).unwrap();
        assert_eq!(c.is_write(), write, "{s}");
        let name = s.split(' ').next().unwrap().to_ascii_lowercase();
        assert_eq!(is_write_command(&name), write, "{s}");
    }
}

#[test]
fn issue_27_argument_errors_have_redis_7_0_15s_texts_and_kinds() {
    let err = |s: &str| Command::parse(&argv(s)).unwrap_err();
    // A container's unknown subcommand is refused before the command runs (queue-time
    // in MULTI); a script gets the unknown-command text.
    let sub = err("OBJECT bogus k");
    assert_eq!(
        sub.client_reply(),
        Reply::err("ERR unknown subcommand 'bogus'. Try OBJECT HELP.")
    );
    assert!(matches!(sub, ParseError::UnknownSubcommand(_)));
    assert_eq!(
        sub.script_reply(),
        Reply::err("ERR Unknown Redis command called from script")
    );
    assert_eq!(err("OBJECT ENCODING"), ParseError::Arity("object|encoding"));
    assert_eq!(
        err("HMSET h a 1 b").client_reply(),
        Reply::err("ERR wrong number of arguments for 'hmset' command")
    );
    assert_eq!(err("AUTH a b c"), ParseError::Reply(ERR_SYNTAX.into()));
    assert_eq!(
        err("SELECT 2147483648").client_reply(),
        Reply::err("ERR value is out of range, value must between -2147483648 and 2147483647")
    );
    // The argument checks SETRANGE, LPOP and COPY make themselves come after
    // processCommand's refusals: they are read when the command runs.
    let b = |s: &str| Bytes::from(s);
    assert_eq!(
        setrange_offset(b"-1"),
        Err(ParseError::Reply("ERR offset is out of range".into()))
    );
    assert_eq!(
        lpop_count(&[b("-1")]),
        Err(ParseError::Reply(
            "ERR value is out of range, must be positive".into()
        ))
    );
    assert_eq!(lpop_count(&[b("0")]), Ok(Some(0)));
    assert_eq!(
        copy_options(&[b("db"), b("2"), b("replace")]),
        Ok((Some(2), true))
    );
    assert_eq!(
        copy_options(&[b("db"), b("16"), b("bogus")]),
        Err(ParseError::Reply("ERR DB index is out of range".into()))
    );
    assert_eq!(
        copy_options(&[b("bogus"), b("db"), b("16")]),
        Err(ParseError::Reply(ERR_SYNTAX.into()))
    );
    for name in ["role", "auth", "blpop"] {
        assert!(is_denied_in_scripts(name), "{name}");
    }
}

#[test]
fn unknown_command_names_its_arguments() {
    let e = Command::parse(&argv("FOO a b")).unwrap_err();
    assert_eq!(
        e.client_reply(),
        Reply::err("ERR unknown command 'FOO', with args beginning with: 'a' 'b' ")
    );
    assert_eq!(
        e.script_reply(),
        Reply::err("ERR Unknown Redis command called from script")
    );
}

#[test]
fn move_swapdb_client_and_script_subcommands_read_their_arguments_as_redis_7_0_15() {
    let err = |s: &str| Command::parse(&argv(s)).unwrap_err();
    // MOVE's db and SWAPDB's indexes are read when the command runs: an int first (SWAPDB
    // names which one), then the range.
    assert_eq!(move_db(b"15"), Ok(15));
    assert_eq!(
        move_db(b"x"),
        Err(ParseError::Reply(ERR_NOT_INTEGER.into()))
    );
    for bad in ["16", "-1"] {
        assert_eq!(
            move_db(bad.as_bytes()),
            Err(ParseError::Reply("ERR DB index is out of range".into())),
            "{bad}"
        );
    }
    let ids = |a: &str, c: &str| swapdb_indexes(&[Bytes::from(a), Bytes::from(c)]);
    assert_eq!(ids("0", "15"), Ok([0, 15]));
    assert_eq!(
        ids("x", "y"),
        Err(ParseError::Reply("ERR invalid first DB index".into()))
    );
    assert_eq!(
        ids("0", "2147483648"),
        Err(ParseError::Reply("ERR invalid second DB index".into()))
    );
    assert_eq!(
        ids("16", "x"),
        Err(ParseError::Reply("ERR invalid second DB index".into()))
    );
    assert_eq!(
        ids("16", "0"),
        Err(ParseError::Reply("ERR DB index is out of range".into()))
    );
    assert_eq!(err("SWAPDB 0"), ParseError::Arity("swapdb"));
    // CLIENT: subcommands with their own arity; SETINFO is 7.2's, unknown to 7.0.15 and
    // refused before a MULTI queues it; the others 7.0.15 has are model refusals.
    assert_eq!(err("CLIENT SETNAME"), ParseError::Arity("client|setname"));
    assert_eq!(err("CLIENT ID x"), ParseError::Arity("client|id"));
    let setinfo = err("CLIENT SETINFO LIB-NAME redis-py");
    assert_eq!(
        setinfo.client_reply(),
        Reply::err("ERR unknown subcommand 'SETINFO'. Try CLIENT HELP.")
    );
    assert!(matches!(setinfo, ParseError::UnknownSubcommand(_)));
    assert!(matches!(err("CLIENT LIST"), ParseError::Reply(_)));
    // SCRIPT BOGUS is refused at queue time too; KILL's arity is checked first.
    assert!(matches!(
        err("SCRIPT BOGUS"),
        ParseError::UnknownSubcommand(_)
    ));
    assert_eq!(err("SCRIPT KILL x"), ParseError::Arity("script|kill"));
    assert!(matches!(err("SCRIPT KILL"), ParseError::Reply(_)));
    // Errors name a container's subcommand as Redis does.
    let full = |s: &str| Command::parse(&argv(s)).unwrap().full_name();
    assert_eq!(full("SCRIPT LOAD x"), "script|load");
    assert_eq!(full("client getname"), "client|getname");
    assert_eq!(full("EXEC"), "exec");
    for name in ["hello", "client"] {
        assert!(is_denied_in_scripts(name), "{name}");
    }
    assert!(!is_denied_in_scripts("info"));
    for s in ["MOVE k 1", "SWAPDB 0 1"] {
        assert!(Command::parse(&argv(s)).unwrap().is_write(), "{s}");
    }
}
