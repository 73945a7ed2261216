/* cmd_chat.c -- `ork chat`: an interactive conversation on stdin/stdout. Each user line is added
 * to the history, the whole conversation is rendered with the model's chat template (chat.h;
 * ChatML when the template is not recognised, or --template NAME), and only the tokens past the
 * part the KV cache already holds are evaluated (ork_generate_tokens with cache reuse). Works
 * with piped stdin: the "> " prompt is printed only on a terminal. Commands: /exit (or EOF),
 * /reset (forget the conversation). */
#include "cli.h"
#include "cmd_run.h"

#include <ork/alloc.h>
#include <ork/error.h>
#include <ork-engine/chat.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CMD "chat"

struct history {
    struct ork_chat_msg *msgs;   /* contents are ork_strdup'd */
    size_t n, cap;
};

struct reply {
    char *text;                  /* the streamed assistant text, accumulated */
    size_t len, cap;
};

static void usage(FILE *out)
{
    fprintf(out, "usage: ork chat -m MODEL [options]\n\n"
                 "Interactive chat: type a message and press enter; /reset forgets the\n"
                 "conversation, /exit or end of input quits. Reads piped input too.\n\n"
                 "options:\n"
                 "  --system TEXT             system message\n"
                 "  --template NAME           chatml, llama3 or llama2 (default: from the model's\n"
                 "                            tokenizer.chat_template, else chatml)\n");
    ork_cli_gen_help(out, true);
}

static int hist_add(struct history *h, const char *role, const char *content)
{
    if (h->n == h->cap) {
        size_t nc = h->cap ? h->cap * 2 : 8;
        struct ork_chat_msg *nm = ork_realloc(h->msgs, nc * sizeof(*nm));
        if (!nm)
            return ORK_ENOMEM;
        h->msgs = nm;
        h->cap = nc;
    }
    char *c = ork_strdup(content);
    if (!c)
        return ORK_ENOMEM;
    h->msgs[h->n].role = role;
    h->msgs[h->n].content = c;
    h->n++;
    return 0;
}

static void hist_truncate(struct history *h, size_t n)
{
    while (h->n > n)
        ork_free((void *)h->msgs[--h->n].content);
}

static int on_text(void *user, const char *text, size_t len)
{
    struct reply *r = user;
    fwrite(text, 1, len, stdout);
    fflush(stdout);
    if (r->len + len + 1 > r->cap) {
        size_t nc = (r->cap ? r->cap : 256);
        while (nc < r->len + len + 1)
            nc *= 2;
        char *nt = ork_realloc(r->text, nc);
        if (!nt)
            return 1;   /* stop generating; the reply is kept as far as it went */
        r->text = nt;
        r->cap = nc;
    }
    memcpy(r->text + r->len, text, len);
    r->len += len;
    r->text[r->len] = 0;
    return 0;
}

/* The template family: --template, else detected from the model, else ChatML with a note. */
static int pick_format(const struct ork_model *m, const char *name, enum ork_chat_format *f)
{
    if (name) {
        if (ork_chat_format_from_name(name, f) < 0) {
            fprintf(stderr, "ork %s: unknown --template '%s' (chatml, llama3, llama2)\n", CMD, name);
            return ORK_EXIT_USAGE;
        }
        return 0;
    }
    struct ork_gguf_str s;
    char *tmpl = NULL;
    if (ork_gguf_get_str(ork_model_gguf(m), "tokenizer.chat_template", &s) == 0)
        tmpl = ork_strndup(s.ptr, (size_t)s.len);
    if (!tmpl || ork_chat_detect(tmpl, f) < 0) {
        fprintf(stderr, "ork %s: note: %s; using the ChatML format (--template to choose)\n", CMD,
                tmpl ? "the model's chat template is not one ork recognises"
                     : "the model has no chat template");
        *f = ORK_CHAT_CHATML;
    }
    ork_free(tmpl);
    return 0;
}

/* Text markers that end an assistant turn, as stop strings for models whose tokenizer does
 * not make them single end-of-generation tokens (the format's list, ork-engine/chat.h). */
static void add_format_stops(enum ork_chat_format f, struct ork_cli_gen_opts *o)
{
    size_t n = 0;
    const char *const *list = ork_chat_stop_strings(f, &n);
    for (size_t i = 0; list && i < n && o->n_stops < ORK_CLI_MAX_STOPS; i++)
        o->stops[o->n_stops++] = list[i];
}

/* One turn: render, tokenize, generate with cache reuse. Returns 0, or a negative error that
 * ends this turn only (the conversation continues). */
static int chat_turn(struct ork_session *s, struct ork_sampler *smp, enum ork_chat_format fmt,
                     const struct history *h, const struct ork_cli_gen_opts *o, struct reply *r,
                     struct ork_gen_stats *st)
{
    const struct ork_tokenizer *tok = ork_model_tokenizer(ork_session_model(s));
    char *text = NULL;
    int32_t *ids = NULL;
    int ret = ork_chat_render(fmt, h->msgs, h->n, true, &text);
    if (ret < 0)
        return ret;
    size_t len = strlen(text), n = 0, cap = len + 8;
    if (!(ids = ork_malloc(cap * sizeof(int32_t)))) {
        ret = ORK_ENOMEM;
        goto out;
    }
    ret = ork_tokenize(tok, text, len, !o->no_bos, true, ids, cap, &n);
    if (ret == ORK_ENOSPC) {
        ork_free(ids);
        cap = n;
        if (!(ids = ork_malloc(cap * sizeof(int32_t)))) {
            ret = ORK_ENOMEM;
            goto out;
        }
        ret = ork_tokenize(tok, text, len, !o->no_bos, true, ids, cap, &n);
    }
    if (ret < 0)
        goto out;
    if (n > (size_t)ork_session_ctx_size(s)) {
        ret = ork_errorf(ORK_ECONTEXT, "context full: the conversation is %zu tokens > ctx_size %d "
                         "(/reset to start over, or a larger -c)", n, ork_session_ctx_size(s));
        goto out;
    }
    struct ork_gen_params gp;
    ork_gen_params_default(&gp);
    gp.sampling = o->sampling;
    gp.n_predict = o->n_predict;
    gp.stops = o->stops;
    gp.n_stops = o->n_stops;
    gp.reuse_cache = true;
    gp.on_text = on_text;
    gp.user = r;
    ork_sampler_grammar_restart(smp);   /* each reply starts at the grammar's root */
    ret = ork_generate_tokens(s, smp, ids, (int32_t)n, &gp, st);
out:
    ork_free(ids);
    ork_free(text);
    return ret;
}

int ork_cmd_chat(int argc, char **argv)
{
    struct ork_cli_gen_opts o;
    ork_cli_gen_opts_default(&o);
    const char *system = NULL, *tmpl_name = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return ORK_EXIT_OK;
        }
        int r = ork_cli_gen_opt(CMD, argc, argv, &i, &o);
        if (r < 0)
            return ORK_EXIT_USAGE;
        if (r > 0)
            continue;
        if (!strcmp(a, "--system")) {
            if (!(system = ork_cli_value(CMD, argc, argv, &i)))
                return ORK_EXIT_USAGE;
        } else if (!strcmp(a, "--template")) {
            if (!(tmpl_name = ork_cli_value(CMD, argc, argv, &i)))
                return ORK_EXIT_USAGE;
        } else {
            fprintf(stderr, "ork %s: unknown option '%s' (see ork %s --help)\n", CMD, a, CMD);
            return ORK_EXIT_USAGE;
        }
    }
    if (!o.model) {
        fprintf(stderr, "ork %s: -m MODEL is required (see ork %s --help)\n", CMD, CMD);
        return ORK_EXIT_USAGE;
    }
    if (tmpl_name) {
        enum ork_chat_format f;
        if (ork_chat_format_from_name(tmpl_name, &f) < 0) {
            fprintf(stderr, "ork %s: unknown --template '%s' (chatml, llama3, llama2)\n", CMD,
                    tmpl_name);
            return ORK_EXIT_USAGE;
        }
    }

    struct ork_model *m;
    struct ork_session *s;
    struct ork_sampler *smp;
    int rc = ork_cli_gen_setup(CMD, &o, &m, &s, &smp);
    if (rc)
        return rc;
    enum ork_chat_format fmt;
    if ((rc = pick_format(m, tmpl_name, &fmt)) != 0)
        goto out_model;
    add_format_stops(fmt, &o);
    if (o.verbose)
        fprintf(stderr, "chat: template %s\n", ork_chat_format_name(fmt));

    struct history h = { 0 };
    struct reply r = { 0 };
    size_t base = 0;   /* messages kept by /reset (the system message) */
    if (system) {
        if (hist_add(&h, "system", system) < 0) {
            ork_cli_error(CMD, ORK_ENOMEM);
            rc = ORK_EXIT_ERROR;
            goto out;
        }
        base = 1;
    }
    bool tty = isatty(STDIN_FILENO);
    char *line = NULL;
    size_t line_cap = 0;
    int turn = 0;
    for (;;) {
        if (tty) {
            fputs("> ", stdout);
            fflush(stdout);
        }
        ssize_t got = getline(&line, &line_cap, stdin);
        if (got < 0)
            break;
        while (got > 0 && (line[got - 1] == '\n' || line[got - 1] == '\r'))
            line[--got] = 0;
        if (got == 0)
            continue;
        if (!strcmp(line, "/exit") || !strcmp(line, "/quit"))
            break;
        if (!strcmp(line, "/reset")) {
            hist_truncate(&h, base);
            ork_session_reset(s);
            ork_sampler_reset(smp);
            fprintf(stderr, "chat: conversation reset\n");
            continue;
        }
        if (hist_add(&h, "user", line) < 0) {
            ork_cli_error(CMD, ORK_ENOMEM);
            rc = ORK_EXIT_ERROR;
            break;
        }
        r.len = 0;
        if (r.text)
            r.text[0] = 0;
        struct ork_gen_stats st;
        int ret = chat_turn(s, smp, fmt, &h, &o, &r, &st);
        fputc('\n', stdout);
        fflush(stdout);
        turn++;
        if (ret < 0) {
            ork_cli_error(CMD, ret);
            hist_truncate(&h, h.n - 1);   /* drop the unanswered user message */
            continue;
        }
        if (hist_add(&h, "assistant", r.text ? r.text : "") < 0) {
            ork_cli_error(CMD, ORK_ENOMEM);
            rc = ORK_EXIT_ERROR;
            break;
        }
        if (o.verbose) {
            fprintf(stderr, "chat: turn %d: %d prompt tokens, %d reused from the cache, %d "
                    "evaluated, %d generated (stop: %s)\n", turn, st.n_prompt, st.n_reused,
                    st.n_prompt - st.n_reused, st.n_gen, ork_stop_reason_name(st.stop));
            ork_cli_print_stats(&st);
        }
        if (st.stop == ORK_STOP_CONTEXT)
            fprintf(stderr, "chat: the context is full (%d tokens); /reset to start over\n",
                    ork_session_ctx_size(s));
    }
    free(line);   /* allocated by getline with malloc */
out:
    hist_truncate(&h, 0);
    ork_free(h.msgs);
    ork_free(r.text);
out_model:
    ork_sampler_free(smp);
    ork_cli_gen_constraint_free();
    ork_session_free(s);
    ork_model_free(m);
    return rc;
}
