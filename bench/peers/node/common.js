// common.js -- what uncontended.js and contended.js share: options, the two
// peer libraries behind one small interface, clocks and percentiles.
//
// Not part of CI: these scripts measure other Redis lock clients next to
// hilock (see ../README.md). Everything talks to 127.0.0.1 only.
'use strict';

const Redis = require('ioredis');
const { default: Redlock, ExecutionError, ResourceLockedError } =
  require('redlock');
const { Mutex, TimeoutError } = require('redis-semaphore');

const LEASE_MS = 10000;  // lock lease of every acquisition
const WAIT_MS = 10000;   // how long one acquire may wait (hilock: WAIT_MS)
const RETRY_MS = 10;     // pause between two attempts of a blocked acquire
const JITTER_MS = 5;     // redlock: +/- this on every pause

// Installed versions, read from the packages' own package.json (redlock's
// "exports" hides it from require).
function installed(name) {
  const file = require('path').join(__dirname, 'node_modules', name,
    'package.json');
  return JSON.parse(require('fs').readFileSync(file, 'utf8'))
    .version.replace(/^v/, '');
}
const VERSIONS = {
  redlock: installed('redlock'),
  'redis-semaphore': installed('redis-semaphore'),
  ioredis: installed('ioredis'),
};

// Parse --name value pairs into an object of defaults; exits 2 on a bad
// option. Numbers stay numbers.
function parseArgs(argv, defaults) {
  const out = { ...defaults };
  for (let i = 0; i < argv.length; i++) {
    const m = /^--([a-z-]+)$/.exec(argv[i]);
    if (!m || !(m[1] in defaults) || i + 1 >= argv.length) usage(argv[i]);
    const v = argv[++i];
    out[m[1]] = typeof defaults[m[1]] === 'number' ? Number(v) : v;
    if (typeof defaults[m[1]] === 'number' &&
        (!Number.isInteger(out[m[1]]) || out[m[1]] < 0)) usage(argv[i - 1]);
  }
  if (!(out.lib in LIBS)) usage('--lib ' + out.lib);
  return out;
}

function usage(what) {
  process.stderr.write(`bad option: ${what}\n` +
    'options: --lib redlock|redis-semaphore --port N --seconds N ' +
    '(--inflight K | --procs P --waiters W)\n');
  process.exit(2);
}

// Monotonic nanoseconds (CLOCK_MONOTONIC on Linux, as in hilock and
// Python's time.monotonic_ns, so records of processes compare).
function nowNs() {
  return Number(process.hrtime.bigint());
}

// Nearest-rank percentile of a sorted array (hilock's definition); 0 empty.
function percentile(sorted, p) {
  const n = sorted.length;
  if (n === 0) return 0;
  const rank = Math.ceil((p / 100) * n - 1e-6);
  return sorted[Math.min(Math.max(rank, 1), n) - 1];
}

const us = (ns) => Math.round(ns / 100) / 10;  // ns -> us, one decimal

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

// One ioredis client (one connection, commands pipelined as issued) that
// gives up on a request after a few reconnect attempts instead of queueing
// forever.
function newClient(port) {
  return new Redis({
    host: '127.0.0.1',
    port,
    lazyConnect: true,
    maxRetriesPerRequest: 2,
    retryStrategy: (times) => (times > 5 ? null : 100),
  });
}

// Errors a library reports only out of band (redlock's 'error' events).
const counters = { requestErrors: 0 };

// Each library behind: setup(client) -> ctx; lock(ctx, key) -> handle;
// acquire(handle) resolves when held or rejects (timeout or error);
// release(handle) resolves when released. isTimeout(err) tells starvation
// from errors.
const LIBS = {
  // node-redlock 5 on one Redis: the acquire script (SET NX PX) is retried
  // every RETRY_MS +/- JITTER_MS until WAIT_MS worth of attempts.
  redlock: {
    settings: `duration ${LEASE_MS} ms; retryCount ${WAIT_MS / RETRY_MS}, ` +
      `retryDelay ${RETRY_MS} ms, retryJitter ${JITTER_MS} ms ` +
      `(about ${WAIT_MS / 1000} s of attempts); release with retryCount 0`,
    setup(client) {
      const redlock = new Redlock([client], {
        driftFactor: 0.01,
        retryCount: WAIT_MS / RETRY_MS,
        retryDelay: RETRY_MS,
        retryJitter: JITTER_MS,
        automaticExtensionThreshold: 500,
      });
      // Redlock emits 'error' for every failed attempt, "resource locked"
      // included; without a listener EventEmitter would throw. Anything
      // else (connection, script) is counted as a request error.
      redlock.on('error', (err) => {
        if (!(err instanceof ResourceLockedError)) counters.requestErrors++;
      });
      return redlock;
    },
    lock(redlock, key) {
      return { redlock, key, held: null };
    },
    async acquire(h) {
      h.held = await h.redlock.acquire([h.key], LEASE_MS);
    },
    async release(h) {
      const l = h.held;
      h.held = null;
      // retryCount 0: the instance's retries would spin on a lost lock.
      await h.redlock.release(l, { retryCount: 0 });
    },
    // Out of attempts: starvation (request errors are counted above).
    isTimeout: (err) => err instanceof ExecutionError,
  },
  // redis-semaphore's Mutex: SET NX PX, polled every retryInterval until
  // acquireTimeout; a refresh timer every 0.8 lockTimeout while held.
  'redis-semaphore': {
    settings: `Mutex lockTimeout ${LEASE_MS} ms (refresh every ` +
      `${0.8 * LEASE_MS} ms), acquireTimeout ${WAIT_MS} ms, ` +
      `retryInterval ${RETRY_MS} ms`,
    setup(client) {
      return client;
    },
    lock(client, key) {
      return new Mutex(client, key, {
        lockTimeout: LEASE_MS,
        acquireTimeout: WAIT_MS,
        retryInterval: RETRY_MS,
        onLockLost: () => {},  // counted by the checks, not thrown
      });
    },
    acquire: (m) => m.acquire(),
    release: (m) => m.release(),
    isTimeout: (err) => err instanceof TimeoutError,
  },
};

// Print the one JSON line of a run.
function emit(obj) {
  process.stdout.write(JSON.stringify(obj) + '\n');
}

module.exports = {
  LIBS, VERSIONS, counters, LEASE_MS, WAIT_MS, RETRY_MS,
  parseArgs, nowNs, percentile, us, sleep, newClient, emit,
};
