/* cmd_serve.c -- `ork serve`: listen, load a model and serve it over HTTP (llama-server's native
 * API and the OpenAI API; see docs/server.md) until SIGINT or SIGTERM, then stop gracefully:
 * in-flight streams get their final events, queued requests get 503. While the model loads,
 * /health answers 503 "loading model". The server itself lives in src/server/
 * (ork-server/server.h); this file parses flags (API keys from the command line or a file),
 * handles signals and prints where it listens. */
#include "cli.h"
#include "cmd_run.h"

#include <ork-engine/engine.h>
#include <ork-engine/speculative.h>
#include <ork-server/server.h>
#include <ork-kernels/pool.h>
#include <ork/alloc.h>
#include <ork/error.h>

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define CMD "serve"
/* Longest line of an --api-key-file (a key). */
#define SERVE_KEY_LINE 4096

static void usage(FILE *out)
{
    fprintf(out,
            "usage: ork serve -m MODEL [options]\n\n"
            "Serve a model over HTTP: POST /completion, /tokenize, /detokenize, /apply-template,\n"
            "/embedding, /slots/ID (llama-server API), POST /v1/completions, /v1/chat/completions,\n"
            "/v1/embeddings, GET /v1/models[/ID] (OpenAI API), GET /health, /props, /slots,\n"
            "/metrics, and a web chat page at GET /. POST bodies must be Content-Type:\n"
            "application/json. Listens first (/health 503 while the model loads). Stops\n"
            "cleanly on SIGINT/SIGTERM.\n\n"
            "options:\n"
            "  -m, --model FILE          GGUF model (llama, qwen2, qwen3) [required]\n"
            "  --host ADDR               address to listen on (default: 127.0.0.1)\n"
            "  --port N                  TCP port; 0 = any free port (default: 8080)\n"
            "  -np, --parallel N         slots: requests generated concurrently (default: 1)\n"
            "  --queue N                 requests that may wait for a slot; more get 503 (default: 64)\n"
            "  -c, --ctx-size N          KV cache length per slot (default: min(model, 4096))\n"
            "  -b, --batch-size N        tokens per forward batch in prefill (default: 256)\n"
            "  -t, --threads N           CPU threads (default: all online CPUs)\n"
            "  --spin-us N               threads poll N us for the next job before sleeping\n"
            "                            (default: " ORK_STR(ORK_POOL_SPIN_US_DEFAULT) "; 0: sleep at once)\n"
            "  --kv-type f32|f16         KV cache precision (default: f32)\n"
            "  --device D                where matmuls run: auto (default), cpu, npu, rknpu,\n"
            "                            rocket, sim or sim-rocket (ork run --help)\n"
            "  --pack FILE               the .orkpack to use on an NPU (default: MODEL.orkpack)\n"
            "  --npu-weights int8|dcomp|dcomp:L|w4a8  NPU weight codes, --npu-weights-rotate\n"
            "                            etc. (ork run --help, docs/dcomp.md)\n"
            "  --twin                    model every batch on the board twin (docs/twin.md)\n"
            "  --sim-calibration FILE    board twin constants (JSON; default: built-in table)\n"
            "  --alias NAME              model id reported by the API (default: the file name)\n"
            "  --max-body N              largest request body in bytes (default: 1048576)\n"
            "  --no-batch                decode slots one at a time instead of in one batch\n"
            "  -v, --verbose             per-request speculative decoding figures on stderr\n"
            "speculative decoding (docs/server.md; a request's speculative.n_max turns it on\n"
            "or off, default: on when one of the first two is given):\n"
            "  -md, --draft-model FILE   draft model of the same vocabulary (on the CPU)\n"
            "  --lookup N                prompt lookup of the last N..1 tokens (default: 3 when\n"
            "                            a request asks and there is no draft model)\n"
            "  --draft-max N             most tokens drafted per step (default: 16, at most 32)\n"
            "  --draft-min N             fewer drafted: a plain step (default: 0)\n"
            "  --draft-p-min P           the draft model stops below probability P (default: 0)\n"
            "access:\n"
            "  --api-key KEY             require Authorization: Bearer KEY on every endpoint but\n"
            "                            /health and /metrics (repeatable)\n"
            "  --api-key-file FILE       keys, one per line (empty lines ignored)\n"
            "  --metrics-auth            /metrics needs a key too\n"
            "  --cors-origin ORIGIN      send CORS headers to this origin, '*' for any\n"
            "                            (repeatable; default: none, other origins get 403)\n"
            "connections:\n"
            "  --max-connections N       connections served at once (default: 256)\n"
            "  --max-conn-per-ip N       connections per client address (default: 32)\n"
            "  --timeout-header S        idle seconds while request headers arrive (default: 10)\n"
            "  --timeout-body S          idle seconds while a body arrives or a reply is read\n"
            "                            (default: 30)\n"
            "  --keep-alive S            idle seconds between kept-alive requests (default: 5)\n"
            "endpoints:\n"
            "  --embeddings              enable /embedding and /v1/embeddings\n"
            "  --pooling mean|last       embedding pooling (default: mean)\n"
            "  --slot-save-path DIR      enable POST /slots/ID?action=save|restore|erase, files\n"
            "                            in DIR\n"
            "  --props                   accept POST /props\n"
            "  --no-webui                GET / does not serve the built-in web chat page\n");
    ork_cli_load_help(out);
}

static int parse_int_opt(int argc, char **argv, int *i, long long lo, long long hi, long long *out)
{
    const char *opt = argv[*i], *v = ork_cli_value(CMD, argc, argv, i);
    return v && ork_cli_parse_int(CMD, opt, v, lo, hi, out) ? 0 : -1;
}

/* Grow-only list of API keys (command line ones borrowed, file ones owned). */
struct keys {
    const char **v;
    char **owned;
    size_t n, n_owned, cap;
};

static int keys_add(struct keys *k, const char *key, bool owned)
{
    if (k->n == k->cap) {
        size_t cap = k->cap ? 2 * k->cap : 8;
        const char **nv = ork_realloc(k->v, cap * sizeof(*nv));
        char **no = nv ? ork_realloc(k->owned, cap * sizeof(*no)) : NULL;
        if (nv)
            k->v = nv;
        if (!no)
            return ORK_ENOMEM;
        k->owned = no;
        k->cap = cap;
    }
    k->v[k->n++] = key;
    if (owned)
        k->owned[k->n_owned++] = (char *)key;
    return 0;
}

static void keys_free(struct keys *k)
{
    for (size_t i = 0; i < k->n_owned; i++)
        ork_free(k->owned[i]);
    ork_free(k->owned);
    ork_free(k->v);
}

/* One key per line; surrounding blanks and empty lines ignored. */
static bool keys_load(struct keys *k, const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "ork %s: cannot read --api-key-file '%s'\n", CMD, path);
        return false;
    }
    char line[SERVE_KEY_LINE];
    bool ok = true;
    while (ok && fgets(line, sizeof line, f)) {
        char *a = line, *e = line + strlen(line);
        while (*a == ' ' || *a == '\t')
            a++;
        while (e > a && (e[-1] == '\n' || e[-1] == '\r' || e[-1] == ' ' || e[-1] == '\t'))
            e--;
        if (e == a)
            continue;
        char *key = ork_strndup(a, (size_t)(e - a));
        ok = key && keys_add(k, key, true) == 0;
        if (!ok)
            ork_free(key);
    }
    fclose(f);
    return ok;
}

static bool is_loopback(const char *host)
{
    return !strncmp(host, "127.", 4) || !strcmp(host, "::1") || !strcmp(host, "localhost");
}

static int serve(int argc, char **argv, struct keys *keys, struct keys *origins);

int ork_cmd_serve(int argc, char **argv)
{
    struct keys keys = { 0 }, origins = { 0 };
    int ret = serve(argc, argv, &keys, &origins);
    keys_free(&keys);
    keys_free(&origins);
    return ret;
}

/* The speculative decoding options: 1 consumed, 0 not one of them, -1 usage error. */
static int spec_opt(int argc, char **argv, int *i, struct ork_server_params *sp,
                    const char **draft)
{
    const char *a = argv[*i], *v;
    long long n;
    double d;
    if (!strcmp(a, "-md") || !strcmp(a, "--draft-model"))
        return (*draft = ork_cli_value(CMD, argc, argv, i)) ? 1 : -1;
    if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) {
        sp->verbose = true;
        return 1;
    }
    if (!strcmp(a, "--draft-p-min")) {
        if (!(v = ork_cli_value(CMD, argc, argv, i)) || !ork_cli_parse_float(CMD, a, v, 0, 1, &d))
            return -1;
        sp->spec_draft_p_min = (float)d;
        return 1;
    }
    int32_t *dst = !strcmp(a, "--lookup")      ? &sp->spec_lookup
                   : !strcmp(a, "--draft-max") ? &sp->spec_draft_max
                   : !strcmp(a, "--draft-min") ? &sp->spec_draft_min
                                               : NULL;
    if (!dst)
        return 0;
    if (parse_int_opt(argc, argv, i, dst == &sp->spec_draft_min ? 0 : 1, ORK_SPEC_M_HIST - 1,
                      &n) < 0)
        return -1;
    *dst = (int32_t)n;
    return 1;
}

/* Parse the flags into sp, mp and *model. Returns -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv, struct ork_server_params *sp,
                      struct ork_model_params *mp, const char **model, struct keys *keys,
                      struct keys *origins, const char **draft)
{
    long long n;
    int rc;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return ORK_EXIT_OK;
        }
        if ((rc = spec_opt(argc, argv, &i, sp, draft)) != 0) {
            if (rc < 0)
                return ORK_EXIT_USAGE;
        } else if (!strcmp(a, "-m") || !strcmp(a, "--model")) {
            if (!(*model = ork_cli_value(CMD, argc, argv, &i)))
                return ORK_EXIT_USAGE;
        } else if (!strcmp(a, "--host")) {
            if (!(sp->host = ork_cli_value(CMD, argc, argv, &i)))
                return ORK_EXIT_USAGE;
        } else if (!strcmp(a, "--alias")) {
            if (!(sp->alias = ork_cli_value(CMD, argc, argv, &i)))
                return ORK_EXIT_USAGE;
        } else if (!strcmp(a, "--port")) {
            if (parse_int_opt(argc, argv, &i, 0, 65535, &n) < 0)
                return ORK_EXIT_USAGE;
            sp->port = (int)n;
        } else if (!strcmp(a, "-np") || !strcmp(a, "--parallel")) {
            if (parse_int_opt(argc, argv, &i, 1, 256, &n) < 0)
                return ORK_EXIT_USAGE;
            sp->n_parallel = (int32_t)n;
        } else if (!strcmp(a, "--queue")) {
            if (parse_int_opt(argc, argv, &i, 0, 1 << 20, &n) < 0)
                return ORK_EXIT_USAGE;
            sp->queue_size = (int32_t)n;
        } else if (!strcmp(a, "-c") || !strcmp(a, "--ctx-size")) {
            if (parse_int_opt(argc, argv, &i, 1, 1 << 24, &n) < 0)
                return ORK_EXIT_USAGE;
            sp->session.ctx_size = (int32_t)n;
        } else if (!strcmp(a, "-b") || !strcmp(a, "--batch-size")) {
            if (parse_int_opt(argc, argv, &i, 1, 1 << 16, &n) < 0)
                return ORK_EXIT_USAGE;
            sp->session.n_batch = (int32_t)n;
        } else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) {
            if (parse_int_opt(argc, argv, &i, 1, 1024, &n) < 0)
                return ORK_EXIT_USAGE;
            sp->session.n_threads = (int32_t)n;
        } else if (!strcmp(a, "--spin-us")) {
            if (parse_int_opt(argc, argv, &i, 0, ORK_POOL_SPIN_US_MAX, &n) < 0)
                return ORK_EXIT_USAGE;
            sp->session.spin_us = (int32_t)n;
        } else if (!strcmp(a, "--max-body")) {
            if (parse_int_opt(argc, argv, &i, 1, 1ll << 30, &n) < 0)
                return ORK_EXIT_USAGE;
            sp->max_body = (size_t)n;
        } else if (!strcmp(a, "--kv-type")) {
            const char *v = ork_cli_value(CMD, argc, argv, &i);
            if (!v || !ork_cli_parse_kv_type(CMD, v, &sp->session.kv_type))
                return ORK_EXIT_USAGE;
        } else if ((rc = ork_cli_device_opt(CMD, argc, argv, &i, mp)) != 0) {
            /* --device, --pack, the NPU and twin options and the load options, shared with
             * run and bench; on an NPU the server decodes one sequence per step */
            if (rc < 0)
                return ORK_EXIT_USAGE;
        } else if (!strcmp(a, "--no-batch")) {
            sp->batched = false;
        } else if (!strcmp(a, "--api-key") || !strcmp(a, "--cors-origin")) {
            const char *v = ork_cli_value(CMD, argc, argv, &i);
            if (!v)
                return ORK_EXIT_USAGE;
            if (!*v) {
                fprintf(stderr, "ork %s: %s needs a non-empty value\n", CMD, a);
                return ORK_EXIT_USAGE;
            }
            if (keys_add(!strcmp(a, "--api-key") ? keys : origins, v, false) < 0)
                return ORK_EXIT_ERROR;
        } else if (!strcmp(a, "--api-key-file")) {
            const char *v = ork_cli_value(CMD, argc, argv, &i);
            if (!v || !keys_load(keys, v))
                return ORK_EXIT_USAGE;
        } else if (!strcmp(a, "--metrics-auth")) {
            sp->metrics_auth = true;
        } else if (!strcmp(a, "--embeddings")) {
            sp->embeddings = true;
        } else if (!strcmp(a, "--props")) {
            sp->props_post = true;
        } else if (!strcmp(a, "--no-webui")) {
            sp->no_webui = true;
        } else if (!strcmp(a, "--pooling")) {
            const char *v = ork_cli_value(CMD, argc, argv, &i);
            if (!v || (strcmp(v, "mean") && strcmp(v, "last"))) {
                fprintf(stderr, "ork %s: --pooling must be mean or last\n", CMD);
                return ORK_EXIT_USAGE;
            }
            sp->pooling = strcmp(v, "mean") ? ORK_SERVER_POOL_LAST : ORK_SERVER_POOL_MEAN;
        } else if (!strcmp(a, "--slot-save-path")) {
            if (!(sp->slot_save_path = ork_cli_value(CMD, argc, argv, &i)))
                return ORK_EXIT_USAGE;
        } else if (!strcmp(a, "--max-connections") || !strcmp(a, "--max-conn-per-ip") ||
                   !strcmp(a, "--timeout-header") || !strcmp(a, "--timeout-body") ||
                   !strcmp(a, "--keep-alive")) {
            /* bounds: a day of idle time; connections well past what one thread each allows */
            if (parse_int_opt(argc, argv, &i, 1, 86400, &n) < 0)
                return ORK_EXIT_USAGE;
            uint32_t *dst = !strcmp(a, "--max-connections")  ? &sp->max_connections
                            : !strcmp(a, "--max-conn-per-ip") ? &sp->max_conn_per_ip
                            : !strcmp(a, "--timeout-header")  ? &sp->timeout_header_s
                            : !strcmp(a, "--timeout-body")    ? &sp->timeout_body_s
                                                              : &sp->keep_alive_s;
            *dst = (uint32_t)n;
        } else {
            fprintf(stderr, "ork %s: unknown option '%s' (see ork %s --help)\n", CMD, a, CMD);
            return ORK_EXIT_USAGE;
        }
    }
    return -1;
}

/* The draft model on the CPU (the A76 cores while the target may use the NPU), handed to the
 * server before its model. */
static int load_draft(const char *path, const struct ork_model_params *target_mp,
                      struct ork_server *srv, struct ork_model **out)
{
    struct ork_model_params mp;
    ork_model_params_default(&mp);
    mp.device = "cpu";
    mp.no_repack = target_mp->no_repack;
    int ret = ork_model_load(path, &mp, out);
    if (ret < 0) {
        fprintf(stderr, "ork %s: cannot load draft model '%s': %s\n", CMD, path,
                ork_error_describe(ret));
        return ret;
    }
    ork_server_set_draft(srv, *out);
    return 0;
}

static int serve(int argc, char **argv, struct keys *keys, struct keys *origins)
{
    struct ork_server_params sp;
    ork_server_params_default(&sp);
    struct ork_model_params mp;
    ork_model_params_default(&mp);
    mp.device = "auto";
    const char *model = NULL, *draft_path = NULL;
    int st = parse_args(argc, argv, &sp, &mp, &model, keys, origins, &draft_path);
    if (st >= 0)
        return st;
    if (!model) {
        fprintf(stderr, "ork %s: -m MODEL is required (see ork %s --help)\n", CMD, CMD);
        return ORK_EXIT_USAGE;
    }
    sp.model_path = model;
    sp.api_keys = keys->v;
    sp.n_api_keys = keys->n;
    sp.cors_origins = origins->v;
    sp.n_cors_origins = origins->n;
    if (!is_loopback(sp.host) && !sp.n_api_keys)
        fprintf(stderr, "ork %s: warning: listening on %s without --api-key: anyone who can "
                "reach this address can use the server\n", CMD, sp.host);

    /* Block the stop signals in every thread (the server's threads inherit this mask) and wait
     * for them here; a dead client must not kill the process through SIGPIPE. */
    sigset_t stop_sigs;
    sigemptyset(&stop_sigs);
    sigaddset(&stop_sigs, SIGINT);
    sigaddset(&stop_sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_sigs, NULL);
    signal(SIGPIPE, SIG_IGN);

    /* Listen first (/health answers 503 while loading), then load the model. */
    struct ork_model *m = NULL;
    struct ork_server *srv = NULL;
    int ret;
    if ((ret = ork_server_create(NULL, &sp, &srv)) < 0 || (ret = ork_server_start(srv)) < 0) {
        ork_cli_error(CMD, ret);
        ork_server_free(srv);
        return ORK_EXIT_ERROR;
    }
    bool v6 = strchr(sp.host, ':') != NULL;   /* IPv6 literals go in brackets in URLs */
    printf("ork serve: loading %s; /health answers 503 on http://%s%s%s:%d until it is ready\n",
           model, v6 ? "[" : "", sp.host, v6 ? "]" : "", ork_server_port(srv));
    fflush(stdout);
    ork_cli_device_resolve(CMD, &mp, false);
    if ((ret = ork_model_load(model, &mp, &m)) < 0) {
        fprintf(stderr, "ork %s: cannot load model '%s': %s\n", CMD, model,
                ork_error_describe(ret));
        ork_server_free(srv);
        return ORK_EXIT_ERROR;
    }
    struct ork_model *draft = NULL;
    if (draft_path && (ret = load_draft(draft_path, &mp, srv, &draft)) < 0) {
        ork_server_free(srv);
        ork_model_free(m);
        return ORK_EXIT_ERROR;
    }
    if ((ret = ork_server_set_model(srv, m)) < 0) {
        ork_cli_error(CMD, ret);
        ork_server_free(srv);
        ork_model_free(draft);
        ork_model_free(m);
        return ORK_EXIT_ERROR;
    }
    printf("ork serve: listening on http://%s%s%s:%d (%d slot%s)\n", v6 ? "[" : "", sp.host,
           v6 ? "]" : "", ork_server_port(srv), sp.n_parallel, sp.n_parallel == 1 ? "" : "s");
    fflush(stdout);

    int sig = 0;
    sigwait(&stop_sigs, &sig);
    fprintf(stderr, "ork %s: %s received, stopping\n", CMD, sig == SIGINT ? "SIGINT" : "SIGTERM");
    ork_server_stop(srv);
    ork_server_free(srv);
    ork_model_free(draft);
    ork_model_free(m);
    return ORK_EXIT_OK;
}
