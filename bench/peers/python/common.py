"""common.py -- what uncontended.py and contended.py share.

Not part of CI: these scripts measure redis-py's Lock (Debian's python3-redis,
run with /usr/bin/python3) next to hilock; see ../README.md. Everything talks
to 127.0.0.1 only.
"""
import argparse
import json
import math
import sys
import time

import redis

LEASE_S = 10.0         # Lock(timeout=...): lease of every acquisition
WAIT_S = 10.0          # blocking_timeout: how long one acquire may wait
RETRY_S = 0.01         # sleep: pause between two attempts of a blocked acquire

SETTINGS = (f"Lock(timeout={LEASE_S:g} s, blocking=True, "
            f"blocking_timeout={WAIT_S:g} s, sleep={RETRY_S:g} s); "
            "waiters are threads sharing one redis.Redis connection pool")


def parse_args(extra):
    """Parse --port/--seconds plus the scenario's options in extra, a list of
    (name, default) pairs. Exits 2 on bad usage."""
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, default=6379)
    p.add_argument("--seconds", type=int, default=3)
    for name, default in extra:
        p.add_argument("--" + name, type=int, default=default)
    p.add_argument("--child", type=int, default=-1, help=argparse.SUPPRESS)
    o = p.parse_args()
    if o.seconds < 1 or not 0 < o.port < 65536:
        p.error("--seconds >= 1, --port 1..65535")
    return o


def client(port, conns=None):
    """A redis.Redis on 127.0.0.1:port with bounded connect and I/O waits."""
    return redis.Redis(host="127.0.0.1", port=port, socket_timeout=5,
                       socket_connect_timeout=2, max_connections=conns)


def now_ns():
    """CLOCK_MONOTONIC in ns, as hilock and node's hrtime use it."""
    return time.monotonic_ns()


def percentile(sorted_v, p):
    """Nearest-rank percentile of a sorted list (hilock's definition)."""
    n = len(sorted_v)
    if n == 0:
        return 0
    rank = math.ceil(p / 100.0 * n - 1e-6)
    return sorted_v[min(max(rank, 1), n) - 1]


def us(ns):
    """ns as microseconds with one decimal."""
    return round(ns / 1000.0, 1)


def version():
    return redis.__version__


def emit(obj):
    """Print the one JSON line of a run."""
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()
