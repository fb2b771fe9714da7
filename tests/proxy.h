/* SPDX-License-Identifier: BSD-3-Clause */
/* proxy.h -- a loopback TCP proxy between a client under test and Redis,
 * with switches for the network faults a real deployment sees.
 *
 * The proxy runs on the test's own event_base (libevent bufferevents and an
 * evconnlistener, both in libevent core): it does its work only while the
 * test runs that loop, and needs no thread. It listens on 127.0.0.1 on a
 * port the kernel picks, and forwards each accepted connection to
 * 127.0.0.1:<upstream port>. Every accepted connection and its upstream
 * connection form a "pair"; closing one side of a pair closes the other.
 *
 * Faults are injected by the tp_* controls below. Each takes effect on the
 * loop (for example a cut happens when the reply arrives), so the test keeps
 * running the loop afterwards. Only for tests: nothing here is hardened
 * against anything but loopback peers, and failures to set the proxy up are
 * reported by tp_new() returning NULL (with a line on stderr). */
#ifndef HILOCK_TESTS_PROXY_H
#define HILOCK_TESTS_PROXY_H

#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

struct event_base;
struct tp_proxy;

/* Listen on 127.0.0.1:0 on base and forward to 127.0.0.1:upstream_port.
 * Returns the proxy, or NULL (message on stderr) when the listener could not
 * be set up. The upstream need not be up yet: a connection accepted while it
 * is down has its pair closed as soon as the upstream connect fails.
 * Sets SIGPIPE to SIG_IGN for the whole process: the proxy closes sockets
 * that the client is writing to (and vice versa), and neither libevent nor
 * hiredis writes with MSG_NOSIGNAL. */
struct tp_proxy *tp_new(struct event_base *base, int upstream_port);

/* The port the proxy listens on (point the client here). */
int tp_port(const struct tp_proxy *proxy);

/* Close every pair and the listener and free the proxy. Call it before
 * event_base_free() of its base. NULL is ignored. */
void tp_free(struct tp_proxy *proxy);

/* Arm a one-shot cut: the next bytes that arrive from upstream, on any
 * pair, are dropped and that pair is closed on both sides. Models "Redis
 * applied the command, its reply was lost and the connection died". Arming
 * it again while armed changes nothing. Bytes the client sends are still
 * forwarded while armed, so the command does reach Redis. */
void tp_cut_next_reply(struct tp_proxy *proxy);

/* Whether a tp_cut_next_reply() is still armed (no reply came yet). */
bool tp_cut_pending(const struct tp_proxy *proxy);

/* Close every open pair now, on both sides, dropping what they buffer.
 * New connections are accepted as usual afterwards. */
void tp_cut_all(struct tp_proxy *proxy);

/* on: stop forwarding in both directions on every pair, old and new. The
 * bytes are kept (in the proxy and the kernel's socket buffers), not lost,
 * and no connection is closed: a network stall while Redis keeps running.
 * off: forward everything that was held, in order, and carry on. A peer
 * that closes during the stall is noticed only after it ends. */
void tp_blackhole(struct tp_proxy *proxy, bool on);

/* n >= 0: let the next n complete commands the clients send through to
 * upstream, then hold every later byte from the clients (replies still
 * flow). n < 0: forward everything held, in order, and stop counting. Lets
 * a test run something of its own between two pipelined commands. */
void tp_hold_after(struct tp_proxy *proxy, long n);
/* Complete commands from the clients that the hold keeps back now. */
long tp_held_commands(const struct tp_proxy *proxy);

/* on: hold every byte from upstream (the replies) in the proxy, on every
 * pair, while the clients' bytes still flow: Redis applies the commands,
 * their replies are late. off: forward what was held, in order. */
void tp_hold_replies(struct tp_proxy *proxy, bool on);
/* tp_hold_replies on the nth connection accepted (1: the first) alone. */
void tp_hold_replies_of(struct tp_proxy *proxy, long nth, bool on);

/* on: accept new connections and close them at once (the client sees its
 * connect succeed, then the connection drop). Pairs already open stay. */
void tp_refuse(struct tp_proxy *proxy, bool on);

/* Open pairs now. */
int tp_connections(const struct tp_proxy *proxy);

/* Connections accepted since tp_new(), including those closed at once by
 * tp_refuse(). */
long tp_accepted(const struct tp_proxy *proxy);

#ifdef __cplusplus
}
#endif

#endif /* HILOCK_TESTS_PROXY_H */
