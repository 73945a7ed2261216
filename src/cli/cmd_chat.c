/* cmd_chat.c -- `ork chat`: an interactive conversation on stdin/stdout. Each user line is added
 * to the history, the whole conversation is rendered with the model's chat template (chat.h;
 * ChatML when the template is not recognised, or --template NAME), and only the tokens past the
 * part the KV cache already holds are evaluated (ork_generate_tokens with cache reuse). Works
 * with piped stdin: the "> " prompt is printed only on a terminal, where lines are read with
 * libedit (line editing, history) when ork was built with it. Slash commands (/help) are
 * handled here and never reach the model. Ctrl-C stops the reply being generated (the partial
 * reply stays in the conversation); Ctrl-C at the prompt, a second Ctrl-C or EOF quits. */
#include "cli.h"
#include "cmd_run.h"

#include <ork/alloc.h>
#include <ork/error.h>
#include <ork-engine/chat.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef ORK_HAVE_LIBEDIT
#include <histedit.h>
#endif

#define CMD "chat"

struct history {
    struct ork_chat_msg *msgs;   /* contents are ork_strdup'd */
    size_t n, cap;
};

struct reply {
    char *text;                  /* the streamed assistant text, accumulated */
    size_t len, cap;
};

/* SIGINT count since the reply (or prompt) began: set by the handler, read by on_text (stop the
 * reply) and the read loop (quit). */
static volatile sig_atomic_t g_interrupts;
/* Ctrl-C presses that quit while a reply is being generated (the first only stops the reply) */
#define CHAT_QUIT_INTERRUPTS 2

static void on_sigint(int sig)
{
    (void)sig;
    if (g_interrupts < CHAT_QUIT_INTERRUPTS)
        g_interrupts++;
}

static const char SLASH_HELP[] =
    "commands (never sent to the model):\n"
    "  /help            this list\n"
    "  /clear           forget the conversation (keeps the system message; /reset too)\n"
    "  /system TEXT     set the system message (/system alone removes it)\n"
    "  /save FILE       write the conversation as JSON {\"messages\": [...]}\n"
    "  /exit, /quit     quit (so do end of input and Ctrl-C at the prompt)\n"
    "Ctrl-C during a reply stops it; the partial reply stays in the conversation.\n";

static void usage(FILE *out)
{
    fprintf(out, "usage: ork chat [-m] MODEL [options]\n\n"
                 "Interactive chat: type a message and press enter. Reads piped input too; on a\n"
                 "terminal lines can be edited and recalled (when built with libedit).\n\n");
    fputs(SLASH_HELP, out);
    fprintf(out, "\noptions (--name=value works for every --name value):\n"
                 "  MODEL                     the model, as the first argument (same as -m)\n"
                 "  -sys, --system-prompt TEXT\n"
                 "                            system message (also --system)\n"
                 "  --chat-template NAME      chatml, llama3, llama2, gemma or phi3 (also --template;\n"
                 "                            default: from the model's tokenizer.chat_template,\n"
                 "                            else chatml)\n"
                 "  -r, --reverse-prompt STR  end the reply before STR (same as --stop STR)\n"
                 "  --verbose-prompt          print each rendered prompt to stderr\n"
                 "  -cnv, --conversation, -i, --interactive\n"
                 "                            accepted and ignored (chat is always interactive)\n");
    ork_cli_gen_help(out, true);
}

/* llama-cli options people type that ork chat does not have, with what to do instead. */
static const struct {
    const char *opt;
    const char *why;
} UNSUPPORTED[] = {
    { "-ngl", "ork picks the backend with --device (cpu, npu, ...)" },
    { "--n-gpu-layers", "ork picks the backend with --device (cpu, npu, ...)" },
    { "-fa", "attention runs on the CPU; there is no flash-attention switch" },
    { "--flash-attn", "attention runs on the CPU; there is no flash-attention switch" },
    { "--in-prefix", "not supported" },
    { "--in-suffix", "not supported" },
    { "--mlock", "not supported (--mmap / --no-mmap choose how weights load)" },
    { "--jinja", "templates are recognised by family (--chat-template NAME)" },
    { "--chat-template-file", "templates are recognised by family (--chat-template NAME)" },
    { "-mli", "not supported: each line is one message" },
    { "--multiline-input", "not supported: each line is one message" },
};

/* Options accepted for llama-cli compatibility that change nothing here. */
static bool is_noop_opt(const char *a)
{
    return !strcmp(a, "-cnv") || !strcmp(a, "--conversation") || !strcmp(a, "-i") ||
           !strcmp(a, "--interactive") || !strcmp(a, "--interactive-first");
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
    memset(&h->msgs[h->n], 0, sizeof(h->msgs[h->n]));   /* fields other than role/content */
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
    if (g_interrupts)
        return 1;   /* Ctrl-C: stop this reply; what was streamed is kept */
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
            fprintf(stderr, "ork %s: unknown --chat-template '%s' (chatml, llama3, llama2, gemma, "
                    "phi3)\n", CMD, name);
            return ORK_EXIT_USAGE;
        }
        return 0;
    }
    struct ork_gguf_str s;
    char *tmpl = NULL;
    if (ork_gguf_get_str(ork_model_gguf(m), "tokenizer.chat_template", &s) == 0)
        tmpl = ork_strndup(s.ptr, (size_t)s.len);
    if (!tmpl || ork_chat_detect(tmpl, f) < 0) {
        fprintf(stderr, "ork %s: note: %s; using the ChatML format (--chat-template to choose)\n", CMD,
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
static int chat_turn(struct ork_session *s, struct ork_sampler *smp, struct ork_spec *spec,
                     enum ork_chat_format fmt, const struct history *h,
                     const struct ork_cli_gen_opts *o, bool show_prompt, struct reply *r,
                     struct ork_gen_stats *st)
{
    const struct ork_tokenizer *tok = ork_model_tokenizer(ork_session_model(s));
    char *text = NULL;
    int32_t *ids = NULL;
    int ret = ork_chat_render(fmt, h->msgs, h->n, true, &text);
    if (ret < 0)
        return ret;
    if (show_prompt)
        fprintf(stderr, "chat: prompt:\n%s\nchat: end of prompt\n", text);
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
                         "(/clear to start over, or a larger -c)", n, ork_session_ctx_size(s));
        goto out;
    }
    struct ork_gen_params gp;
    ork_gen_params_default(&gp);
    gp.sampling = o->sampling;
    gp.n_predict = o->n_predict;
    gp.stops = o->stops;
    gp.n_stops = o->n_stops;
    gp.reuse_cache = true;
    gp.ignore_eos = o->ignore_eos;
    gp.spec = spec;
    gp.on_text = on_text;
    gp.user = r;
    ork_sampler_grammar_restart(smp);   /* each reply starts at the grammar's root */
    ret = ork_generate_tokens(s, smp, ids, (int32_t)n, &gp, st);
out:
    ork_free(ids);
    ork_free(text);
    return ret;
}

/* Set (text non-empty) or remove the system message, the first message when there is one. */
static int set_system(struct history *h, size_t *base, const char *text)
{
    bool has = h->n > 0 && !strcmp(h->msgs[0].role, "system");
    if (!*text) {
        if (has) {
            ork_free((void *)h->msgs[0].content);
            memmove(h->msgs, h->msgs + 1, (h->n - 1) * sizeof(*h->msgs));
            h->n--;
        }
        *base = 0;
        return 0;
    }
    char *c = ork_strdup(text);
    if (!c)
        return ORK_ENOMEM;
    if (has) {
        ork_free((void *)h->msgs[0].content);
        h->msgs[0].content = c;
    } else {
        int ret = hist_add(h, "system", "");   /* grow by one, then move it to the front */
        if (ret < 0) {
            ork_free(c);
            return ret;
        }
        ork_free((void *)h->msgs[h->n - 1].content);
        memmove(h->msgs + 1, h->msgs, (h->n - 1) * sizeof(*h->msgs));
        h->msgs[0].role = "system";
        h->msgs[0].content = c;
    }
    *base = 1;
    return 0;
}

static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"':  fputs("\\\"", f); break;
        case '\\': fputs("\\\\", f); break;
        case '\n': fputs("\\n", f); break;
        case '\r': fputs("\\r", f); break;
        case '\t': fputs("\\t", f); break;
        default:
            if (*p < 0x20)   /* the other control characters have no short escape */
                fprintf(f, "\\u%04x", *p);
            else
                fputc(*p, f);
        }
    }
    fputc('"', f);
}

/* /save: the conversation as an OpenAI-style request body, {"messages": [...]}, which
 * `ork serve`'s /v1/chat/completions takes as is. */
static int save_history(const struct history *h, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return ork_errorf(ORK_EIO, "cannot write '%s': %s", path, strerror(errno));
    fputs("{\"messages\": [", f);
    for (size_t i = 0; i < h->n; i++) {
        fputs(i ? ",\n  {\"role\": " : "\n  {\"role\": ", f);
        json_string(f, h->msgs[i].role);
        fputs(", \"content\": ", f);
        json_string(f, h->msgs[i].content);
        fputc('}', f);
    }
    fputs("\n]}\n", f);
    if (ferror(f) | (fclose(f) != 0))
        return ork_errorf(ORK_EIO, "cannot write '%s': %s", path, strerror(errno));
    return 0;
}

/* ---- reading lines: libedit on a terminal, else getline ------------------------------------ */

struct reader {
    bool tty;
    char *line;          /* getline's buffer (malloc) */
    size_t cap;
#ifdef ORK_HAVE_LIBEDIT
    EditLine *el;
    History *hist;
    HistEvent ev;
#endif
};

/* entries the line history keeps (up and down arrows) */
#define CHAT_HISTORY_LINES 500

#ifdef ORK_HAVE_LIBEDIT
static char *el_prompt(EditLine *el)
{
    (void)el;
    static char prompt[] = "> ";
    return prompt;
}
#endif

static void reader_open(struct reader *rd, const char *prog)
{
    memset(rd, 0, sizeof(*rd));
    rd->tty = isatty(STDIN_FILENO) && isatty(STDOUT_FILENO);
#ifdef ORK_HAVE_LIBEDIT
    if (!rd->tty)
        return;
    rd->el = el_init(prog, stdin, stdout, stderr);
    rd->hist = history_init();
    if (!rd->el || !rd->hist) {
        if (rd->el)
            el_end(rd->el);
        if (rd->hist)
            history_end(rd->hist);
        rd->el = NULL;
        rd->hist = NULL;
        return;   /* plain getline then */
    }
    history(rd->hist, &rd->ev, H_SETSIZE, CHAT_HISTORY_LINES);
    el_set(rd->el, EL_PROMPT, el_prompt);
    el_set(rd->el, EL_EDITOR, "emacs");
    el_set(rd->el, EL_HIST, history, rd->hist);
#else
    (void)prog;
#endif
}

/* The next line without its end of line, or NULL at end of input (or Ctrl-C at the prompt:
 * g_interrupts is then non-zero). */
static const char *reader_get(struct reader *rd)
{
#ifdef ORK_HAVE_LIBEDIT
    if (rd->el) {
        int count = 0;
        const char *l = el_gets(rd->el, &count);
        if (!l || count <= 0 || g_interrupts)
            return NULL;
        size_t n = strlen(l);
        char *copy = realloc(rd->line, n + 1);
        if (!copy)
            return NULL;
        rd->line = copy;
        memcpy(copy, l, n + 1);
        while (n > 0 && (copy[n - 1] == '\n' || copy[n - 1] == '\r'))
            copy[--n] = 0;
        if (n)
            history(rd->hist, &rd->ev, H_ENTER, copy);
        return copy;
    }
#endif
    if (rd->tty) {
        fputs("> ", stdout);
        fflush(stdout);
    }
    ssize_t got = getline(&rd->line, &rd->cap, stdin);
    if (got < 0 || g_interrupts)
        return NULL;
    while (got > 0 && (rd->line[got - 1] == '\n' || rd->line[got - 1] == '\r'))
        rd->line[--got] = 0;
    return rd->line;
}

static void reader_close(struct reader *rd)
{
#ifdef ORK_HAVE_LIBEDIT
    if (rd->el)
        el_end(rd->el);
    if (rd->hist)
        history_end(rd->hist);
#endif
    free(rd->line);   /* malloc'd by getline or realloc */
}

/* A "/name" command: the text after the name (NULL when line is not this command). */
static const char *slash_arg(const char *line, const char *name)
{
    size_t n = strlen(name);
    if (strncmp(line, name, n) != 0 || (line[n] && line[n] != ' '))
        return NULL;
    const char *a = line + n;
    while (*a == ' ')
        a++;
    return a;
}

/* What ork chat takes besides the shared generation options. */
struct chat_args {
    const char *system, *tmpl_name;
    bool show_prompt;
};

/* Parse chat's command line into o and ca: -1 to go on, else the exit code to return (help
 * printed, or a usage error reported). */
static int parse_args(int argc, char **argv, struct ork_cli_gen_opts *o, struct chat_args *ca)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return ORK_EXIT_OK;
        }
        for (size_t k = 0; k < sizeof UNSUPPORTED / sizeof UNSUPPORTED[0]; k++) {
            if (!strcmp(a, UNSUPPORTED[k].opt)) {
                fprintf(stderr, "ork %s: %s is not supported: %s\n", CMD, a, UNSUPPORTED[k].why);
                return ORK_EXIT_USAGE;
            }
        }
        int r = ork_cli_gen_opt(CMD, argc, argv, &i, o);
        if (r < 0)
            return ORK_EXIT_USAGE;
        if (r > 0)
            continue;
        if (!strcmp(a, "--system") || !strcmp(a, "-sys") || !strcmp(a, "--system-prompt")) {
            if (!(ca->system = ork_cli_value(CMD, argc, argv, &i)))
                return ORK_EXIT_USAGE;
        } else if (!strcmp(a, "--template") || !strcmp(a, "--chat-template")) {
            if (!(ca->tmpl_name = ork_cli_value(CMD, argc, argv, &i)))
                return ORK_EXIT_USAGE;
        } else if (!strcmp(a, "-r") || !strcmp(a, "--reverse-prompt")) {
            const char *v = ork_cli_value(CMD, argc, argv, &i);
            if (!v)
                return ORK_EXIT_USAGE;
            if (!*v) {
                fprintf(stderr, "ork %s: %s needs a non-empty string\n", CMD, a);
                return ORK_EXIT_USAGE;
            }
            if (o->n_stops >= ORK_CLI_MAX_STOPS) {
                fprintf(stderr, "ork %s: at most %d --stop and -r strings\n", CMD,
                        ORK_CLI_MAX_STOPS);
                return ORK_EXIT_USAGE;
            }
            o->stops[o->n_stops++] = v;
        } else if (!strcmp(a, "--verbose-prompt")) {
            ca->show_prompt = true;
        } else if (is_noop_opt(a)) {
            continue;
        } else if (a[0] != '-' && !o->model) {
            o->model = a;   /* ork chat MODEL */
        } else if (a[0] != '-') {
            fprintf(stderr, "ork %s: unexpected argument '%s' (the model is already '%s')\n", CMD,
                    a, o->model);
            return ORK_EXIT_USAGE;
        } else {
            fprintf(stderr, "ork %s: unknown option '%s' (see ork %s --help)\n", CMD, a, CMD);
            return ORK_EXIT_USAGE;
        }
    }
    return -1;
}

int ork_cmd_chat(int argc, char **argv)
{
    struct ork_cli_gen_opts o;
    ork_cli_gen_opts_default(&o);
    struct chat_args ca = { 0 };
    int pr = parse_args(argc, argv, &o, &ca);
    if (pr >= 0)
        return pr;
    const char *system = ca.system, *tmpl_name = ca.tmpl_name;
    bool show_prompt = ca.show_prompt;
    if (!o.model) {
        fprintf(stderr, "ork %s: a model is required: ork chat MODEL or -m MODEL (see ork %s "
                "--help)\n", CMD, CMD);
        return ORK_EXIT_USAGE;
    }
    if (tmpl_name) {
        enum ork_chat_format f;
        if (ork_chat_format_from_name(tmpl_name, &f) < 0) {
            fprintf(stderr, "ork %s: unknown --chat-template '%s' (chatml, llama3, llama2, gemma, "
                    "phi3)\n", CMD, tmpl_name);
            return ORK_EXIT_USAGE;
        }
    }

    struct ork_model *m;
    struct ork_session *s;
    struct ork_sampler *smp;
    struct ork_spec *spec = NULL;
    int rc = ork_cli_gen_setup(CMD, &o, &m, &s, &smp);
    if (rc || (rc = ork_cli_spec_setup(CMD, &o, m, s, &spec)) != 0)
        goto out_model;
    enum ork_chat_format fmt;
    if ((rc = pick_format(m, tmpl_name, &fmt)) != 0)
        goto out_model;
    add_format_stops(fmt, &o);
    if (o.verbose)
        fprintf(stderr, "chat: template %s\n", ork_chat_format_name(fmt));

    struct history h = { 0 };
    struct reply r = { 0 };
    size_t base = 0;   /* messages kept by /clear (the system message) */
    if (system && set_system(&h, &base, system) < 0) {
        ork_cli_error(CMD, ORK_ENOMEM);
        rc = ORK_EXIT_ERROR;
        goto out;
    }
    /* Ctrl-C sets a flag (no SA_RESTART: a read at the prompt returns with EINTR) */
    struct sigaction sa, old_sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_sa);
    struct reader rd;
    reader_open(&rd, "ork");
    int turn = 0;
    for (;;) {
        g_interrupts = 0;
        const char *line = reader_get(&rd);
        if (!line) {
            if (rd.tty)
                fputc('\n', stdout);   /* leave the terminal at the start of a line */
            break;
        }
        if (!*line)
            continue;
        if (line[0] == '/') {
            const char *arg;
            if (slash_arg(line, "/exit") || slash_arg(line, "/quit"))
                break;
            if (slash_arg(line, "/help")) {
                fputs(SLASH_HELP, stdout);
                fflush(stdout);
            } else if (slash_arg(line, "/clear") || slash_arg(line, "/reset")) {
                hist_truncate(&h, base);
                ork_session_reset(s);
                ork_sampler_reset(smp);
                fprintf(stderr, "chat: conversation reset\n");
            } else if ((arg = slash_arg(line, "/system"))) {
                if (set_system(&h, &base, arg) < 0) {
                    ork_cli_error(CMD, ORK_ENOMEM);
                    rc = ORK_EXIT_ERROR;
                    break;
                }
                fprintf(stderr, "chat: system message %s\n", *arg ? "set" : "removed");
            } else if ((arg = slash_arg(line, "/save"))) {
                int ret = *arg ? save_history(&h, arg)
                               : ork_errorf(ORK_EINVAL, "/save needs a file name");
                if (ret < 0)
                    ork_cli_error(CMD, ret);
                else
                    fprintf(stderr, "chat: %zu messages saved to %s\n", h.n, arg);
            } else {
                fprintf(stderr, "chat: unknown command '%s' (/help lists them)\n", line);
            }
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
        int ret = chat_turn(s, smp, spec, fmt, &h, &o, show_prompt, &r, &st);
        fputc('\n', stdout);
        fflush(stdout);
        turn++;
        if (ret < 0) {
            ork_cli_error(CMD, ret);
            hist_truncate(&h, h.n - 1);   /* drop the unanswered user message */
            if (g_interrupts >= CHAT_QUIT_INTERRUPTS)
                break;
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
        if (g_interrupts) {
            fprintf(stderr, "chat: reply interrupted\n");
            if (g_interrupts >= CHAT_QUIT_INTERRUPTS)
                break;
        }
        if (st.stop == ORK_STOP_CONTEXT)
            fprintf(stderr, "chat: the context is full (%d tokens); /clear to start over\n",
                    ork_session_ctx_size(s));
    }
    reader_close(&rd);
    sigaction(SIGINT, &old_sa, NULL);
out:
    hist_truncate(&h, 0);
    ork_free(h.msgs);
    ork_free(r.text);
out_model:
    ork_cli_spec_free(spec, o.verbose);
    ork_sampler_free(smp);
    ork_cli_gen_constraint_free();
    ork_session_free(s);
    ork_model_free(m);
    return rc;
}
