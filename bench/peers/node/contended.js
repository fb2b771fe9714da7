#!/usr/bin/env node
// contended.js -- hilock-bench's "contended" scenario on a node peer.
//
// --procs P processes (each one event loop, one ioredis client) run
// --waiters W async waiters in all on ONE lock key. Every waiter loops:
// acquire with the library's own waiting (polling with a retry interval),
// critical section = GET counter then SET counter+1 on the same client,
// release, acquire again. After --seconds each process stops: critical
// sections under way finish and release; acquires still waiting are
// abandoned (neither library can cancel one; redis-semaphore could abort,
// but both are treated alike), and an acquire that completes after the
// stop is released at once without a critical section. The parent merges
// the records (monotonic clock, machine-wide) and prints one JSON line:
// critical sections/s, wait p50/p99 (acquire call -> acquired) and the
// checks: final counter == acquisitions, critical sections disjoint, each
// read the previous write. Exits 1 on a failed check, request error or
// failed process, 2 on bad usage.
//
//   node contended.js --lib redis-semaphore --port 6379 --seconds 3 \
//        --procs 4 --waiters 100
'use strict';

const { fork } = require('child_process');
const c = require('./common');

const READY_TIMEOUT_MS = 10000;
const CHILD_GRACE_S = 20;   // child's hard stop after --seconds
const PARENT_GRACE_S = 30;  // parent kills children after --seconds + this

function keysOf(lib) {
  return { lock: `peers:${lib}:contended`,
    counter: `peers:${lib}:contended:counter` };
}

// ---- child: one process, one loop, one client ---------------------------

async function child(o, index) {
  const lib = c.LIBS[o.lib];
  const keys = keysOf(o.lib);
  const first = Math.floor((index * o.waiters) / o.procs);
  const last = Math.floor(((index + 1) * o.waiters) / o.procs);
  const st = { timeouts: 0, acqErrors: 0, relErrors: 0, csErrors: 0,
    overrun: 0 };
  const recs = [];  // flat: call, acq, rel, seen, waiter
  let stopping = false;
  let inCs = 0;
  let done = false;

  // The parent is gone (killed): nobody will read the records.
  process.on('disconnect', () => process.exit(1));
  const client = c.newClient(o.port);
  await client.connect();
  await client.ping();
  const ctx = lib.setup(client);

  // Hand the records to the parent once no critical section is under way.
  const finish = () => {
    if (done) return;
    done = true;
    st.acqErrors += c.counters.requestErrors;
    process.send({ type: 'result', st, recs }, () => process.exit(0));
  };

  async function waiter(id) {
    const h = lib.lock(ctx, keys.lock);
    while (!stopping) {
      const call = c.nowNs();
      try {
        await lib.acquire(h);
      } catch (err) {
        if (lib.isTimeout(err)) st.timeouts++;
        else st.acqErrors++;
        await c.sleep(c.RETRY_MS);
        continue;
      }
      if (stopping) {  // acquired after the stop: no critical section
        lib.release(h).catch(() => {});
        return;
      }
      inCs++;
      const acq = c.nowNs();
      let seen = -1;
      try {
        const v = await client.get(keys.counter);
        seen = v === null ? 0 : Number(v);
        await client.set(keys.counter, String(seen + 1));
      } catch (err) {
        st.csErrors++;
      }
      recs.push(call, acq, c.nowNs(), seen, id);
      try {
        await lib.release(h);
      } catch (err) {
        st.relErrors++;
      }
      inCs--;
      if (stopping && inCs === 0) finish();
    }
  }

  process.send({ type: 'ready' });
  await new Promise((resolve) => process.once('message', resolve));
  setTimeout(() => {
    stopping = true;
    if (inCs === 0) finish();
  }, o.seconds * 1000);
  setTimeout(() => {
    st.overrun = 1;
    finish();
  }, (o.seconds + CHILD_GRACE_S) * 1000).unref();
  for (let id = first; id < last; id++) waiter(id);
}

// ---- parent: reset, start together, supervise, merge, check -------------

function runChildren(o) {
  return new Promise((resolve) => {
    const results = [];
    let ready = 0;
    let exited = 0;
    let failed = 0;
    const kids = [];
    const readyTimer = setTimeout(() => {
      process.stderr.write('contended: processes did not get ready\n');
      for (const k of kids) k.kill('SIGKILL');
    }, READY_TIMEOUT_MS);
    const killTimer = setTimeout(() => {
      for (const k of kids) {
        if (k.exitCode === null && k.signalCode === null) {
          process.stderr.write(`contended: process ${k.pid} overran: killed\n`);
          k.kill('SIGKILL');
        }
      }
    }, (o.seconds + PARENT_GRACE_S) * 1000);
    for (let i = 0; i < o.procs; i++) {
      const k = fork(__filename, [...process.argv.slice(2), '--child',
        String(i)]);
      kids.push(k);
      k.on('message', (m) => {
        if (m.type === 'ready' && ++ready === o.procs) {
          clearTimeout(readyTimer);
          for (const kk of kids) kk.send('go');
        } else if (m.type === 'result') {
          results.push(m);
        }
      });
      k.on('exit', (code) => {
        if (code !== 0) failed++;
        if (++exited === o.procs) {
          clearTimeout(readyTimer);
          clearTimeout(killTimer);
          resolve({ results, failed });
        }
      });
    }
  });
}

async function parent(o) {
  const lib = c.LIBS[o.lib];
  const keys = keysOf(o.lib);
  const client = c.newClient(o.port);
  await client.connect();
  await client.del(keys.lock, `mutex:${keys.lock}`, keys.counter);
  await client.set(keys.counter, '0');
  const { results, failed } = await runChildren(o);
  const counter = Number(await client.get(keys.counter));
  client.disconnect();

  const sum = { timeouts: 0, acqErrors: 0, relErrors: 0, csErrors: 0,
    overrun: 0 };
  const recs = [];
  for (const r of results) {
    for (const k of Object.keys(sum)) sum[k] += r.st[k];
    for (let i = 0; i < r.recs.length; i += 5) {
      recs.push({ call: r.recs[i], acq: r.recs[i + 1], rel: r.recs[i + 2],
        seen: r.recs[i + 3], waiter: r.recs[i + 4] });
    }
  }
  recs.sort((a, b) => a.acq - b.acq);
  const n = recs.length;
  let overlaps = 0;
  let seenBad = 0;
  let sameWaiter = 0;
  const waits = [];
  const served = new Set();
  for (let i = 0; i < n; i++) {
    waits.push(recs[i].acq - recs[i].call);
    served.add(recs[i].waiter);
    if (recs[i].seen !== i) seenBad++;
    if (i > 0 && recs[i].acq <= recs[i - 1].rel) overlaps++;
    if (i > 0 && recs[i].waiter === recs[i - 1].waiter) sameWaiter++;
  }
  waits.sort((a, b) => a - b);
  const span = n ? (recs[n - 1].rel - recs[0].call) / 1e9 : 0;
  const errors = sum.acqErrors + sum.relErrors + sum.csErrors;
  const ok = counter === n && overlaps === 0 && seenBad === 0 &&
    errors === 0 && failed === 0 && results.length === o.procs;
  c.emit({
    scenario: 'contended',
    library: o.lib,
    version: c.VERSIONS[o.lib],
    client: `ioredis ${c.VERSIONS.ioredis}`,
    procs: o.procs,
    waiters: o.waiters,
    seconds: o.seconds,
    acquisitions: n,
    span_s: Math.round(span * 1000) / 1000,
    cs_per_s: span > 0 ? Math.round(n / span) : 0,
    wait_p50_us: c.us(c.percentile(waits, 50)),
    wait_p99_us: c.us(c.percentile(waits, 99)),
    wait_max_us: c.us(n ? waits[n - 1] : 0),
    waiters_served: served.size,
    previous_holder_share:
      n > 1 ? Math.round((1000 * sameWaiter) / (n - 1)) / 1000 : 0,
    counter,
    counter_ok: counter === n,
    overlaps,
    seen_mismatches: seenBad,
    starved: sum.timeouts,
    errors: { acquire: sum.acqErrors, release: sum.relErrors,
      critical_section: sum.csErrors },
    failed_processes: failed + (o.procs - results.length),
    ok,
    settings: lib.settings,
  });
  if (!ok) {
    process.stderr.write(`contended: FAIL: counter ${counter} for ${n} ` +
      `acquisitions, ${overlaps} overlaps, ${seenBad} stale reads, ` +
      `${errors} request errors, ${failed} failed processes\n`);
  }
  process.exitCode = ok ? 0 : 1;
}

function main() {
  const argv = process.argv.slice(2);
  const ci = argv.indexOf('--child');
  const index = ci >= 0 ? Number(argv[ci + 1]) : -1;
  if (ci >= 0) argv.splice(ci, 2);
  const o = c.parseArgs(argv,
    { lib: 'redlock', port: 6379, seconds: 3, procs: 4, waiters: 100 });
  if (o.procs < 1 || o.procs > 64 || o.waiters < o.procs ||
      o.waiters > 100000 || o.seconds < 1) {
    process.stderr.write('contended: --procs 1..64, --waiters >= procs\n');
    process.exit(2);
  }
  const run = index >= 0 ? child(o, index) : parent(o);
  run.catch((err) => {
    process.stderr.write(`contended: ${err && err.stack ? err.stack : err}\n`);
    process.exit(1);
  });
}

main();
