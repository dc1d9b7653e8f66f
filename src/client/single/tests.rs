use super::*;

#[test]
fn tokens_are_prefix_dash_number() {
    assert_eq!(&token_bytes("c1", 0)[..], b"c1-0");
    assert_eq!(
        &token_bytes("c12", u64::MAX)[..],
        b"c12-18446744073709551615"
    );
}

mod token_tests {
    use super::*;
    use crate::time::ProcId;

    #[test]
    fn incremented_tokens_match_freshly_rendered_ones() {
        let cfg = ClientConfig {
            algorithm: Algorithm::SetPxCad,
            lock: 0,
            key: Bytes::from("lock"),
            redis: ProcId(0),
            resource: None,
            ttl_ms: 10,
            hold: NsRange::fixed(1),
            think: NsRange::fixed(0),
            retry: NsRange::fixed(1),
            request_timeout_ns: 1,
            max_attempts: None,
            rounds: None,
            fence_key: Bytes::from("fence"),
            token_prefix: "c7".into(),
            sentinels: vec![],
            wait_replicas: 0,
            wait_timeout_ms: 0,
            redis_py: None,
            options: None,
        };
        let mut c = LockClient::new(cfg);
        for n in 1..=10_500u64 {
            c.attempt = n;
            advance_token(&mut c.token, &mut c.token_attempt, "c7", n);
            assert_eq!(c.token, token_bytes("c7", n), "attempt {n}");
        }
        // A jump (not the next attempt) renders afresh.
        advance_token(&mut c.token, &mut c.token_attempt, "c7", 99_999);
        assert_eq!(c.token, token_bytes("c7", 99_999));
    }
}

/// A redis-py client config for the tests: timeout 10 s, the library's other defaults.
fn redis_py_tests_config() -> ClientConfig {
    ClientConfig {
        algorithm: Algorithm::SetPxCad,
        lock: 0,
        key: Bytes::from("lock"),
        redis: ProcId(1),
        resource: None,
        ttl_ms: 10_000,
        hold: NsRange::fixed(1_000 * NS_PER_MS),
        think: NsRange::fixed(500 * NS_PER_MS),
        retry: NsRange::fixed(redis_py::DEFAULT_SLEEP_MS * NS_PER_MS),
        request_timeout_ns: redis_py::DEFAULT_SOCKET_TIMEOUT_MS * NS_PER_MS,
        max_attempts: None,
        rounds: None,
        fence_key: Bytes::from("fence"),
        token_prefix: "t1".into(),
        sentinels: vec![],
        wait_replicas: 0,
        wait_timeout_ms: 0,
        redis_py: Some(RedisPyOptions {
            timeout_ms: Some(10_000),
            ..RedisPyOptions::defaults()
        }),
        options: None,
    }
}

mod redis_py_tests {
    //! redis-py's `Lock` through the client: each test names the lock.py line it copies.
    use super::*;
    use crate::client::redis_py::{RedisPyOptions, Refresh, SharedToken};
    use crate::process::Output;
    use crate::rng::{Prng, Seed};

    const MS: u64 = NS_PER_MS;
    const REDIS: ProcId = ProcId(1);

    fn config(o: RedisPyOptions) -> ClientConfig {
        ClientConfig {
            algorithm: Algorithm::SetPxCad,
            lock: 0,
            key: Bytes::from("lock"),
            redis: REDIS,
            resource: None,
            ttl_ms: 10_000,
            hold: NsRange::fixed(1_000 * MS),
            think: NsRange::fixed(500 * MS),
            retry: NsRange::fixed(redis_py::DEFAULT_SLEEP_MS * MS),
            request_timeout_ns: redis_py::DEFAULT_SOCKET_TIMEOUT_MS * MS,
            max_attempts: None,
            rounds: None,
            fence_key: Bytes::from("fence"),
            token_prefix: "t1".into(),
            sentinels: vec![],
            wait_replicas: 0,
            wait_timeout_ms: 0,
            redis_py: Some(o),
            options: None,
        }
    }

    struct H {
        c: LockClient,
        rng: Prng,
        mono_ns: u64,
    }

    impl H {
        fn new(cfg: ClientConfig) -> H {
            H {
                c: LockClient::new(cfg),
                rng: Seed(1).stream("t", 0),
                mono_ns: 1_000 * MS,
            }
        }
        fn run(&mut self, f: impl FnOnce(&mut LockClient, &mut Cx<'_>)) -> Vec<Output> {
            let mut out = Vec::new();
            let mut cx = Cx::new(ProcId(100), 0, self.mono_ns, &mut self.rng, &mut out);
            f(&mut self.c, &mut cx);
            out
        }
        fn reply(&mut self, id: u64, reply: Reply) -> Vec<Output> {
            self.run(|c, cx| c.on_message(cx, REDIS, Msg::Reply { id, reply }))
        }
        fn timer(&mut self, tag: u64) -> Vec<Output> {
            self.run(|c, cx| c.on_timer(cx, tag))
        }
    }

    fn sent(out: &[Output]) -> Vec<(u64, Command)> {
        out.iter()
            .filter_map(|o| match o {
                Output::Send {
                    msg: Msg::Request { id, cmd },
                    ..
                } => Some((*id, cmd.clone())),
                _ => None,
            })
            .collect()
    }

    fn step_timers(out: &[Output]) -> Vec<(u64, u64)> {
        out.iter()
            .filter_map(|o| match o {
                Output::Timer { after_ns, tag } if *tag != Timer::Request.tag() => {
                    Some((*after_ns, *tag))
                }
                _ => None,
            })
            .collect()
    }

    fn observed(out: &[Output]) -> Vec<Observation> {
        out.iter()
            .filter_map(|o| match o {
                Output::Observe(obs) => Some(obs.clone()),
                _ => None,
            })
            .collect()
    }

    fn with_timeout() -> RedisPyOptions {
        RedisPyOptions {
            timeout_ms: Some(10_000),
            ..RedisPyOptions::defaults()
        }
    }

    /// Acquires (OK to the first SET), then ends the 1 s hold: returns the release request.
    fn acquire_and_hold(h: &mut H) -> (u64, Command) {
        let (id, _) = sent(&h.run(|c, cx| c.on_start(cx)))[0].clone();
        let out = h.reply(id, Reply::Ok);
        let (_, hold_tag) = step_timers(&out)[0];
        h.mono_ns += 1_000 * MS;
        sent(&h.timer(hold_tag))[0].clone()
    }

    #[test]
    fn redis_py_s_default_lock_sends_set_nx_without_any_expiry() {
        // lock.py:83 `timeout=None`; :238-243 `px=None`.
        let mut h = H::new(config(RedisPyOptions::defaults()));
        let reqs = sent(&h.run(|c, cx| c.on_start(cx)));
        assert!(
            matches!(&reqs[0].1, Command::Set { cond: Some(SetCond::Nx), expiry: None,
            get: false, value, .. } if &value[..] == b"t1-1")
        );
        // ...and believes it holds with no validity at all.
        let out = h.reply(reqs[0].0, Reply::Ok);
        assert!(matches!(
            observed(&out)[..],
            [Observation::Acquired {
                validity_ns: None,
                ..
            }]
        ));
    }

    #[test]
    fn redis_py_with_a_timeout_sends_set_nx_px_timeout() {
        let mut h = H::new(config(with_timeout()));
        let reqs = sent(&h.run(|c, cx| c.on_start(cx)));
        assert!(matches!(
            &reqs[0].1,
            Command::Set {
                cond: Some(SetCond::Nx),
                expiry: Some(SetExpiry::Px(10_000)),
                ..
            }
        ));
    }

    #[test]
    fn a_blocked_redis_py_acquire_sleeps_100ms_and_gives_up_at_blocking_timeout() {
        // lock.py:84 `sleep=0.1`; :232-234 stop when the next try would start after
        // `stop_trying_at`. blocking_timeout 250 ms: tries at 0, 100, 200 ms, then gives up.
        let mut h = H::new(config(RedisPyOptions {
            blocking_timeout_ms: Some(250),
            ..with_timeout()
        }));
        let mut out = h.run(|c, cx| c.on_start(cx));
        for n in 0..3 {
            let (id, _) = sent(&out)[0].clone();
            let failed = h.reply(id, Reply::Nil);
            let timers = step_timers(&failed);
            if n < 2 {
                assert_eq!(timers[0].0, 100 * MS, "try {n}: sleep 0.1 s");
                assert!(observed(&failed).is_empty());
                h.mono_ns += 100 * MS;
                out = h.timer(timers[0].1);
            } else {
                assert_eq!(observed(&failed), vec![Observation::GaveUp { lock: 0 }]);
                assert_eq!(timers[0].0, 500 * MS, "then think");
            }
        }
    }

    #[test]
    fn redis_py_releases_by_evalsha_and_on_noscript_loads_the_script_and_evalshas_again() {
        // redis/commands/core.py:10936-10942 at v8.1.0.
        let mut h = H::new(config(with_timeout()));
        let (id, cmd) = acquire_and_hold(&mut h);
        let sha = Script::new(redis_py::RELEASE_SRC.as_bytes()).sha;
        assert!(
            matches!(&cmd, Command::Eval { script: ScriptRef::Sha(Some(s)), args, .. }
            if *s == sha && &args[0][..] == b"t1-1")
        );
        let out = h.reply(id, Reply::Error(NOSCRIPT.into()));
        let (id, cmd) = sent(&out)[0].clone();
        assert!(
            matches!(&cmd, Command::ScriptLoad(src) if &src[..] == redis_py::RELEASE_SRC.as_bytes())
        );
        let out = h.reply(id, Reply::Bulk(b"sha".to_vec()));
        let (_, cmd) = sent(&out)[0].clone();
        assert!(
            matches!(&cmd, Command::Eval { script: ScriptRef::Sha(Some(s)), .. } if *s == sha),
            "EVALSHA again, never EVAL: {cmd:?}"
        );
    }

    #[test]
    fn threads_sharing_a_lock_object_release_with_the_token_another_thread_stored_and_say_so() {
        // redis-py#416; lock.py:119-130. t1 acquires, then t2 acquires (t1's key expired):
        // t1's release then carries t2's token.
        let shared = SharedToken::new();
        let opts = RedisPyOptions {
            shared_token: Some(shared.clone()),
            ..with_timeout()
        };
        let mut t1 = H::new(config(opts.clone()));
        let mut cfg2 = config(opts);
        cfg2.token_prefix = "t2".into();
        let mut t2 = H::new(cfg2);
        let (id1, _) = sent(&t1.run(|c, cx| c.on_start(cx)))[0].clone();
        let hold1 = step_timers(&t1.reply(id1, Reply::Ok))[0].1;
        let (id2, _) = sent(&t2.run(|c, cx| c.on_start(cx)))[0].clone();
        t2.reply(id2, Reply::Ok);
        let out = t1.timer(hold1);
        let (_, cmd) = sent(&out)[0].clone();
        assert!(
            matches!(&cmd, Command::Eval { args, .. } if &args[0][..] == b"t2-1"),
            "{cmd:?}"
        );
        // The timeline's `Released` names the token t1 believed it held (its holding ends);
        // a note beside it names the one its release sends.
        let obs: Vec<&Observation> = out
            .iter()
            .filter_map(|o| match o {
                Output::Observe(o) => Some(o),
                _ => None,
            })
            .collect();
        assert!(
            matches!(obs[..], [Observation::Released { token, .. }, Observation::Note(n)]
                if &token[..] == b"t1-1" && n.contains("sends t2-1") && n.contains("own t1-1")),
            "{obs:?}"
        );
        // With thread-local tokens (the default) it carries its own.
        let mut h = H::new(config(with_timeout()));
        let (_, cmd) = acquire_and_hold(&mut h);
        assert!(matches!(&cmd, Command::Eval { args, .. } if &args[0][..] == b"t1-1"));
    }

    #[test]
    fn redis_py_extend_adds_to_the_ttl_by_default_and_a_refused_one_is_lost() {
        // lock.py:296-311: args [token, additional_ms, "0"] (add), "1" with replace_ttl.
        let mut h = H::new(config(RedisPyOptions {
            refresh: Some((
                300,
                Refresh::Extend {
                    additional_ms: 5_000,
                    replace_ttl: false,
                },
            )),
            ..with_timeout()
        }));
        let (id, _) = sent(&h.run(|c, cx| c.on_start(cx)))[0].clone();
        let out = h.reply(id, Reply::Ok);
        let refresh_tag = out
            .iter()
            .find_map(|o| match o {
                Output::Timer { after_ns, tag } if *after_ns == 300 * MS => Some(*tag),
                _ => None,
            })
            .expect("refresh timer");
        let (id, cmd) = sent(&h.timer(refresh_tag))[0].clone();
        let sha = Script::new(redis_py::EXTEND_SRC.as_bytes()).sha;
        assert!(
            matches!(&cmd, Command::Eval { script: ScriptRef::Sha(Some(s)), args, .. }
            if *s == sha && &args[1][..] == b"5000" && &args[2][..] == b"0"),
            "{cmd:?}"
        );
        // 0: LockNotOwnedError (:315-318): the holder learns it lost the lock and releases.
        let out = h.reply(id, Reply::Int(0));
        assert!(matches!(
            observed(&out)[..],
            [Observation::Lost {
                reason: "extend failed",
                ..
            }]
        ));
        assert_eq!(sent(&out).len(), 1, "the release goes out");
    }
}

mod redis_py_retry_tests {
    use super::*;
    use crate::process::Output;
    use crate::rng::Seed;

    #[test]
    fn redis_py_8_1_resends_a_timed_out_set_with_the_same_token_up_to_10_times() {
        // _defaults.py:37-39, retry.py:117-136: 10 retries, backoff min(1 s, rand·10 ms·2^n).
        let mut cfg = super::redis_py_tests_config();
        cfg.request_timeout_ns = 5_000 * NS_PER_MS;
        let mut c = LockClient::new(cfg);
        let mut rng = Seed(3).stream("t", 0);
        let mut mono = 0u64;
        let mut run = |c: &mut LockClient, mono: u64, f: &dyn Fn(&mut LockClient, &mut Cx<'_>)| {
            let mut out = Vec::new();
            let mut cx = Cx::new(ProcId(100), 0, mono, &mut rng, &mut out);
            f(c, &mut cx);
            out
        };
        let sets = |out: &[Output]| -> Vec<Bytes> {
            out.iter()
                .filter_map(|o| match o {
                    Output::Send {
                        msg:
                            Msg::Request {
                                cmd: Command::Set { value, .. },
                                ..
                            },
                        ..
                    } => Some(value.clone()),
                    _ => None,
                })
                .collect()
        };
        let step = |out: &[Output]| {
            out.iter().find_map(|o| match o {
                Output::Timer { after_ns, tag } if *tag != Timer::Request.tag() => {
                    Some((*after_ns, *tag))
                }
                _ => None,
            })
        };
        let first = run(&mut c, mono, &|c, cx| c.on_start(cx));
        assert_eq!(sets(&first), vec![Bytes::from("t1-1")]);
        for n in 1..=10u32 {
            mono += 5_000 * NS_PER_MS;
            let out = run(&mut c, mono, &|c, cx| c.on_timer(cx, Timer::Request.tag()));
            let (backoff, tag) = step(&out).expect("a backoff timer");
            let cap = ((10 * NS_PER_MS) << n).min(1_000 * NS_PER_MS);
            assert!(backoff <= cap, "retry {n}: {backoff} > {cap}");
            mono += backoff;
            let out = run(&mut c, mono, &|c, cx| c.on_timer(cx, tag));
            assert_eq!(
                sets(&out),
                vec![Bytes::from("t1-1")],
                "retry {n}: same token"
            );
        }
        // The 11th timeout raises: the acquire loop sleeps 0.1 s and tries anew.
        mono += 5_000 * NS_PER_MS;
        let out = run(&mut c, mono, &|c, cx| c.on_timer(cx, Timer::Request.tag()));
        assert_eq!(step(&out).map(|s| s.0), Some(100 * NS_PER_MS));
    }
}
