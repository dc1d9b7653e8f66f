#!/usr/bin/env python3
"""Drive redis-py's Lock from two worker processes against a local redis-server, pause one
worker with SIGSTOP past its lock's timeout, and write a distlock-log/1 log for
`distlock-sim check-log`.

    python3 examples/redis-py-harness/harness.py --port 6399 --out run.jsonl

Starts its own redis-server on loopback (port --port) unless --no-server. Both workers run
on this host, so the header declares one host with a small clock bound. The protected
resource is a Redis key written with a fencing token taken by INCR after acquiring (the
resource does NOT check it: that is the bug the log shows)."""

import argparse, json, os, signal, subprocess, sys, time

import redis


def now_ms():
    return time.time() * 1000.0


def worker(name, port, out_path, hold_s, start_delay_s):
    r = redis.Redis(port=port)
    time.sleep(start_delay_s)
    lines = []

    def rec(**ev):
        ev.update(host="h1", client=name)
        lines.append(ev)
        # Write as we go: a paused or killed worker keeps what it recorded.
        with open(out_path, "a") as f:
            f.write(json.dumps(ev) + "\n")

    lock = r.lock("resource-lock", timeout=1.0, blocking_timeout=5.0)
    inv = now_ms()
    ok = lock.acquire()
    comp = now_ms()
    token = lock.local.token.decode() if ok else ""
    # redis-py's Lock never checks validity: its client believes it holds until it releases.
    rec(op="acquire", lock="resource-lock", invoke_ms=inv, complete_ms=comp,
        result="ok" if ok else "fail", token=token, validity_ms=None)
    if not ok:
        return
    inv = now_ms()
    fence = r.incr("fence")
    print("in-critical-section", flush=True)  # the parent's cue to pause us
    time.sleep(hold_s)  # the critical section; the parent may SIGSTOP us here
    inv = now_ms()
    r.set("resource", f"{name}:{fence}")
    rec(op="write", resource="resource", invoke_ms=inv, complete_ms=now_ms(), result="ok",
        token=fence)
    inv = now_ms()
    try:
        lock.release()
        res = "ok"
    except redis.exceptions.LockError:
        res = "fail"
    rec(op="release", lock="resource-lock", invoke_ms=inv, complete_ms=now_ms(), result=res,
        token=token)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=6399)
    ap.add_argument("--out", default="redis-py-pause.jsonl")
    ap.add_argument("--pause-s", type=float, default=2.5)
    ap.add_argument("--no-server", action="store_true")
    a = ap.parse_args()
    server = None
    if not a.no_server:
        server = subprocess.Popen(["redis-server", "--port", str(a.port), "--bind", "127.0.0.1",
                                   "--save", "", "--appendonly", "no"],
                                  stdout=subprocess.DEVNULL)
        time.sleep(0.3)
    try:
        redis.Redis(port=a.port).flushall()
        with open(a.out, "w") as f:
            f.write(json.dumps({"schema": "distlock-log/1",
                                "hosts": {"h1": {"clock_uncertainty_ms": 1}}}) + "\n")
        # w1 takes the lock first; once it is inside its critical section, w2 starts and
        # waits for the lock, and w1 is paused past the lock's 1 s timeout.
        p1 = subprocess.Popen([sys.executable, __file__, "--worker", "w1", str(a.port), a.out,
                               "0.2", "0"], stdout=subprocess.PIPE, text=True)
        assert p1.stdout.readline().strip() == "in-critical-section"
        os.kill(p1.pid, signal.SIGSTOP)
        p2 = subprocess.Popen([sys.executable, __file__, "--worker", "w2", str(a.port), a.out,
                               "0.2", "0"], stdout=subprocess.DEVNULL)
        time.sleep(a.pause_s)
        os.kill(p1.pid, signal.SIGCONT)
        p1.wait()
        p2.wait()
    finally:
        if server:
            server.terminate()
            server.wait()
    print(f"wrote {a.out}")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker(sys.argv[2], int(sys.argv[3]), sys.argv[4], float(sys.argv[5]),
               float(sys.argv[6]))
    else:
        main()
