/* http.c -- the HTTP transport of the server, on libmicrohttpd: accept connections (one thread
 * each), apply the access and connection policy, collect request bodies up to the size limit,
 * look the route up in the route table, call its handler and send the reply, or for generation
 * tasks stream them as server-sent events or wait for their results.
 *
 * Policy, in the order a request meets it once its headers are in (every refusal is a JSON
 * error in the OpenAI shape, answered before any body is read): HTTP version (505), URL and
 * header sizes (414, 431), an Origin that is not --cors-origin (403; OPTIONS preflights from
 * allowed origins are answered here, 204), the route (404, 405 with Allow), the API key (401
 * unless the route is public), the model still loading (503), a POST body that is not
 * application/json (415) or too large (413). Connections: libmicrohttpd's total and per-IP
 * limits (beyond them a connection is closed at accept), and per-phase idle timeouts (header,
 * body, keep-alive) set on each connection as it moves between phases.
 *
 * A streaming response pulls new output from its tasks as the scheduler produces it. A waiting
 * handler peeks at its socket: a reset connection cancels the tasks (the slot is freed at the
 * next step); a peer that only half-closed (shutdown(SHUT_WR) after its request) still gets
 * its answer. A stream also ends when a write fails.
 *
 * Not here: the route table, the handlers and what the bodies contain (routes.c and
 * routes_*.c), the request schema (request.c), generation (sched.c). */
#include "srv_priv.h"

#include <ork/alloc.h>
#include <ork/error.h>
#include <ork/log.h>

#include <microhttpd.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* How often a waiting handler checks whether its client is still connected (ms). */
#define HTTP_POLL_MS 20
/* Bytes MHD asks a streaming reader for at most (its block size). */
#define HTTP_STREAM_BLOCK (16 * 1024)
/* Seconds a client is asked to wait before retrying after a 503 (Retry-After). */
#define HTTP_RETRY_AFTER "1"
/* How long a graceful stop waits for streams to deliver their final events (ms). */
#define HTTP_DRAIN_MS 5000
#define HTTP_CTYPE_JSON "application/json; charset=utf-8"
/* Longest URL (414 beyond) and request header block (431 beyond) we answer ourselves: 8 KiB
 * is cpp-httplib's (llama-server's) URI limit, 16 KiB covers every real client's headers.
 * MHD_OPTION_CONNECTION_MEMORY_LIMIT is set above both so that libmicrohttpd hands such
 * requests to us rather than answering with its own HTML page. */
#define HTTP_MAX_URI 8192
#define HTTP_MAX_HEADER_BYTES (16 * 1024)
#define HTTP_CONN_MEMORY (64 * 1024)
/* How long a CORS preflight answer may be cached by the browser (s). */
#define HTTP_CORS_MAX_AGE "600"

/* A refusal decided from the headers, answered once the body (if any) has been read and
 * dropped, so that the client is reading when the answer comes. */
struct refusal {
    int status;                     /* 0: none */
    const char *type;
    char message[256];
    const char *hname;              /* one extra header (Allow, WWW-Authenticate), or NULL */
    char hvalue[128];
};

struct conn {
    char *body;
    size_t len, cap;
    bool too_large;                 /* the body is being dropped (413) */
    size_t dropped;                 /* bytes of body dropped */
    const struct srv_route *rt;
    struct refusal ref;
    char cors[256];                 /* Access-Control-Allow-Origin value, or "" */
};

struct stream {
    struct ork_server *srv;
    struct srv_task **tasks;        /* (n) the stream's references */
    struct srv_stream_pos *pos;     /* (n) */
    int32_t n;
    struct MHD_Connection *mc;
    char cors[256];
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

/* CORS headers for an allowed origin (none without --cors-origin). */
static void add_cors(const struct ork_server *srv, struct MHD_Response *r, const char *cors)
{
    if (cors && cors[0])
        MHD_add_response_header(r, "Access-Control-Allow-Origin", cors);
    if (srv->p.n_cors_origins)
        MHD_add_response_header(r, MHD_HTTP_HEADER_VARY, "Origin");
}

/* Queue body (ork_malloc'd; ownership passes to MHD) with the given status and content type;
 * extra headers as name/value pairs (NULL-terminated), cors as for add_cors. */
static enum MHD_Result send_body_h(struct ork_server *srv, struct MHD_Connection *mc,
                                   unsigned status, char *body, const char *ctype,
                                   const char *cors, const char *const *extra)
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
    add_cors(srv, r, cors);
    if (status == MHD_HTTP_SERVICE_UNAVAILABLE)
        MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, HTTP_RETRY_AFTER);
    for (size_t i = 0; extra && extra[i]; i += 2)
        MHD_add_response_header(r, extra[i], extra[i + 1]);
    enum MHD_Result ret = MHD_queue_response(mc, status, r);
    MHD_destroy_response(r);
    count_response(srv, status);
    return ret;
}

/* Headers of an HTML page (the web chat page): nothing may load from elsewhere, it may only
 * talk to this server, no framing, no sniffing, no referrer. */
static const char *const html_headers[] = {
    "Content-Security-Policy", "default-src 'none'; script-src 'unsafe-inline'; "
    "style-src 'unsafe-inline'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; "
    "form-action 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options", "nosniff",
    "Referrer-Policy", "no-referrer",
    NULL,
};

static enum MHD_Result send_reply(struct ork_server *srv, struct MHD_Connection *mc,
                                  const struct srv_reply *r, const char *cors)
{
    bool html = r->ctype && !strncmp(r->ctype, "text/html", 9);
    return send_body_h(srv, mc, r->status, r->body, r->ctype ? r->ctype : HTTP_CTYPE_JSON, cors,
                       html ? html_headers : NULL);
}

static enum MHD_Result send_error_h(struct ork_server *srv, struct MHD_Connection *mc,
                                    int status, const char *type, const char *cors,
                                    const char *const *extra, const char *fmt, ...)
    __attribute__((format(printf, 7, 8)));
static enum MHD_Result send_error_h(struct ork_server *srv, struct MHD_Connection *mc,
                                    int status, const char *type, const char *cors,
                                    const char *const *extra, const char *fmt, ...)
{
    struct srv_error err = { .status = status, .type = type };
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err.message, sizeof err.message, fmt, ap);
    va_end(ap);
    return send_body_h(srv, mc, (unsigned)status, ork__srv_error_json(&err), HTTP_CTYPE_JSON,
                       cors, extra);
}

#define send_errorf(srv, mc, status, type, cors, ...)                                          \
    send_error_h(srv, mc, status, type, cors, NULL, __VA_ARGS__)

/* The connection broke (reset by the peer, or another socket error): peek at the socket
 * without blocking. End of input (recv 0) is not enough: a client may half-close after its
 * request and still read the answer; one that closed for good is seen when a write fails
 * (streams: at the next event) and its reset arrives. */
static bool client_gone(struct MHD_Connection *mc)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!ci)
        return false;
    char b;
    ssize_t r = recv(ci->connect_fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
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

static void tasks_cancel_release(struct ork_server *srv, struct srv_task **ts, int32_t n)
{
    pthread_mutex_lock(&srv->mu);
    for (int32_t i = 0; i < n; i++) {
        cancel_locked(srv, ts[i]);   /* no-op for finished tasks */
        ork__srv_task_release_locked(srv, ts[i]);
    }
    pthread_mutex_unlock(&srv->mu);
    ork_free(ts);
}

/* Under srv->mu: some task has events to send, or is complete with its closing ones due. */
static bool stream_ready_locked(const struct stream *st)
{
    for (int32_t i = 0; i < st->n; i++) {
        const struct srv_task *t = st->tasks[i];
        if (ork__srv_stream_pending(t, &st->pos[i]) ||
            (ork__srv_task_complete(t) && !st->pos[i].final_sent))
            return true;
    }
    return false;
}

static ssize_t stream_read(void *cls, uint64_t pos, char *out, size_t max)
{
    (void)pos;
    struct stream *st = cls;
    struct ork_server *srv = st->srv;
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
        while (!stream_ready_locked(st)) {
            struct timespec ts;
            deadline_in(&ts, HTTP_POLL_MS);
            /* every task of a request signals the first one's cv (task->wake) */
            pthread_cond_timedwait(&st->tasks[0]->cv, &srv->mu, &ts);
            if (client_gone(st->mc)) {
                for (int32_t i = 0; i < st->n; i++)
                    cancel_locked(srv, st->tasks[i]);
                pthread_mutex_unlock(&srv->mu);
                return MHD_CONTENT_READER_END_WITH_ERROR;
            }
        }
        int ret = 0;
        bool all = true;
        for (int32_t i = 0; i < st->n && ret == 0; i++) {
            struct srv_task *t = st->tasks[i];
            bool final = ork__srv_task_complete(t) && !st->pos[i].final_sent;
            if (ork__srv_stream_pending(t, &st->pos[i]) || final)
                ret = ork__srv_stream_events(srv, t, &st->pos[i], final, &st->buf, &st->len,
                                             &st->cap);
            if (final)
                st->pos[i].final_sent = true;
            all = all && st->pos[i].final_sent;
        }
        if (ret == 0 && all) {
            ret = ork__srv_stream_end(srv, st->tasks, st->n, &st->buf, &st->len, &st->cap);
            st->finished = true;
        }
        pthread_mutex_unlock(&srv->mu);
        if (ret < 0)
            return MHD_CONTENT_READER_END_WITH_ERROR;
    }
}

static void stream_free(void *cls)
{
    struct stream *st = cls;
    struct ork_server *srv = st->srv;
    tasks_cancel_release(srv, st->tasks, st->n);
    pthread_mutex_lock(&srv->mu);
    srv->n_streams--;
    pthread_mutex_unlock(&srv->mu);
    ork_free(st->pos);
    ork_free(st->buf);
    ork_free(st);
}

/* ---- generation tasks -------------------------------------------------------------------- */

/* Under srv->mu: every task of the reply is complete. */
static bool tasks_complete_locked(struct srv_task *const *ts, int32_t n)
{
    for (int32_t i = 0; i < n; i++)
        if (!ork__srv_task_complete(ts[i]))
            return false;
    return true;
}

/* Answer queued tasks (the handler's references pass here): as a stream, or by waiting for
 * their results while watching for the client's connection breaking. */
static enum MHD_Result send_tasks(struct ork_server *srv, struct MHD_Connection *mc,
                                  struct srv_task **ts, int32_t n, const char *cors)
{
    if (ts[0]->rq->stream) {
        struct stream *st = ork_calloc(1, sizeof(*st));
        struct srv_stream_pos *pos = st ? ork_calloc((size_t)n, sizeof(*pos)) : NULL;
        struct MHD_Response *r = pos ? MHD_create_response_from_callback(
                                           MHD_SIZE_UNKNOWN, HTTP_STREAM_BLOCK, stream_read, st,
                                           stream_free)
                                     : NULL;
        if (!r) {
            tasks_cancel_release(srv, ts, n);
            ork_free(pos);
            ork_free(st);
            return send_errorf(srv, mc, 500, "server_error", cors, "out of memory");
        }
        st->srv = srv;
        st->tasks = ts;
        st->pos = pos;
        st->n = n;
        st->mc = mc;
        pthread_mutex_lock(&srv->mu);
        srv->n_streams++;
        pthread_mutex_unlock(&srv->mu);
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
        MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
        add_cors(srv, r, cors);
        enum MHD_Result q = MHD_queue_response(mc, MHD_HTTP_OK, r);
        MHD_destroy_response(r);   /* stream_free runs when MHD is done with it */
        count_response(srv, MHD_HTTP_OK);
        return q;
    }

    pthread_mutex_lock(&srv->mu);
    while (!tasks_complete_locked(ts, n)) {
        struct timespec tsp;
        deadline_in(&tsp, HTTP_POLL_MS);
        pthread_cond_timedwait(&ts[0]->cv, &srv->mu, &tsp);
        if (!tasks_complete_locked(ts, n) && client_gone(mc)) {
            pthread_mutex_unlock(&srv->mu);
            tasks_cancel_release(srv, ts, n);
            return MHD_NO;   /* close the connection; nobody is listening */
        }
    }
    struct srv_reply rep;
    ork__srv_task_reply(srv, ts, n, &rep);
    pthread_mutex_unlock(&srv->mu);
    tasks_cancel_release(srv, ts, n);
    return send_reply(srv, mc, &rep, cors);
}

/* ---- access policy --------------------------------------------------------------------- */

/* Constant-time comparison of a presented key with a configured one. */
static bool key_equal(const char *a, size_t alen, const char *b)
{
    size_t blen = strlen(b);
    unsigned char d = (unsigned char)(alen != blen);
    for (size_t i = 0; i < alen; i++)
        d |= (unsigned char)(a[i] ^ b[i < blen ? i : 0]);
    return d == 0;
}

/* The request carries one of the API keys: "Authorization: Bearer KEY" (OpenAI clients) or
 * "X-Api-Key: KEY" (llama-server accepts both). */
static bool authorized(const struct ork_server *srv, struct MHD_Connection *mc)
{
    const char *key = NULL;
    const char *auth = MHD_lookup_connection_value(mc, MHD_HEADER_KIND,
                                                   MHD_HTTP_HEADER_AUTHORIZATION);
    if (auth && !strncasecmp(auth, "Bearer ", 7))
        for (key = auth + 7; *key == ' '; key++)
            ;
    if (!key)
        key = MHD_lookup_connection_value(mc, MHD_HEADER_KIND, "X-Api-Key");
    if (!key)
        return false;
    size_t n = strlen(key);
    while (n && (key[n - 1] == ' ' || key[n - 1] == '\t'))
        n--;
    bool ok = false;
    for (size_t i = 0; i < srv->p.n_api_keys; i++)
        ok |= key_equal(key, n, srv->p.api_keys[i]);   /* no early exit: constant time */
    return ok;
}

/* Origin policy: the value for Access-Control-Allow-Origin into cors (empty: none) and
 * whether the request's Origin (if any) is allowed. */
/* The request comes from a page of this server itself (the web chat page): its Origin is
 * http://HOST where HOST is the request's Host header and an IP address literal or
 * "localhost". A host name is not enough: a DNS-rebinding page has its own name in both
 * headers, while it cannot make an address literal or localhost its origin. */
static bool same_origin(struct MHD_Connection *mc, const char *origin)
{
    const char *host = MHD_lookup_connection_value(mc, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
    if (!host || strncmp(origin, "http://", 7) || strcmp(origin + 7, host))
        return false;
    char name[64];
    size_t n = strlen(host);
    if (host[0] == '[') {                           /* [v6]:port */
        const char *e = strchr(host, ']');
        if (!e || (size_t)(e - host - 1) >= sizeof name)
            return false;
        memcpy(name, host + 1, (size_t)(e - host - 1));
        name[e - host - 1] = 0;
        struct in6_addr a6;
        return inet_pton(AF_INET6, name, &a6) == 1;
    }
    const char *colon = strchr(host, ':');
    n = colon ? (size_t)(colon - host) : n;
    if (n >= sizeof name)
        return false;
    memcpy(name, host, n);
    name[n] = 0;
    struct in_addr a4;
    return !strcasecmp(name, "localhost") || inet_pton(AF_INET, name, &a4) == 1;
}

static bool origin_allowed(const struct ork_server *srv, struct MHD_Connection *mc, char *cors,
                           size_t cap)
{
    cors[0] = 0;
    const char *origin = MHD_lookup_connection_value(mc, MHD_HEADER_KIND, "Origin");
    if (!origin || same_origin(mc, origin))
        return true;   /* not a browser's cross-origin request */
    for (size_t i = 0; i < srv->p.n_cors_origins; i++) {
        const char *o = srv->p.cors_origins[i];
        if (!strcmp(o, "*") || !strcmp(o, origin)) {
            snprintf(cors, cap, "%s", strcmp(o, "*") ? origin : "*");
            return true;
        }
    }
    return false;
}

static enum MHD_Result count_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                    const char *value)
{
    (void)kind;
    size_t *n = cls;
    *n += strlen(key) + (value ? strlen(value) : 0) + 4;   /* ": " and CRLF */
    return MHD_YES;
}

static bool is_json(const char *ctype)
{
    if (!ctype)
        return false;
    while (*ctype == ' ')
        ctype++;
    size_t n = strlen("application/json");
    return !strncasecmp(ctype, "application/json", n) &&
           (ctype[n] == 0 || ctype[n] == ';' || ctype[n] == ' ');
}

static bool ready(struct ork_server *srv)
{
    pthread_mutex_lock(&srv->mu);
    bool r = srv->ready;
    pthread_mutex_unlock(&srv->mu);
    return r;
}

static enum MHD_Result refuse(struct conn *c, int status, const char *type, const char *hname,
                              const char *hvalue, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
static enum MHD_Result refuse(struct conn *c, int status, const char *type, const char *hname,
                              const char *hvalue, const char *fmt, ...)
{
    struct refusal *r = &c->ref;
    r->status = status;
    r->type = type;
    r->hname = hname;
    snprintf(r->hvalue, sizeof r->hvalue, "%s", hvalue ? hvalue : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->message, sizeof r->message, fmt, ap);
    va_end(ap);
    return MHD_YES;   /* answered after the body (on_request's last call) */
}

static enum MHD_Result send_refusal(struct ork_server *srv, struct MHD_Connection *mc,
                                    const struct conn *c)
{
    const char *hdr[] = { c->ref.hname, c->ref.hvalue, NULL };
    return send_error_h(srv, mc, c->ref.status, c->ref.type, c->cors,
                        c->ref.hname ? hdr : NULL, "%s", c->ref.message);
}

/* The first call for a request (its headers are in): apply the policy. Returns MHD_YES with
 * c->rt set to go on (read the body), or with c->ref set to drop the body and refuse, or the
 * result of queueing an OPTIONS answer. */
static enum MHD_Result admit(struct ork_server *srv, struct MHD_Connection *mc, struct conn *c,
                             const char *url, const char *method, const char *version)
{
    MHD_set_connection_option(mc, MHD_CONNECTION_OPTION_TIMEOUT,
                              (unsigned)srv->p.timeout_body_s);
    if (strcmp(version, MHD_HTTP_VERSION_1_1) && strcmp(version, MHD_HTTP_VERSION_1_0))
        return refuse(c, 505, "invalid_request_error", NULL, NULL,
                           "HTTP version %.16s is not supported (HTTP/1.0 and 1.1 are)", version);
    size_t hbytes = 0, ubytes = strlen(url);   /* the path, then its query arguments */
    MHD_get_connection_values(mc, MHD_HEADER_KIND, count_header, &hbytes);
    MHD_get_connection_values(mc, MHD_GET_ARGUMENT_KIND, count_header, &ubytes);
    if (ubytes > HTTP_MAX_URI)
        return refuse(c, 414, "invalid_request_error", NULL, NULL,
                           "the URL is longer than %d bytes", HTTP_MAX_URI);
    if (hbytes > HTTP_MAX_HEADER_BYTES)
        return refuse(c, 431, "invalid_request_error", NULL, NULL,
                           "the request headers are larger than %d bytes", HTTP_MAX_HEADER_BYTES);
    bool origin_ok = origin_allowed(srv, mc, c->cors, sizeof c->cors);
    if (!origin_ok)
        return refuse(c, 403, "permission_error", NULL, NULL,
                           "origin not allowed (start the server with --cors-origin ORIGIN)");
    char allow[128];
    bool path_known;
    const struct srv_route *rt = ork__srv_route_find(method, url, &path_known, allow,
                                                     sizeof allow);
    if (!strcmp(method, "OPTIONS") && path_known) {
        /* CORS preflight (or a plain OPTIONS): the methods, and for an allowed origin the
         * headers a browser may send */
        const char *hdr[] = { MHD_HTTP_HEADER_ALLOW, allow,
                              c->cors[0] ? "Access-Control-Allow-Methods" : NULL, allow,
                              "Access-Control-Allow-Headers", "Authorization, Content-Type, X-Api-Key",
                              "Access-Control-Max-Age", HTTP_CORS_MAX_AGE, NULL };
        return send_body_h(srv, mc, MHD_HTTP_NO_CONTENT, ork_strdup(""), HTTP_CTYPE_JSON, c->cors,
                           hdr);
    }
    if (!rt) {
        if (path_known)
            return refuse(c, 405, "invalid_request_error", MHD_HTTP_HEADER_ALLOW, allow,
                          "method %.16s is not allowed on %.100s (allowed: %s)", method, url,
                          allow);
        return refuse(c, 404, "not_found_error", NULL, NULL, "no endpoint %.100s (method %.16s)",
                      url, method);
    }
    bool public = (rt->flags & SRV_RT_PUBLIC) ||
                  ((rt->flags & SRV_RT_METRICS) && !srv->p.metrics_auth);
    if (srv->p.n_api_keys && !public && !authorized(srv, mc))
        return refuse(c, 401, "authentication_error", MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer",
                      "Invalid API Key (send Authorization: Bearer KEY)");
    if (!(rt->flags & SRV_RT_LOADING) && !ready(srv))
        return refuse(c, 503, "unavailable_error", NULL, NULL, "Loading model");
    if (!strcmp(method, "POST")) {
        const char *ct = MHD_lookup_connection_value(mc, MHD_HEADER_KIND,
                                                     MHD_HTTP_HEADER_CONTENT_TYPE);
        if (!is_json(ct))
            return refuse(c, 415, "invalid_request_error", NULL, NULL,
                          "Content-Type must be application/json (got '%.64s')",
                          ct ? ct : "none");
        const char *cl = MHD_lookup_connection_value(mc, MHD_HEADER_KIND,
                                                     MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (cl && strtoull(cl, NULL, 10) > srv->p.max_body)
            c->too_large = true;
    }
    c->rt = rt;
    return MHD_YES;
}

static enum MHD_Result dispatch(struct ork_server *srv, struct MHD_Connection *mc, const char *url,
                                const struct conn *c)
{
    if (c->too_large)
        return send_errorf(srv, mc, 413, "invalid_request_error", c->cors,
                           "the request body is larger than %zu bytes", srv->p.max_body);
    const struct srv_route *rt = c->rt;
    struct srv_call call = {
        .body = c->body, .len = c->len,
        .path_arg = (rt->flags & SRV_RT_PREFIX) ? url + strlen(rt->path) : "",
        .action = MHD_lookup_connection_value(mc, MHD_GET_ARGUMENT_KIND, "action"),
    };
    struct srv_reply rep = { 0 };
    rt->handler(srv, rt, &call, &rep);
    if (rep.tasks)
        return send_tasks(srv, mc, rep.tasks, rep.n_tasks, c->cors);
    return send_reply(srv, mc, &rep, c->cors);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *mc, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_data_size,
                                  void **con_cls)
{
    struct ork_server *srv = cls;
    struct conn *c = *con_cls;
    if (!c) {
        if (!(c = ork_calloc(1, sizeof(*c))))
            return MHD_NO;
        *con_cls = c;
        return admit(srv, mc, c, url, method, version);
    }
    if (*upload_data_size) {
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        if (c->too_large || c->ref.status) {
            /* drop it; a body far past the limit is not worth reading: close */
            c->dropped += n;
            return c->dropped > 2 * srv->p.max_body + HTTP_STREAM_BLOCK ? MHD_NO : MHD_YES;
        }
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
    if (c->ref.status)
        return send_refusal(srv, mc, c);
    return dispatch(srv, mc, url, c);
}

static void on_completed(void *cls, struct MHD_Connection *mc, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)toe;
    struct ork_server *srv = cls;
    struct conn *c = *con_cls;
    if (c) {
        ork_free(c->body);
        ork_free(c);
        *con_cls = NULL;
    }
    /* between requests: the keep-alive idle timeout */
    MHD_set_connection_option(mc, MHD_CONNECTION_OPTION_TIMEOUT, (unsigned)srv->p.keep_alive_s);
}

/* libmicrohttpd's messages (a connection refused at a limit, a client that broke the
 * protocol) are routine for a server: debug level. */
static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    char msg[256];
    vsnprintf(msg, sizeof msg, fmt, ap);
    size_t n = strlen(msg);
    if (n && msg[n - 1] == '\n')
        msg[n - 1] = 0;
    ORK_LOGD("http: %s", msg);
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
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)srv->p.max_connections,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)srv->p.max_conn_per_ip,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)srv->p.timeout_header_s,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)HTTP_CONN_MEMORY,
        MHD_OPTION_EXTERNAL_LOGGER, mhd_log, srv,
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
