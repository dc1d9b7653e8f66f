#!/usr/bin/env python3
"""Record a lost update made by two real Redlock clients, for `distlock-sim check-log`.

Opt-in, never run by `cargo test`: needs `redis-server` on PATH and, in a virtualenv outside
the repository, the two libraries it drives:

    python3 -m venv /tmp/venv-redlock
    /tmp/venv-redlock/bin/pip install pottery==3.0.1 redlock-py==1.0.8
    /tmp/venv-redlock/bin/python tests/check-log/redlock-lost-update.py --out run.jsonl
    distlock-sim check-log run.jsonl            # exit code 1

Three redis-servers on loopback are the Redlock masters and a fourth holds the resource, a
counter that each worker increments by read-modify-write (GET, then SET to one more). Every
process is started here, tracked by PID and killed by PID at the end; the servers keep no
files (`--save '' --appendonly no`, a temporary directory).

One run:
  1. worker A (pottery, by default) takes the lock (TTL 2 s), reads the counter, checks its
     validity (`Redlock.locked()` > 0) and reports that it passed;
  2. the parent stops A with SIGSTOP for 2.7 s, past the TTL, and starts worker B
     (redlock-py, by default), which takes the lock once the keys expire on all three
     masters, reads the counter, works 1 s, checks its validity and writes;
  3. A, resumed, writes what it computed before the pause — while B holds the lock — and B
     then overwrites it from its own stale read: the counter ends at 1 after two increments.

Both workers append `distlock-log/1` lines (docs/check-log.md) as they go, with the
validity each library believed, logged the way docs/check-log.md says for that library:
pottery's as `validity_ms` from the start of the attempt that won (the harness makes each
attempt itself, `acquire(blocking=False)`), redlock-py's `Lock.validity` as
`validity_left_ms` (what was left when `lock()` returned). Reads log `read_version` and
writes `read_version`/`wrote_version`: the counter's value is its version. `--v1-fields`
writes a second log with only the fields check-log accepted before `stale_write` and
`lost_update` existed (validity converted to `validity_ms` from the invoke, no versions).
"""

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HOST = "127.0.0.1"
LOCK_KEY = "counter-lock"          # pottery stores it as "redlock:counter-lock"
LOCK_NAME = "redlock:" + LOCK_KEY  # the Redis key both libraries contend on
LOG_HOST = "h1"                    # both workers run on this machine: one clock


def now_ms():
    return time.time() * 1000.0


class Log:
    """Appends one JSON line per call: a stopped or killed worker keeps what it wrote."""

    def __init__(self, path, client):
        self.fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        self.client = client

    def rec(self, **ev):
        ev.update(host=LOG_HOST, client=self.client)
        os.write(self.fd, (json.dumps(ev) + "\n").encode())


class PotteryLock:
    """pottery 3.0.1's Redlock. The validity it believes runs from the start of the attempt
    that won: pottery/redlock.py:325 starts the timer as `_acquire_masters` begins, :344-347
    accept only while auto_release_time - drift - elapsed > 0, drift is
    auto_release_time * 0.01 + 0.002 s (:315-316). One `acquire(blocking=False)` is one
    attempt (:429-430), so its invoke is that start."""

    def __init__(self, ports, ttl_s):
        from pottery import Redlock
        from redis import Redis
        self.lock = Redlock(key=LOCK_KEY, masters={Redis(host=HOST, port=p) for p in ports},
                            auto_release_time=ttl_s)
        self.ttl_s = ttl_s

    def attempt(self):
        inv = now_ms()
        ok = self.lock.acquire(blocking=False)
        comp = now_ms()
        drift_s = self.ttl_s * 0.01 + 0.002
        return inv, comp, ok, self.lock._uuid, {"validity_ms": (self.ttl_s - drift_s) * 1000}

    def still_valid(self):
        # Redlock.locked(): the masters' PTTL less drift and the call's time (:474-498).
        return self.lock.locked() > 0

    def release(self):
        from pottery import ReleaseUnlockedLock
        try:
            self.lock.release()
            return "ok"
        except ReleaseUnlockedLock:
            return "fail"


class RedlockPyLock:
    """redlock-py 1.0.8 (SPSCommerce/redlock-py@42ef491, redlock/__init__.py). `lock()`
    returns `Lock(validity, ...)` with validity = ttl - elapsed - drift computed when it
    returns (:100, :108-109, :113): what is left then, so it is logged as
    `validity_left_ms`. `retry_count=1` makes one call one attempt (:98)."""

    def __init__(self, ports, ttl_s):
        from redlock import Redlock
        self.dlm = Redlock([{"host": HOST, "port": p} for p in ports], retry_count=1)
        self.ttl_ms = int(ttl_s * 1000)
        self.held = None
        self.valid_until_ms = None

    def attempt(self):
        inv = now_ms()
        lock = self.dlm.lock(LOCK_NAME, self.ttl_ms)
        comp = now_ms()
        if not lock:
            return inv, comp, False, "", {"validity_left_ms": None}
        self.held = lock
        self.valid_until_ms = comp + lock.validity
        return inv, comp, True, lock.key.decode(), {"validity_left_ms": lock.validity}

    def still_valid(self):
        return now_ms() < self.valid_until_ms

    def release(self):
        # unlock() does not say whether its compare-and-delete removed anything.
        self.dlm.unlock(self.held)
        return "ok"


LIBS = {"pottery": PotteryLock, "redlock-py": RedlockPyLock}


def worker(name, lib, ports, resource_port, log_path, ttl_s, work_s):
    import redis
    log = Log(log_path, name)
    lock = LIBS[lib](ports, ttl_s)
    db = redis.Redis(host=HOST, port=resource_port)
    while True:
        inv, comp, ok, token, validity = lock.attempt()
        log.rec(op="acquire", lock=LOCK_NAME, invoke_ms=inv, complete_ms=comp,
                result="ok" if ok else "fail", token=token, **validity)
        if ok:
            break
        time.sleep(0.02)
    inv = now_ms()
    seen = int(db.get("counter"))
    log.rec(op="read", resource="counter", invoke_ms=inv, complete_ms=now_ms(), result="ok",
            token=None, read_version=seen)
    if not lock.still_valid():
        print("validity-check-failed", flush=True)
        return
    print("checked", flush=True)  # the parent's cue to stop us
    time.sleep(work_s)  # the critical section's work; the parent may SIGSTOP us here
    inv = now_ms()
    db.set("counter", seen + 1)
    log.rec(op="write", resource="counter", invoke_ms=inv, complete_ms=now_ms(), result="ok",
            token=None, read_version=seen, wrote_version=seen + 1)
    inv = now_ms()
    res = lock.release()
    log.rec(op="release", lock=LOCK_NAME, invoke_ms=inv, complete_ms=now_ms(), result=res,
            token=token)
    print("done", flush=True)


def start_server(port, tmp):
    p = subprocess.Popen(["redis-server", "--port", str(port), "--bind", HOST, "--save", "",
                          "--appendonly", "no", "--dir", tmp, "--dbfilename", f"{port}.rdb",
                          "--logfile", os.path.join(tmp, f"{port}.log")],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    import redis
    deadline = time.time() + 10
    while time.time() < deadline:
        try:
            if redis.Redis(host=HOST, port=port, socket_timeout=0.2).ping():
                return p
        except redis.exceptions.ConnectionError:
            time.sleep(0.02)
    raise RuntimeError(f"redis-server on port {port} did not answer")


def v1_fields(src, dst):
    """The same log with only the fields check-log accepted before versions and
    `validity_left_ms`: validity counted from the invoke instead."""
    with open(src) as f, open(dst, "w") as out:
        for i, line in enumerate(f):
            ev = json.loads(line)
            if i > 0:
                left = ev.pop("validity_left_ms", None)
                if left is not None:
                    ev["validity_ms"] = left + (ev["complete_ms"] - ev["invoke_ms"])
                ev.pop("read_version", None)
                ev.pop("wrote_version", None)
            out.write(json.dumps(ev) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="redlock-lost-update.jsonl")
    ap.add_argument("--v1-fields", help="also write the log with the old fields only here")
    ap.add_argument("--a", default="pottery", choices=sorted(LIBS))
    ap.add_argument("--b", default="redlock-py", choices=sorted(LIBS))
    ap.add_argument("--ports", default="7741,7742,7743", help="the three Redlock masters")
    ap.add_argument("--resource-port", type=int, default=7744)
    ap.add_argument("--ttl-s", type=float, default=2.0)
    ap.add_argument("--pause-s", type=float, default=2.7)
    a = ap.parse_args()
    ports = [int(p) for p in a.ports.split(",")]
    tmp = tempfile.mkdtemp(prefix="redlock-harness-")
    procs = []
    try:
        import redis
        for p in ports + [a.resource_port]:
            procs.append(start_server(p, tmp))
        for p in ports:
            redis.Redis(host=HOST, port=p).flushall()
        db = redis.Redis(host=HOST, port=a.resource_port)
        db.flushall()
        db.set("counter", 0)
        with open(a.out, "w") as f:
            f.write(json.dumps({"schema": "distlock-log/1",
                                "hosts": {LOG_HOST: {"clock_uncertainty_ms": 1}}}) + "\n")
        me = os.path.abspath(__file__)
        common = [",".join(map(str, ports)), str(a.resource_port), a.out, str(a.ttl_s)]
        wa = subprocess.Popen([sys.executable, me, "--worker", f"A-{a.a}", a.a] + common + ["0.1"],
                              stdout=subprocess.PIPE, text=True)
        procs.append(wa)
        cue = wa.stdout.readline().strip()
        if cue != "checked":
            raise RuntimeError(f"worker A said {cue!r}")
        os.kill(wa.pid, signal.SIGSTOP)
        stopped = time.time()
        wb = subprocess.Popen([sys.executable, me, "--worker", f"B-{a.b}", a.b] + common + ["1.0"],
                              stdout=subprocess.PIPE, text=True)
        procs.append(wb)
        time.sleep(max(0.0, a.pause_s - (time.time() - stopped)))
        os.kill(wa.pid, signal.SIGCONT)
        print(f"worker A stopped {time.time() - stopped:.3f} s", file=sys.stderr)
        outs = [w.communicate(timeout=30)[0].split() for w in (wa, wb)]
        inv = now_ms()
        final = int(db.get("counter"))
        Log(a.out, "auditor").rec(op="read", resource="counter", invoke_ms=inv,
                                  complete_ms=now_ms(), result="ok", token=None,
                                  read_version=final)
        print(f"workers said {outs}; counter is {final} after two increments", file=sys.stderr)
        if a.v1_fields:
            v1_fields(a.out, a.v1_fields)
    finally:
        for p in procs:
            if p.poll() is None:
                for sig in (signal.SIGCONT, signal.SIGKILL):
                    try:
                        os.kill(p.pid, sig)
                    except ProcessLookupError:
                        pass
                p.wait(timeout=5)
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"wrote {a.out}")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        name, lib, ports, resource_port, log_path, ttl_s, work_s = sys.argv[2:9]
        worker(name, lib, [int(p) for p in ports.split(",")], int(resource_port), log_path,
               float(ttl_s), float(work_s))
    else:
        main()
