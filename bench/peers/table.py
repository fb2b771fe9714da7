#!/usr/bin/python3
"""table.py -- helpers of bench/peers/run (standard library only).

  table.py table DIR K1,K2 PROCS WAITERS SECONDS
      print the comparison table from DIR/<library>.<cell>.json, where cell
      is u<K> (uncontended with K in flight) or contended, and the notes in
      DIR/notes.txt; exit 0.
  table.py free-port
      print a loopback TCP port nothing listens on.

The peers' scripts write the figures under fixed names (pairs_per_s,
acquire_p50_us, cs_per_s, wait_p50_us, counter, acquisitions, ...).
hilock-bench's --json is read with the same names, but tolerantly: nested
objects are flattened with "_", latencies may carry _ns, _us, _ms or _s,
and a list of runs is searched for the one with the asked inflight.
"""
import json
import os
import re
import socket
import sys

LIBRARIES = ["hilock", "hilock-fair", "redlock", "redis-semaphore",
             "redis-py"]


# ---- reading figures ------------------------------------------------------

def flatten(obj, prefix=""):
    """{"a": {"b": 1}} -> {"a_b": 1}; keys lower-cased, non-alnum -> "_"."""
    out = {}
    if isinstance(obj, dict):
        for k, v in obj.items():
            key = re.sub(r"[^a-z0-9]+", "_", str(k).lower()).strip("_")
            out.update(flatten(v, f"{prefix}_{key}" if prefix else key))
    elif not isinstance(obj, list):
        out[prefix] = obj
    return out


def pick_run(obj, k):
    """The object describing the run with k in flight: the dict (obj or one
    inside it) whose inflight/in_flight/k is k; obj itself when nothing in
    it names an inflight; else None (the run had another K)."""
    def walk(o):
        if isinstance(o, dict):
            for key in ("inflight", "in_flight", "k", "concurrency"):
                if o.get(key) == k:
                    return o
            for v in o.values():
                found = walk(v)
                if found is not None:
                    return found
        elif isinstance(o, list):
            for v in o:
                found = walk(v)
                if found is not None:
                    return found
        return None
    if k is None or not isinstance(obj, (dict, list)):
        return obj if isinstance(obj, dict) else None
    found = walk(obj)
    if found is not None:
        return found
    # No run names its inflight at all: the object is the run.
    keys = set(flatten(obj)) if isinstance(obj, dict) else {"?"}
    if isinstance(obj, dict) and not any(
            key.split("_")[-1] in ("inflight", "k", "concurrency")
            or key.endswith("in_flight") for key in keys):
        return obj
    return None


def number(v):
    if isinstance(v, bool) or v is None:
        return None
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def rate(flat, names, pattern=None):
    """The first of names (exact, then as a key suffix) that is a number;
    else the only numeric key matching the regex pattern."""
    for exact in (True, False):
        for n in names:
            for key, v in flat.items():
                if (key == n if exact else key.endswith("_" + n)) \
                        and number(v) is not None:
                    return number(v)
    if pattern:
        hits = [number(v) for key, v in flat.items()
                if re.search(pattern, key) and number(v) is not None]
        if len(hits) == 1:
            return hits[0]
    return None


UNITS = {"ns": 1e-3, "us": 1.0, "usec": 1.0, "ms": 1e3, "s": 1e6}


def latency_us(flat, what, pct):
    """A latency percentile in microseconds: keys like <what>_p50_us,
    <what>_p50_ns, <what>_latency_p50_ms; a key with p<pct> and a unit but
    without <what> only when it is the only one."""
    hits, loose = [], []
    for key, v in flat.items():
        m = re.search(rf"(?:^|_)p{pct}_(ns|us|usec|ms|s)$", key)
        if not m or number(v) is None:
            continue
        val = number(v) * UNITS[m.group(1)]
        (hits if what in key.split("_") else loose).append(val)
    if hits:
        return hits[0]
    return loose[0] if len(loose) == 1 else None


def figures(obj, cell):
    """The table's figures of one cell from a JSON object (peers' schema or
    hilock-bench's); missing ones are None."""
    k = int(cell[1:]) if cell.startswith("u") else None
    run = pick_run(obj, k)
    if run is None:
        return {}
    # hilock-bench puts reference measurements (raw EVALSHA, "ceiling";
    # SET NX PX; the serial loop of "perfect_lock") beside hilock's own
    # figures: keep only the library's.
    flat = {key: v for key, v in flatten(run).items()
            if not key.startswith(("ceiling_", "raw_", "baseline_",
                                   "set_nx_px_", "perfect_lock_"))}
    if k is not None:
        f = {"rate": rate(flat, ["pairs_per_s", "pairs_per_sec",
                                 "pairs_per_second", "pairs_s", "ops_per_s",
                                 "throughput"], r"pair.*_per_s(ec)?$"),
             "p50": latency_us(flat, "acquire", 50),
             "p99": latency_us(flat, "acquire", 99)}
        if f["rate"] is None:
            pairs, secs = rate(flat, ["pairs"]), rate(flat, ["elapsed_s"])
            if pairs is not None and secs:
                f["rate"] = pairs / secs
        return f
    f = {"rate": rate(flat, ["cs_per_s", "critical_sections_per_s",
                             "critical_sections_per_second",
                             "acquisitions_per_s", "throughput"],
                 r"(^|_)(cs|critical|acquisitions).*_per_s(ec)?$"),
         "p50": latency_us(flat, "wait", 50),
         "p99": latency_us(flat, "wait", 99),
         "counter": rate(flat, ["counter", "final_counter",
                                "checks_final_counter"]),
         "acquisitions": rate(flat, ["acquisitions"]),
         "prev": rate(flat, ["previous_holder_share"])}
    if f["prev"] is None and "previous_holder_share_pct" in flat:
        f["prev"] = flat["previous_holder_share_pct"] / 100
    ok = None
    for key in ("counter_ok", "checks_counter_ok"):
        if key in flat:
            v = flat[key]
            ok = v is True or (isinstance(v, str) and v.lower() == "ok")
            break
    if ok is None and f["counter"] is not None and f["acquisitions"] is not None:
        ok = f["counter"] == f["acquisitions"]
    f["counter_ok"] = ok
    return f


def load(directory, lib, cell):
    path = os.path.join(directory, f"{lib}.{cell}.json")
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read().strip()
    except OSError:
        return None, None
    try:  # one JSON document, or JSON lines: the last object line
        return json.loads(text), path
    except ValueError:
        for line in reversed(text.splitlines()):
            try:
                return json.loads(line), path
            except ValueError:
                continue
    return None, path


# ---- formatting -------------------------------------------------------------

def fmt_rate(v):
    return "-" if v is None else f"{v:,.0f}"


def fmt_us(v):
    if v is None:
        return "-"
    if v < 1000:
        return f"{v:.0f}us"
    if v < 100000:
        return f"{v / 1000:.1f}ms"
    return f"{v / 1e6:.2f}s"


def fmt_pair(a, b):
    return "-" if a is None and b is None else f"{fmt_us(a)}/{fmt_us(b)}"


def fmt_ratio(v, base):
    if v is None or not base:
        return "-"
    return f"{v / base:.2f}"


def table(directory, ks, procs, waiters, seconds):
    cells = [f"u{k}" for k in ks] + ["contended"]
    rows, settings = [], {}
    figs = {}
    for lib in LIBRARIES:
        figs[lib] = {}
        for cell in cells:
            obj, _ = load(directory, lib, cell)
            if isinstance(obj, dict) and obj.get("settings"):
                settings[lib] = (obj.get("version"), obj["settings"])
            figs[lib][cell] = figures(obj, cell) if obj is not None else {}
    present = [lib for lib in LIBRARIES if any(figs[lib][c] for c in cells)]
    head = ["library"]
    for k in ks:
        head += [f"K={k} pairs/s", f"K={k} acq p50/p99"]
    head += ["CS/s", "wait p50/p99", "prev-holder", "counter",
             "x hilock (" + "/".join([f"K={k}" for k in ks] + ["CS"]) + ")"]
    base = figs.get("hilock", {})
    for lib in present:
        row = [lib]
        ratios = []
        for k in ks:
            f = figs[lib][f"u{k}"]
            row += [fmt_rate(f.get("rate")), fmt_pair(f.get("p50"),
                                                      f.get("p99"))]
            ratios.append(fmt_ratio(f.get("rate"),
                                    base.get(f"u{k}", {}).get("rate")))
        f = figs[lib]["contended"]
        row += [fmt_rate(f.get("rate")), fmt_pair(f.get("p50"), f.get("p99"))]
        prev = f.get("prev")
        row.append("-" if prev is None else f"{100 * prev:.0f}%")
        if f.get("counter_ok") is None:
            row.append("-")
        else:
            n = f.get("acquisitions")
            row.append(("ok" if f["counter_ok"] else "FAIL") +
                       ("" if n is None else f" {n:.0f}"))
        ratios.append(fmt_ratio(f.get("rate"),
                                base.get("contended", {}).get("rate")))
        row.append(" / ".join(ratios))
        rows.append(row)
    widths = [max(len(r[i]) for r in [head] + rows) for i in range(len(head))]
    line = lambda r: "  ".join(  # noqa: E731
        (c.ljust(w) if i == 0 else c.rjust(w))
        for i, (c, w) in enumerate(zip(r, widths)))
    print(f"peers: uncontended {seconds} s per K; contended {procs} processes"
          f" x {waiters} waiters in all, {seconds} s; one redis-server")
    print(line(head))
    print("  ".join("-" * w for w in widths))
    for r in rows:
        print(line(r))
    print()
    print("pairs/s: acquire+release pairs per second with K in flight on "
          "distinct keys; acq: acquire call -> acquired.")
    print("CS/s: critical sections (GET+SET under the lock) per second; "
          "wait: acquire call -> acquired;")
    print("prev-holder: share of acquisitions by the waiter that held the "
          "lock just before; counter: final counter == acquisitions.")
    print("x hilock: this library's throughput / hilock's in this run "
          "(>1 is faster than hilock).")
    for lib in present:
        if lib in settings:
            ver, s = settings[lib]
            print(f"  {lib} {ver or ''}: {s}")
    notes = os.path.join(directory, "notes.txt")
    if os.path.exists(notes):
        with open(notes, encoding="utf-8") as fh:
            text = fh.read().strip()
        if text:
            print("notes:")
            for n in text.splitlines():
                print(f"  {n}")
    print("Compare ratios within one run only, never absolute times across "
          "runs or machines.")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    print(s.getsockname()[1])
    s.close()


def main(argv):
    if len(argv) == 7 and argv[1] == "table":
        ks = [int(k) for k in argv[3].split(",")]
        table(argv[2], ks, argv[4], argv[5], argv[6])
    elif len(argv) == 2 and argv[1] == "free-port":
        free_port()
    else:
        sys.stderr.write(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
