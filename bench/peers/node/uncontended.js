#!/usr/bin/env node
// uncontended.js -- hilock-bench's "uncontended" scenario on a node peer.
//
// One process, one event loop, one ioredis client: --inflight K async loops,
// each on its own lock key, run acquire -> release -> acquire ... for
// --seconds. Nobody ever waits, so this measures the cost of one
// acquire/release pair and how the client behaves with K requests in flight.
// Prints one JSON line: pairs/s and the acquire latency p50/p99 (call ->
// promise resolved). Exits 1 when any request failed, 2 on bad usage.
//
//   node uncontended.js --lib redlock --port 6379 --seconds 3 --inflight 64
'use strict';

const c = require('./common');

const HARD_STOP_S = 30;  // after --seconds: give up on stuck requests

async function main() {
  const o = c.parseArgs(process.argv.slice(2),
    { lib: 'redlock', port: 6379, seconds: 3, inflight: 1 });
  if (o.inflight < 1 || o.inflight > 10000 || o.seconds < 1) {
    process.stderr.write('uncontended: --inflight 1..10000, --seconds >= 1\n');
    process.exit(2);
  }
  const lib = c.LIBS[o.lib];
  const hard = setTimeout(() => {
    process.stderr.write('uncontended: overran, giving up\n');
    process.exit(1);
  }, (o.seconds + HARD_STOP_S) * 1000);
  hard.unref();

  const client = c.newClient(o.port);
  await client.connect();
  const ctx = lib.setup(client);
  const keys = Array.from({ length: o.inflight },
    (_, i) => `peers:${o.lib}:uncontended:${i}`);
  await client.del(...keys);
  const handles = keys.map((k) => lib.lock(ctx, k));

  // Warm-up: one pair per loop (loads scripts, opens nothing new).
  await Promise.all(handles.map(async (h) => {
    await lib.acquire(h);
    await lib.release(h);
  }));

  const lat = [];
  let errors = 0;
  const start = c.nowNs();
  const end = start + o.seconds * 1e9;
  await Promise.all(handles.map(async (h) => {
    while (c.nowNs() < end) {
      const call = c.nowNs();
      try {
        await lib.acquire(h);
      } catch (err) {
        errors++;
        await c.sleep(10);
        continue;
      }
      lat.push(c.nowNs() - call);
      try {
        await lib.release(h);
      } catch (err) {
        errors++;
      }
    }
  }));
  const elapsed = (c.nowNs() - start) / 1e9;
  errors += c.counters.requestErrors;
  lat.sort((a, b) => a - b);
  c.emit({
    scenario: 'uncontended',
    library: o.lib,
    version: c.VERSIONS[o.lib],
    client: `ioredis ${c.VERSIONS.ioredis}`,
    inflight: o.inflight,
    seconds: o.seconds,
    elapsed_s: Math.round(elapsed * 1000) / 1000,
    pairs: lat.length,
    pairs_per_s: Math.round(lat.length / elapsed),
    acquire_p50_us: c.us(c.percentile(lat, 50)),
    acquire_p99_us: c.us(c.percentile(lat, 99)),
    errors,
    settings: lib.settings,
  });
  client.disconnect();
  process.exitCode = errors ? 1 : 0;
}

main().catch((err) => {
  process.stderr.write(`uncontended: ${err && err.stack ? err.stack : err}\n`);
  process.exit(1);
});
