#!/usr/bin/python3
"""contended.py -- hilock-bench's "contended" scenario on redis-py's Lock.

--procs P processes run --waiters W waiters in all (threads, split evenly)
on ONE lock key. Every waiter loops: Lock.acquire() (blocking, polling every
sleep=0.01 s up to blocking_timeout), critical section = GET counter then
SET counter+1 on the same redis.Redis, release, acquire again. After
--seconds each process stops: critical sections under way finish and
release; acquires still polling are abandoned (redis-py cannot cancel one),
and one that succeeds after the stop is released without a critical
section. The parent merges the records (CLOCK_MONOTONIC is machine-wide)
and prints one JSON line with critical sections/s, wait p50/p99 and the
checks (final counter == acquisitions, sections disjoint, each read the
previous write). Exits 1 on a failed check, error or failed process.

  /usr/bin/python3 contended.py --port 6379 --seconds 3 --procs 4 --waiters 100
"""
import json
import os
import select
import subprocess
import sys
import threading
import time

import common

LOCK_KEY = "peers:redis-py:contended"
COUNTER_KEY = "peers:redis-py:contended:counter"
READY_TIMEOUT_S = 10
CHILD_GRACE_S = 20    # child's hard stop after --seconds
PARENT_GRACE_S = 30   # parent kills children after --seconds + this


# ---- child: one process, W/P threads, one redis.Redis ---------------------

class Child:
    """One process's waiters and what they recorded."""

    def __init__(self, o, index):
        self.r = common.client(o.port)
        self.first = index * o.waiters // o.procs
        self.last = (index + 1) * o.waiters // o.procs
        self.cv = threading.Condition()
        self.stopping = False
        self.in_cs = 0
        self.recs = []  # (call, acq, rel, seen, waiter)
        self.st = {"timeouts": 0, "acq_errors": 0, "rel_errors": 0,
                   "cs_errors": 0, "overrun": 0}

    def count(self, what):
        with self.cv:
            self.st[what] += 1

    def critical_section(self):
        """GET counter, SET counter+1: the value read, or -1 on error."""
        try:
            v = self.r.get(COUNTER_KEY)
            seen = int(v) if v is not None else 0
            self.r.set(COUNTER_KEY, seen + 1)
            return seen
        except Exception:
            self.count("cs_errors")
            return -1

    def waiter(self, wid):
        lk = self.r.lock(LOCK_KEY, timeout=common.LEASE_S,
                         sleep=common.RETRY_S, blocking=True,
                         blocking_timeout=common.WAIT_S)
        while True:
            call = common.now_ns()
            try:
                got = lk.acquire()
            except Exception:
                self.count("acq_errors")
                time.sleep(common.RETRY_S)
                continue
            if not got:
                self.count("timeouts")
                continue
            with self.cv:
                stop = self.stopping
                if not stop:
                    self.in_cs += 1
            if stop:  # acquired after the stop: no critical section
                try:
                    lk.release()
                except Exception:
                    pass
                return
            acq = common.now_ns()
            seen = self.critical_section()
            self.recs.append((call, acq, common.now_ns(), seen, wid))
            try:
                lk.release()
            except Exception:
                self.count("rel_errors")
            with self.cv:
                self.in_cs -= 1
                self.cv.notify_all()

    def run(self, seconds):
        """Start the threads, stop after seconds, return when no critical
        section is under way (or at the hard stop)."""
        for wid in range(self.first, self.last):
            threading.Thread(target=self.waiter, args=(wid,),
                             daemon=True).start()
        time.sleep(seconds)
        with self.cv:
            self.stopping = True
            if not self.cv.wait_for(lambda: self.in_cs == 0, CHILD_GRACE_S):
                self.st["overrun"] = 1


def child_main(o):
    c = Child(o, o.child)
    c.r.ping()
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    if sys.stdin.readline().strip() != "go":  # EOF: the parent gave up
        os._exit(1)
    c.run(o.seconds)
    with c.cv:
        out = {"st": c.st, "recs": list(c.recs)}
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()
    os._exit(0)  # abandons threads still polling in acquire()


# ---- parent ---------------------------------------------------------------

def start_children(o):
    """Start the children and wait until each said ready; the Popen list and
    whether all did."""
    kids = []
    for i in range(o.procs):
        args = [sys.executable, os.path.abspath(__file__), "--port",
                str(o.port), "--seconds", str(o.seconds), "--procs",
                str(o.procs), "--waiters", str(o.waiters), "--child", str(i)]
        kids.append(subprocess.Popen(args, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True))
    deadline = time.monotonic() + READY_TIMEOUT_S
    for k in kids:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([k.stdout], [], [], left)[0] \
                or k.stdout.readline().strip() != "ready":
            return kids, False
    return kids, True


def run_children(o):
    """Run the children together; (results, failed processes)."""
    kids, ok = start_children(o)
    for k in kids:
        try:
            k.stdin.write("go\n" if ok else "")
            k.stdin.close()
        except OSError:
            pass
    results, failed = [], 0
    deadline = time.monotonic() + o.seconds + PARENT_GRACE_S
    for k in kids:
        line = ""
        left = deadline - time.monotonic()
        if ok and left > 0 and select.select([k.stdout], [], [], left)[0]:
            line = k.stdout.readline()
        if k.poll() is None:
            try:
                k.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                sys.stderr.write(f"contended: process {k.pid} overran: "
                                 "killed\n")
                k.kill()
                k.wait()
        if k.returncode != 0 or not line:
            failed += 1
            continue
        results.append(json.loads(line))
    return results, failed


def parent_main(o):
    r = common.client(o.port)
    r.delete(LOCK_KEY, COUNTER_KEY)
    r.set(COUNTER_KEY, 0)
    results, failed = run_children(o)
    counter = int(r.get(COUNTER_KEY) or 0)
    st = {"timeouts": 0, "acq_errors": 0, "rel_errors": 0, "cs_errors": 0,
          "overrun": 0}
    recs = []
    for res in results:
        for k in st:
            st[k] += res["st"][k]
        recs.extend(res["recs"])
    recs.sort(key=lambda x: x[1])
    n = len(recs)
    waits = sorted(x[1] - x[0] for x in recs)
    overlaps = sum(1 for i in range(1, n) if recs[i][1] <= recs[i - 1][2])
    seen_bad = sum(1 for i in range(n) if recs[i][3] != i)
    same = sum(1 for i in range(1, n) if recs[i][4] == recs[i - 1][4])
    span = (recs[-1][2] - recs[0][0]) / 1e9 if n else 0.0
    errors = st["acq_errors"] + st["rel_errors"] + st["cs_errors"]
    failed += st["overrun"]
    ok = (counter == n and overlaps == 0 and seen_bad == 0 and errors == 0
          and failed == 0)
    common.emit({
        "scenario": "contended",
        "library": "redis-py",
        "version": common.version(),
        "client": f"redis-py {common.version()} (threads)",
        "procs": o.procs,
        "waiters": o.waiters,
        "seconds": o.seconds,
        "acquisitions": n,
        "span_s": round(span, 3),
        "cs_per_s": round(n / span) if span > 0 else 0,
        "wait_p50_us": common.us(common.percentile(waits, 50)),
        "wait_p99_us": common.us(common.percentile(waits, 99)),
        "wait_max_us": common.us(waits[-1] if n else 0),
        "waiters_served": len({x[4] for x in recs}),
        "previous_holder_share": round(same / (n - 1), 3) if n > 1 else 0,
        "counter": counter,
        "counter_ok": counter == n,
        "overlaps": overlaps,
        "seen_mismatches": seen_bad,
        "starved": st["timeouts"],
        "errors": {"acquire": st["acq_errors"], "release": st["rel_errors"],
                   "critical_section": st["cs_errors"]},
        "failed_processes": failed,
        "ok": ok,
        "settings": common.SETTINGS,
    })
    if not ok:
        sys.stderr.write(f"contended: FAIL: counter {counter} for {n} "
                         f"acquisitions, {overlaps} overlaps, {seen_bad} "
                         f"stale reads, {errors} request errors, {failed} "
                         "failed processes\n")
    return 0 if ok else 1


def main():
    o = common.parse_args([("procs", 4), ("waiters", 100)])
    if not 1 <= o.procs <= 64 or not o.procs <= o.waiters <= 10000:
        raise SystemExit(2)
    if o.child >= 0:
        child_main(o)
    sys.exit(parent_main(o))


if __name__ == "__main__":
    main()
