/* SPDX-License-Identifier: BSD-3-Clause */
/* proxy.c -- see proxy.h.
 *
 * Each accepted connection becomes a pair of bufferevents: side 0 faces the
 * client, side 1 connects to the upstream. Bytes read on one side are moved
 * to the other side's output buffer (no copy), unless a fault says
 * otherwise:
 *  - a cut drops the bytes that arrive on side 1 and frees the pair;
 *  - a blackhole disables reading on both sides, so bytes stay in the
 *    kernel's socket buffers (TCP keeps them, as a stalled network would),
 *    and turning it off enables reading again;
 *  - holding replies keeps what upstream sends in the proxy until the
 *    hold ends;
 *  - refusing closes each accepted socket before a pair is made.
 * When one side ends (EOF or error), what it sent is already forwarded; the
 * other side is closed once its output buffer has drained, so a reply that
 * was in flight is still delivered. Nothing here calls back into the test,
 * so every control may be called from anywhere, including loop callbacks. */
#include "proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>

struct tp_pair {
    struct tp_proxy *proxy;
    struct tp_pair *prev, *next;
    struct bufferevent *side[2]; /* 0: the client's, 1: upstream */
    bool draining;               /* one side ended: flush the other, close */
    long nth;                    /* accepted as the nth (1: the first) */
};

struct tp_proxy {
    struct event_base *base;
    struct evconnlistener *listener;
    int port;
    struct sockaddr_in upstream;
    struct tp_pair *pairs;
    int npairs;
    long accepted;
    bool cut_armed;
    bool blackhole;
    bool refuse;
    bool hold_replies;
    long hold_nth;  /* hold_replies on this pair alone; 0: on all */
    long pass_cmds; /* commands still let through to upstream; -1: all */
};

/* Unlink the pair and free both bufferevents, closing their sockets. What
 * they still buffer is dropped. */
static void pair_free(struct tp_pair *p)
{
    struct tp_proxy *px = p->proxy;
    if (p->prev)
        p->prev->next = p->next;
    else
        px->pairs = p->next;
    if (p->next)
        p->next->prev = p->prev;
    px->npairs--;
    for (int i = 0; i < 2; i++)
        if (p->side[i])
            bufferevent_free(p->side[i]);
    free(p);
}

/* The length of the first complete command ("*N" then N bulk strings) at
 * the start of buf, or 0 when it is not all there yet. */
static size_t resp_command_len(const char *buf, size_t len)
{
    const char *p = buf, *end = buf + len;
    long n = 0;
    for (long i = -1; i < n; i++) {
        const char *crlf = memchr(p, '\r', (size_t)(end - p));
        if (!crlf || crlf + 1 >= end)
            return 0;
        long v = strtol(p + 1, NULL, 10);
        p = crlf + 2;
        if (i < 0) {
            n = v;
        } else {
            if (end - p < v + 2)
                return 0;
            p += v + 2;
        }
    }
    return (size_t)(p - buf);
}

/* Move from in to out the bytes of at most px->pass_cmds whole commands. */
static void pass_counted(struct tp_proxy *px, struct evbuffer *in,
                         struct evbuffer *out)
{
    while (px->pass_cmds > 0) {
        size_t len = evbuffer_get_length(in);
        const char *data = (const char *)evbuffer_pullup(in, -1);
        size_t n = data ? resp_command_len(data, len) : 0;
        if (n == 0)
            return;
        evbuffer_remove_buffer(in, out, n);
        px->pass_cmds--;
    }
}

/* Move what side i has read to the other side, or perform an armed cut if
 * side i is the upstream. Returns false when the pair was freed. */
static bool pair_pump(struct tp_pair *p, int i)
{
    struct evbuffer *in = bufferevent_get_input(p->side[i]);
    if (evbuffer_get_length(in) == 0 || p->draining ||
        (i == 1 && p->proxy->hold_replies &&
         (p->proxy->hold_nth == 0 || p->proxy->hold_nth == p->nth)))
        return true;
    if (i == 1 && p->proxy->cut_armed) {
        p->proxy->cut_armed = false;
        pair_free(p);
        return false;
    }
    if (i == 0 && p->proxy->pass_cmds >= 0)
        pass_counted(p->proxy, in, bufferevent_get_output(p->side[1]));
    else
        bufferevent_write_buffer(p->side[1 - i], in);
    return true;
}

static int side_of(const struct tp_pair *p, const struct bufferevent *bev)
{
    return bev == p->side[0] ? 0 : 1;
}

static void on_read(struct bufferevent *bev, void *arg)
{
    struct tp_pair *p = arg;
    pair_pump(p, side_of(p, bev));
}

/* A draining side has written everything it had: close the pair. */
static void on_write(struct bufferevent *bev, void *arg)
{
    struct tp_pair *p = arg;
    if (p->draining)
        pair_free(p);
}

/* Side i ended: forward its last bytes, then close it now and the other
 * side once that has flushed its output. */
static void pair_end_side(struct tp_pair *p, int i)
{
    if (!pair_pump(p, i))
        return;
    int o = 1 - i;
    bufferevent_free(p->side[i]);
    p->side[i] = NULL;
    if (p->draining ||
        evbuffer_get_length(bufferevent_get_output(p->side[o])) == 0) {
        pair_free(p);
        return;
    }
    p->draining = true;
    bufferevent_disable(p->side[o], EV_READ);
    bufferevent_enable(p->side[o], EV_WRITE);
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
    struct tp_pair *p = arg;
    if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR))
        pair_end_side(p, side_of(p, bev));
}

/* Disable Nagle: replies must not wait for an ACK on loopback. */
static void set_nodelay(evutil_socket_t fd)
{
    int one = 1;
    if (fd >= 0)
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

/* Make a pair for accepted socket fd and start its upstream connect. The
 * socket is closed when that fails. */
static void pair_new(struct tp_proxy *px, evutil_socket_t fd)
{
    struct tp_pair *p = calloc(1, sizeof *p);
    if (!p) {
        evutil_closesocket(fd);
        return;
    }
    p->proxy = px;
    p->nth = px->accepted;
    p->next = px->pairs;
    if (px->pairs)
        px->pairs->prev = p;
    px->pairs = p;
    px->npairs++;
    p->side[0] = bufferevent_socket_new(px->base, fd, BEV_OPT_CLOSE_ON_FREE);
    if (!p->side[0])
        evutil_closesocket(fd);
    p->side[1] = bufferevent_socket_new(px->base, -1, BEV_OPT_CLOSE_ON_FREE);
    if (!p->side[0] || !p->side[1] ||
        bufferevent_socket_connect(p->side[1],
                                   (struct sockaddr *)&px->upstream,
                                   sizeof px->upstream) != 0) {
        pair_free(p);
        return;
    }
    set_nodelay(fd);
    set_nodelay(bufferevent_getfd(p->side[1]));
    for (int i = 0; i < 2; i++) {
        bufferevent_setcb(p->side[i], on_read, on_write, on_event, p);
        bufferevent_enable(p->side[i], px->blackhole ? EV_WRITE
                                                     : EV_READ | EV_WRITE);
    }
}

static void on_accept(struct evconnlistener *l, evutil_socket_t fd,
                      struct sockaddr *addr, int len, void *arg)
{
    struct tp_proxy *px = arg;
    px->accepted++;
    if (px->refuse)
        evutil_closesocket(fd);
    else
        pair_new(px, fd);
}

static void on_listen_error(struct evconnlistener *l, void *arg)
{
    fprintf(stderr, "proxy: accept failed: %s\n",
            evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
}

struct tp_proxy *tp_new(struct event_base *base, int upstream_port)
{
    struct sockaddr_in sin;
    socklen_t slen = sizeof sin;
    struct tp_proxy *px = calloc(1, sizeof *px);
    if (!base || upstream_port <= 0 || upstream_port > 65535 || !px) {
        fprintf(stderr, "proxy: bad arguments or out of memory\n");
        free(px);
        return NULL;
    }
    px->pass_cmds = -1;
    /* Peers close while we write; so do hiredis's peers (the proxy) while
     * hilock writes. Either would kill the test with SIGPIPE. */
    signal(SIGPIPE, SIG_IGN);
    px->base = base;
    px->upstream.sin_family = AF_INET;
    px->upstream.sin_port = htons((uint16_t)upstream_port);
    px->upstream.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    memset(&sin, 0, sizeof sin);
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    px->listener = evconnlistener_new_bind(
        base, on_accept, px, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE, -1,
        (struct sockaddr *)&sin, sizeof sin);
    if (!px->listener ||
        getsockname(evconnlistener_get_fd(px->listener),
                    (struct sockaddr *)&sin, &slen) != 0) {
        fprintf(stderr, "proxy: cannot listen on 127.0.0.1\n");
        if (px->listener)
            evconnlistener_free(px->listener);
        free(px);
        return NULL;
    }
    evconnlistener_set_error_cb(px->listener, on_listen_error);
    px->port = ntohs(sin.sin_port);
    return px;
}

int tp_port(const struct tp_proxy *px)
{
    return px->port;
}

void tp_cut_all(struct tp_proxy *px)
{
    while (px->pairs)
        pair_free(px->pairs);
}

void tp_free(struct tp_proxy *px)
{
    if (!px)
        return;
    tp_cut_all(px);
    evconnlistener_free(px->listener);
    free(px);
}

void tp_cut_next_reply(struct tp_proxy *px)
{
    px->cut_armed = true;
}

bool tp_cut_pending(const struct tp_proxy *px)
{
    return px->cut_armed;
}

void tp_blackhole(struct tp_proxy *px, bool on)
{
    px->blackhole = on;
    for (struct tp_pair *p = px->pairs, *next; p; p = next) {
        next = p->next;
        if (p->draining)
            continue;
        for (int i = 0; i < 2 && p; i++) {
            if (on) {
                bufferevent_disable(p->side[i], EV_READ);
            } else {
                bufferevent_enable(p->side[i], EV_READ);
                if (!pair_pump(p, i))
                    p = NULL; /* cut: the pair is gone */
            }
        }
    }
}

void tp_hold_after(struct tp_proxy *px, long n)
{
    px->pass_cmds = n;
    if (n >= 0)
        return;
    for (struct tp_pair *p = px->pairs; p; p = p->next)
        if (!p->draining && p->side[0])
            pair_pump(p, 0);
}

long tp_held_commands(const struct tp_proxy *px)
{
    long n = 0;
    for (struct tp_pair *p = px->pairs; p; p = p->next) {
        if (!p->side[0])
            continue;
        struct evbuffer *in = bufferevent_get_input(p->side[0]);
        size_t len = evbuffer_get_length(in), off = 0, k;
        const char *data = (const char *)evbuffer_pullup(in, -1);
        while (data && (k = resp_command_len(data + off, len - off)) > 0) {
            off += k;
            n++;
        }
    }
    return n;
}

void tp_hold_replies(struct tp_proxy *px, bool on)
{
    tp_hold_replies_of(px, 0, on);
}

void tp_hold_replies_of(struct tp_proxy *px, long nth, bool on)
{
    px->hold_replies = on;
    px->hold_nth = nth;
    for (struct tp_pair *p = px->pairs, *next; p && !on; p = next) {
        next = p->next;
        if (p->side[1])
            pair_pump(p, 1);
    }
}

void tp_refuse(struct tp_proxy *px, bool on)
{
    px->refuse = on;
}

int tp_connections(const struct tp_proxy *px)
{
    return px->npairs;
}

long tp_accepted(const struct tp_proxy *px)
{
    return px->accepted;
}
