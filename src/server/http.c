/* http.c -- the HTTP transport of the server, on libmicrohttpd: accept connections (one thread
 * each), collect request bodies up to the size limit, look the route up in the route table
 * (404, 405, 413 here), call its handler and send the reply, or for a generation task stream it
 * as server-sent events or wait for its result. A streaming response pulls new output from its
 * task as the scheduler produces it; a connection whose peer has closed (seen by peeking at its
 * socket while waiting, or by a failed write) cancels its task, which frees the slot at the
 * next step.
 *
 * Not here: the route table, the handlers and what the bodies contain (routes.c and
 * routes_*.c), the request schema (request.c), generation (sched.c). */
#include "srv_priv.h"

#include <ork/alloc.h>
#include <ork/error.h>
#include <ork/log.h>

#include <microhttpd.h>

#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* How often a waiting handler checks whether its client is still connected (ms). */
#define HTTP_POLL_MS 20
/* Bytes MHD asks a streaming reader for at most (its block size). */
#define HTTP_STREAM_BLOCK (16 * 1024)
/* Connections served at once; idle keep-alive connections time out after HTTP_IDLE_S. */
#define HTTP_MAX_CONNECTIONS 256
#define HTTP_IDLE_S 600
/* Seconds a client is asked to wait before retrying after a 503 (Retry-After). */
#define HTTP_RETRY_AFTER "1"
/* How long a graceful stop waits for streams to deliver their final events (ms). */
#define HTTP_DRAIN_MS 5000
#define HTTP_CTYPE_JSON "application/json; charset=utf-8"

struct conn {
    char *body;
    size_t len, cap;
    bool too_large;
};

struct stream {
    struct ork_server *srv;
    struct srv_task *task;
    struct MHD_Connection *mc;
    struct srv_stream_pos pos;
    bool finished;
    char *buf;
    size_t len, cap, sent;
};

/* ---- helpers ----------------------------------------------------------------------------- */

static void count_response(struct ork_server *srv, unsigned status)
{
    pthread_mutex_lock(&srv->mu);
    srv->met.requests_total++;
    if (status >= 400)
        srv->met.requests_errors++;
    pthread_mutex_unlock(&srv->mu);
}

/* Queue body (ork_malloc'd; ownership passes to MHD) with the given status and content type. */
static enum MHD_Result send_body(struct ork_server *srv, struct MHD_Connection *mc,
                                 unsigned status, char *body, const char *ctype)
{
    if (!body) {
        status = MHD_HTTP_INTERNAL_SERVER_ERROR;
        body = ork_strdup("{\"error\":{\"code\":500,\"message\":\"out of memory\","
                          "\"type\":\"server_error\"}}");
        if (!body)
            return MHD_NO;
        ctype = HTTP_CTYPE_JSON;
    }
    struct MHD_Response *r =
        MHD_create_response_from_buffer_with_free_callback(strlen(body), body, ork_free);
    if (!r) {
        ork_free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
    MHD_add_response_header(r, "Access-Control-Allow-Origin", "*");
    if (status == MHD_HTTP_SERVICE_UNAVAILABLE)
        MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, HTTP_RETRY_AFTER);
    enum MHD_Result ret = MHD_queue_response(mc, status, r);
    MHD_destroy_response(r);
    count_response(srv, status);
    return ret;
}

static enum MHD_Result send_reply(struct ork_server *srv, struct MHD_Connection *mc,
                                  const struct srv_reply *r)
{
    return send_body(srv, mc, r->status, r->body, r->ctype ? r->ctype : HTTP_CTYPE_JSON);
}

static enum MHD_Result send_errorf(struct ork_server *srv, struct MHD_Connection *mc, int status,
                                   const char *type, const char *msg)
{
    struct srv_error err;
    ork__srv_errorf(&err, status, type, "%s", msg);
    return send_body(srv, mc, (unsigned)status, ork__srv_error_json(&err), HTTP_CTYPE_JSON);
}

/* The peer closed the connection (or it broke): peek at the socket without blocking. */
static bool client_gone(struct MHD_Connection *mc)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!ci)
        return false;
    char b;
    ssize_t r = recv(ci->connect_fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    if (r == 0)
        return true;
    return r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;
}

static void deadline_in(struct timespec *ts, int ms)
{
    clock_gettime(CLOCK_REALTIME, ts);
    ts->tv_nsec += (long)ms * 1000000L;
    ts->tv_sec += ts->tv_nsec / 1000000000L;
    ts->tv_nsec %= 1000000000L;
}

/* Mark a task cancelled and wake the scheduler (under srv->mu). */
static void cancel_locked(struct ork_server *srv, struct srv_task *t)
{
    if (!t->done) {
        t->cancelled = true;
        pthread_cond_signal(&srv->sched_cv);
    }
}

/* ---- streaming --------------------------------------------------------------------------- */

static ssize_t stream_read(void *cls, uint64_t pos, char *out, size_t max)
{
    (void)pos;
    struct stream *st = cls;
    struct ork_server *srv = st->srv;
    struct srv_task *t = st->task;
    for (;;) {
        if (st->sent < st->len) {
            size_t n = st->len - st->sent < max ? st->len - st->sent : max;
            memcpy(out, st->buf + st->sent, n);
            st->sent += n;
            return (ssize_t)n;
        }
        st->len = st->sent = 0;
        if (st->finished)
            return MHD_CONTENT_READER_END_OF_STREAM;
        pthread_mutex_lock(&srv->mu);
        while (!t->done && !ork__srv_stream_pending(t, &st->pos)) {
            struct timespec ts;
            deadline_in(&ts, HTTP_POLL_MS);
            pthread_cond_timedwait(&t->cv, &srv->mu, &ts);
            if (!t->done && client_gone(st->mc)) {
                cancel_locked(srv, t);
                pthread_mutex_unlock(&srv->mu);
                return MHD_CONTENT_READER_END_WITH_ERROR;
            }
        }
        bool final = t->done;
        int ret = ork__srv_stream_events(srv, t, &st->pos, final, &st->buf, &st->len, &st->cap);
        pthread_mutex_unlock(&srv->mu);
        if (ret < 0)
            return MHD_CONTENT_READER_END_WITH_ERROR;
        if (final)
            st->finished = true;
    }
}

static void stream_free(void *cls)
{
    struct stream *st = cls;
    struct ork_server *srv = st->srv;
    pthread_mutex_lock(&srv->mu);
    cancel_locked(srv, st->task);   /* no-op when the task already finished */
    ork__srv_task_release_locked(srv, st->task);
    srv->n_streams--;
    pthread_mutex_unlock(&srv->mu);
    ork_free(st->buf);
    ork_free(st);
}

/* ---- generation tasks -------------------------------------------------------------------- */

/* Answer a queued generation task (the handler's reference passes here): as a stream, or by
 * waiting for its result while watching for the client going away. */
static enum MHD_Result send_task(struct ork_server *srv, struct MHD_Connection *mc,
                                 struct srv_task *t)
{
    if (t->req.stream) {
        struct stream *st = ork_calloc(1, sizeof(*st));
        struct MHD_Response *r = st ? MHD_create_response_from_callback(
                                          MHD_SIZE_UNKNOWN, HTTP_STREAM_BLOCK, stream_read, st,
                                          stream_free)
                                    : NULL;
        if (!r) {
            pthread_mutex_lock(&srv->mu);
            cancel_locked(srv, t);
            ork__srv_task_release_locked(srv, t);
            pthread_mutex_unlock(&srv->mu);
            ork_free(st);
            return send_errorf(srv, mc, 500, "server_error", "out of memory");
        }
        st->srv = srv;
        st->task = t;
        st->mc = mc;
        pthread_mutex_lock(&srv->mu);
        srv->n_streams++;
        pthread_mutex_unlock(&srv->mu);
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
        MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
        MHD_add_response_header(r, "Access-Control-Allow-Origin", "*");
        enum MHD_Result q = MHD_queue_response(mc, MHD_HTTP_OK, r);
        MHD_destroy_response(r);   /* stream_free runs when MHD is done with it */
        count_response(srv, MHD_HTTP_OK);
        return q;
    }

    pthread_mutex_lock(&srv->mu);
    while (!t->done) {
        struct timespec ts;
        deadline_in(&ts, HTTP_POLL_MS);
        pthread_cond_timedwait(&t->cv, &srv->mu, &ts);
        if (!t->done && client_gone(mc)) {
            cancel_locked(srv, t);
            ork__srv_task_release_locked(srv, t);
            pthread_mutex_unlock(&srv->mu);
            return MHD_NO;   /* close the connection; nobody is listening */
        }
    }
    struct srv_reply rep;
    ork__srv_task_reply(srv, t, &rep);
    ork__srv_task_release_locked(srv, t);
    pthread_mutex_unlock(&srv->mu);
    return send_reply(srv, mc, &rep);
}

/* ---- routing ----------------------------------------------------------------------------- */

static enum MHD_Result dispatch(struct ork_server *srv, struct MHD_Connection *mc, const char *url,
                                const char *method, const struct conn *c)
{
    bool path_known;
    const struct srv_route *rt = ork__srv_route_find(method, url, &path_known);
    if (!rt) {
        char msg[160];
        snprintf(msg, sizeof msg, path_known ? "method %.16s is not allowed on %.100s"
                                             : "no endpoint %.100s (method %.16s)",
                 path_known ? method : url, path_known ? url : method);
        return send_errorf(srv, mc, path_known ? 405 : 404,
                           path_known ? "invalid_request_error" : "not_found_error", msg);
    }
    if (c->too_large) {
        char msg[128];
        snprintf(msg, sizeof msg, "the request body is larger than %zu bytes", srv->p.max_body);
        return send_errorf(srv, mc, 413, "invalid_request_error", msg);
    }
    struct srv_reply rep = { 0 };
    rt->handler(srv, rt, c->body, c->len, &rep);
    if (rep.task)
        return send_task(srv, mc, rep.task);
    return send_reply(srv, mc, &rep);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *mc, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_data_size,
                                  void **con_cls)
{
    (void)version;
    struct ork_server *srv = cls;
    struct conn *c = *con_cls;
    if (!c) {
        if (!(c = ork_calloc(1, sizeof(*c))))
            return MHD_NO;
        *con_cls = c;
        const char *cl = MHD_lookup_connection_value(mc, MHD_HEADER_KIND, "Content-Length");
        if (cl && strtoull(cl, NULL, 10) > srv->p.max_body)
            c->too_large = true;
        return MHD_YES;
    }
    if (*upload_data_size) {
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        if (c->too_large)
            return MHD_YES;
        if (c->len + n > srv->p.max_body) {
            c->too_large = true;
            ork_free(c->body);
            c->body = NULL;
            c->len = c->cap = 0;
            return MHD_YES;
        }
        if (c->len + n + 1 > c->cap) {
            size_t cap = c->cap ? c->cap : 4096;
            while (cap < c->len + n + 1)
                cap *= 2;
            char *nb = ork_realloc(c->body, cap);
            if (!nb)
                return MHD_NO;
            c->body = nb;
            c->cap = cap;
        }
        memcpy(c->body + c->len, upload_data, n);
        c->len += n;
        c->body[c->len] = 0;
        return MHD_YES;
    }
    return dispatch(srv, mc, url, method, c);
}

static void on_completed(void *cls, struct MHD_Connection *mc, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    (void)mc;
    (void)toe;
    struct conn *c = *con_cls;
    if (c) {
        ork_free(c->body);
        ork_free(c);
        *con_cls = NULL;
    }
}

/* ---- daemon ------------------------------------------------------------------------------ */

int ork__srv_http_start(struct ork_server *srv)
{
    struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                              .ai_flags = AI_PASSIVE }, *ai = NULL;
    char port[16];
    snprintf(port, sizeof port, "%d", srv->p.port);
    int gai = getaddrinfo(srv->p.host, port, &hints, &ai);
    if (gai != 0 || !ai)
        return ork_errorf(ORK_EINVAL, "server: cannot resolve host '%s': %s", srv->p.host,
                          gai_strerror(gai));
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
                     MHD_USE_ITC | MHD_USE_ERROR_LOG;
    if (ai->ai_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    struct MHD_Daemon *d = MHD_start_daemon(
        flags, (uint16_t)srv->p.port, NULL, NULL, on_request, srv,
        MHD_OPTION_SOCK_ADDR, ai->ai_addr,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, srv,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)HTTP_MAX_CONNECTIONS,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)HTTP_IDLE_S,
        MHD_OPTION_END);
    freeaddrinfo(ai);
    if (!d)
        return ork_errorf(ORK_EIO, "server: cannot listen on %s:%d (address in use or not "
                          "available)", srv->p.host, srv->p.port);
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    srv->port = di ? di->port : srv->p.port;
    srv->mhd = d;
    return 0;
}

void ork__srv_http_stop(struct ork_server *srv)
{
    struct MHD_Daemon *d = srv->mhd;
    if (!d)
        return;
    MHD_socket lfd = MHD_quiesce_daemon(d);   /* accept no new connections */
    /* Let streams deliver their final events before the connections are closed. */
    for (int waited = 0; waited < HTTP_DRAIN_MS; waited += 10) {
        pthread_mutex_lock(&srv->mu);
        int32_t n = srv->n_streams;
        pthread_mutex_unlock(&srv->mu);
        if (n == 0)
            break;
        struct timespec ts = { 0, 10 * 1000000L };
        nanosleep(&ts, NULL);
    }
    MHD_stop_daemon(d);
    if (lfd != MHD_INVALID_SOCKET)
        close(lfd);
    srv->mhd = NULL;
}
