#!/usr/bin/python3
"""uncontended.py -- hilock-bench's "uncontended" scenario on redis-py's Lock.

redis-py is synchronous: --inflight K means K threads, each looping acquire
-> release on its own lock key for --seconds, sharing one redis.Redis (its
connection pool gives each thread its own connection; the GIL serialises the
Python side). Prints one JSON line: pairs/s and the acquire latency p50/p99.
Exits 1 when a request failed, 2 on bad usage.

  /usr/bin/python3 uncontended.py --port 6379 --seconds 3 --inflight 1
"""
import os
import threading

import common

HARD_STOP_S = 30  # after --seconds: give up on stuck threads


def loop(r, key, end_ns, lat, errs):
    """Acquire and release key until end_ns; latencies into lat."""
    lk = r.lock(key, timeout=common.LEASE_S, sleep=common.RETRY_S,
                blocking=True, blocking_timeout=common.WAIT_S)
    while common.now_ns() < end_ns:
        call = common.now_ns()
        try:
            got = lk.acquire()
        except Exception:  # connection or server error: count, go on
            errs.append(1)
            continue
        if not got:
            errs.append(1)
            continue
        lat.append(common.now_ns() - call)
        try:
            lk.release()
        except Exception:
            errs.append(1)


def main():
    o = common.parse_args([("inflight", 1)])
    if not 1 <= o.inflight <= 1000:
        raise SystemExit(2)
    r = common.client(o.port)
    keys = [f"peers:redis-py:uncontended:{i}" for i in range(o.inflight)]
    r.delete(*keys)
    for k in keys:  # warm-up: one pair per key, registers the script
        lk = r.lock(k, timeout=common.LEASE_S)
        lk.acquire()
        lk.release()
    lat, errs = [], []
    start = common.now_ns()
    end = start + o.seconds * 1_000_000_000
    threads = [threading.Thread(target=loop, args=(r, k, end, lat, errs),
                                daemon=True) for k in keys]
    for t in threads:
        t.start()
    deadline = end + HARD_STOP_S * 1_000_000_000
    for t in threads:
        t.join(max(0.0, (deadline - common.now_ns()) / 1e9))
    overrun = any(t.is_alive() for t in threads)
    elapsed = (common.now_ns() - start) / 1e9
    lat.sort()
    common.emit({
        "scenario": "uncontended",
        "library": "redis-py",
        "version": common.version(),
        "client": f"redis-py {common.version()} (threads)",
        "inflight": o.inflight,
        "seconds": o.seconds,
        "elapsed_s": round(elapsed, 3),
        "pairs": len(lat),
        "pairs_per_s": round(len(lat) / elapsed),
        "acquire_p50_us": common.us(common.percentile(lat, 50)),
        "acquire_p99_us": common.us(common.percentile(lat, 99)),
        "errors": len(errs) + overrun,
        "settings": common.SETTINGS,
    })
    os._exit(1 if errs or overrun else 0)


if __name__ == "__main__":
    main()
