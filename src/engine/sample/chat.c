/* chat.c -- chat prompt formats (see ork-engine/chat.h): ChatML (Qwen, Qwen3-MoE), Llama 3,
 * Llama 2, Gemma (2 and 3) and Phi-3.
 *
 * A model's tokenizer.chat_template is a Jinja program; we do not interpret it. We recognise the
 * template family by its special-token markers and render that family's published format in C.
 * The formats are written from their public descriptions (docs/sampling.md cites them):
 *
 *   ChatML   "<|im_start|>{role}\n{content}<|im_end|>\n" per message;
 *            generation prompt "<|im_start|>assistant\n".
 *   Llama 3  "<|start_header_id|>{role}<|end_header_id|>\n\n{trim(content)}<|eot_id|>" per
 *            message; generation prompt "<|start_header_id|>assistant<|end_header_id|>\n\n".
 *   Llama 2  "[INST] <<SYS>>\n{system}\n<</SYS>>\n\n{user} [/INST] {assistant} </s>" then
 *            "<s>[INST] {user} [/INST] ..." for later turns; user and assistant text stripped of
 *            surrounding whitespace; the system message folds into the first user turn. The
 *            closing "[/INST]" already opens the assistant turn, so add_assistant adds nothing.
 *   Gemma    "<start_of_turn>{user|model}\n{trim(content)}<end_of_turn>\n" per message, the
 *            assistant role named "model"; no system role: the system text and "\n\n" open the
 *            first user message (Google's Gemma 2/3 model cards, "Prompt formatting");
 *            generation prompt "<start_of_turn>model\n".
 *   Phi-3    "<|{role}|>\n{content}<|end|>\n" per message (system, user, assistant);
 *            generation prompt "<|assistant|>\n" (Microsoft's Phi-3 model cards, "Chat
 *            Format"). The first Phi-3-mini template (vocab/ggml-vocab-phi-3.gguf) drops
 *            system messages; the later Phi-3 / Phi-3.5 ones write them as <|system|>, as here.
 *
 * Tool calls (chat.h): role "tool" messages and assistant messages carrying tool calls are
 * first lowered to plain turns in the format's convention (lower_tools below), then rendered as
 * any other turn. ChatML follows Qwen2.5's published template: consecutive tool results form
 * one user turn of "\n<tool_response>\n{content}\n</tool_response>" blocks, and an assistant
 * turn writes its content, then "\n<tool_call>\n{"name": ..., "arguments": ...}\n</tool_call>"
 * per call (no leading newline when the content is empty). Llama 3.1's JSON tool calling
 * writes results as "ipython" turns and calls as {"name": ..., "parameters": ...}. The other
 * formats use the ChatML convention inside their own user and assistant turns.
 *
 * BOS is never written: the tokenizer adds it. Not here: reasoning blocks, or any other
 * template feature beyond these turns. */
#include <ork-engine/chat.h>

#include <ork/alloc.h>
#include <ork/error.h>

#include <stdint.h>
#include <string.h>

/* Markers that identify each family's template text (its special tokens). */
#define CHATML_MARKER "<|im_start|>"
#define LLAMA3_MARKER "<|start_header_id|>"
#define LLAMA2_MARKER "[INST]"
#define GEMMA_MARKER "<start_of_turn>"
#define PHI3_MARKER "<|end|>"

/* Gemma pieces. */
#define GEMMA_BEGIN "<start_of_turn>"
#define GEMMA_END "<end_of_turn>"
#define GEMMA_SYSTEM_SEP "\n\n"

/* Phi-3 pieces. */
#define PHI3_END "<|end|>"

/* ChatML pieces. */
#define CHATML_BEGIN "<|im_start|>"
#define CHATML_END "<|im_end|>\n"

/* Llama 3 pieces. */
#define LLAMA3_HEADER_BEGIN "<|start_header_id|>"
#define LLAMA3_HEADER_END "<|end_header_id|>\n\n"
#define LLAMA3_EOT "<|eot_id|>"

/* Llama 2 pieces (Meta's reference chat_completion: B_INST, E_INST, B_SYS, E_SYS; BOS and EOS
 * written as the SentencePiece special-token texts). */
#define LLAMA2_B_INST "[INST]"
#define LLAMA2_E_INST "[/INST]"
#define LLAMA2_B_SYS "<<SYS>>\n"
#define LLAMA2_E_SYS "\n<</SYS>>\n\n"
#define LLAMA2_BOS "<s>"
#define LLAMA2_EOS "</s>"

static const char *const format_names[] = {
    [ORK_CHAT_CHATML] = "chatml",
    [ORK_CHAT_LLAMA3] = "llama3",
    [ORK_CHAT_LLAMA2] = "llama2",
    [ORK_CHAT_GEMMA] = "gemma",
    [ORK_CHAT_PHI3] = "phi3",
};

static const char *const end_markers[] = {
    [ORK_CHAT_CHATML] = "<|im_end|>", [ORK_CHAT_LLAMA3] = LLAMA3_EOT,
    [ORK_CHAT_LLAMA2] = LLAMA2_EOS, [ORK_CHAT_GEMMA] = GEMMA_END, [ORK_CHAT_PHI3] = PHI3_END,
};

/* Per format: the end marker, then what would open the next turn. */
static const char *const stops_chatml[] = { "<|im_end|>", CHATML_MARKER };
static const char *const stops_llama3[] = { LLAMA3_EOT, LLAMA3_MARKER };
static const char *const stops_llama2[] = { LLAMA2_B_INST };
static const char *const stops_gemma[] = { GEMMA_END, GEMMA_BEGIN };
static const char *const stops_phi3[] = { PHI3_END, "<|user|>" };
#define N_FORMATS (sizeof(format_names) / sizeof(format_names[0]))

int ork_chat_detect(const char *template_text, enum ork_chat_format *out)
{
    if (!out)
        return ork_errorf(ORK_EINVAL, "chat: detect: out must not be NULL");
    if (!template_text)
        return ork_errorf(ORK_EUNSUPPORTED, "chat: the model has no chat template");
    /* Order matters only for templates that mention several families; ChatML and Llama 3
     * markers are special tokens and far more specific than the bracketed Llama 2 one. */
    if (strstr(template_text, CHATML_MARKER)) {
        *out = ORK_CHAT_CHATML;
        return 0;
    }
    if (strstr(template_text, LLAMA3_MARKER)) {
        *out = ORK_CHAT_LLAMA3;
        return 0;
    }
    if (strstr(template_text, GEMMA_MARKER)) {
        *out = ORK_CHAT_GEMMA;
        return 0;
    }
    if (strstr(template_text, PHI3_MARKER)) {
        *out = ORK_CHAT_PHI3;
        return 0;
    }
    if (strstr(template_text, LLAMA2_MARKER)) {
        *out = ORK_CHAT_LLAMA2;
        return 0;
    }
    return ork_errorf(ORK_EUNSUPPORTED, "chat: unrecognised chat template (no %s, %s, %s, %s or "
                      "%s marker)", CHATML_MARKER, LLAMA3_MARKER, GEMMA_MARKER, PHI3_MARKER,
                      LLAMA2_MARKER);
}

int ork_chat_format_from_name(const char *name, enum ork_chat_format *out)
{
    if (!name || !out)
        return ork_errorf(ORK_EINVAL, "chat: format name and out must not be NULL");
    for (size_t i = 0; i < N_FORMATS; i++) {
        if (strcmp(name, format_names[i]) == 0) {
            *out = (enum ork_chat_format)i;
            return 0;
        }
    }
    return ork_errorf(ORK_EINVAL, "chat: unknown chat format '%s' (expected chatml, llama3, "
                      "llama2, gemma or phi3)", name);
}

const char *ork_chat_format_name(enum ork_chat_format f)
{
    if ((unsigned)f < N_FORMATS)
        return format_names[f];
    return "unknown";
}

const char *ork_chat_end_marker(enum ork_chat_format f)
{
    return (unsigned)f < N_FORMATS ? end_markers[f] : NULL;
}

const char *const *ork_chat_stop_strings(enum ork_chat_format f, size_t *n)
{
#define STOPS(a) (*n = sizeof(a) / sizeof((a)[0]), (a))
    switch ((int)f) {
    case ORK_CHAT_CHATML: return STOPS(stops_chatml);
    case ORK_CHAT_LLAMA3: return STOPS(stops_llama3);
    case ORK_CHAT_LLAMA2: return STOPS(stops_llama2);
    case ORK_CHAT_GEMMA: return STOPS(stops_gemma);
    case ORK_CHAT_PHI3: return STOPS(stops_phi3);
    default: *n = 0; return NULL;
    }
#undef STOPS
}

/* ---------------------------------------------------------------------------------------------
 * A growable output string. */

struct sbuf {
    char *p;
    size_t len, cap;
    int err;   /* first error; later appends are no-ops */
};

static void sb_append(struct sbuf *b, const char *s, size_t n)
{
    if (b->err)
        return;
    if (n > SIZE_MAX - b->len - 1) {
        b->err = ork_errorf(ORK_ENOMEM, "chat: rendered prompt too large");
        return;
    }
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1)
            cap = cap > SIZE_MAX / 2 ? b->len + n + 1 : cap * 2;
        char *p = ork_realloc(b->p, cap);
        if (!p) {
            b->err = ork_errorf(ORK_ENOMEM, "chat: cannot allocate %zu bytes for the prompt", cap);
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void sb_puts(struct sbuf *b, const char *s)
{
    sb_append(b, s, strlen(s));
}

/* ASCII whitespace, as Python's str.strip() treats it for ASCII text. */
static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* Append s[0..n) without leading and trailing whitespace. */
static void sb_append_stripped(struct sbuf *b, const char *s, size_t n)
{
    while (n > 0 && is_space(*s)) {
        s++;
        n--;
    }
    while (n > 0 && is_space(s[n - 1]))
        n--;
    sb_append(b, s, n);
}

/* ---------------------------------------------------------------------------------------------
 * Rendering */

enum role { ROLE_SYSTEM, ROLE_USER, ROLE_ASSISTANT };

static size_t n_calls_of(const struct ork_chat_msg_calls *calls, size_t i)
{
    return calls ? calls[i].n : 0;
}

static int check_messages(const struct ork_chat_msg *msgs, const struct ork_chat_msg_calls *calls,
                          size_t n)
{
    if (n > 0 && !msgs)
        return ork_errorf(ORK_EINVAL, "chat: %zu messages but the array is NULL", n);
    for (size_t i = 0; i < n; i++) {
        const char *r = msgs[i].role;
        if (!r)
            return ork_errorf(ORK_EINVAL, "chat: message %zu: role is NULL", i);
        if (strcmp(r, "system") != 0 && strcmp(r, "user") != 0 && strcmp(r, "assistant") != 0 &&
            strcmp(r, "tool") != 0)
            return ork_errorf(ORK_EINVAL,
                              "chat: message %zu: unknown role '%s' (expected system, user, "
                              "assistant or tool)", i, r);
        if (!msgs[i].content)
            return ork_errorf(ORK_EINVAL, "chat: message %zu (%s): content is NULL", i, r);
        size_t nc = n_calls_of(calls, i);
        if (nc && strcmp(r, "assistant") != 0)
            return ork_errorf(ORK_EINVAL, "chat: message %zu (%s): only assistant messages carry "
                              "tool calls", i, r);
        if (nc && !calls[i].calls)
            return ork_errorf(ORK_EINVAL, "chat: message %zu: %zu tool calls but the array is "
                              "NULL", i, nc);
        for (size_t k = 0; k < nc; k++)
            if (!calls[i].calls[k].name || !calls[i].calls[k].arguments)
                return ork_errorf(ORK_EINVAL, "chat: message %zu: tool call %zu: name and "
                                  "arguments must not be NULL", i, k);
    }
    return 0;
}

static enum role role_of(const struct ork_chat_msg *m)
{
    if (strcmp(m->role, "system") == 0)
        return ROLE_SYSTEM;
    if (strcmp(m->role, "user") == 0)
        return ROLE_USER;
    return ROLE_ASSISTANT;
}

static void render_chatml(struct sbuf *b, const struct ork_chat_msg *msgs, size_t n,
                          bool add_assistant)
{
    for (size_t i = 0; i < n; i++) {
        sb_puts(b, CHATML_BEGIN);
        sb_puts(b, msgs[i].role);
        sb_puts(b, "\n");
        sb_puts(b, msgs[i].content);
        sb_puts(b, CHATML_END);
    }
    if (add_assistant)
        sb_puts(b, CHATML_BEGIN "assistant\n");
}

static void render_llama3(struct sbuf *b, const struct ork_chat_msg *msgs, size_t n,
                          bool add_assistant)
{
    for (size_t i = 0; i < n; i++) {
        sb_puts(b, LLAMA3_HEADER_BEGIN);
        sb_puts(b, msgs[i].role);
        sb_puts(b, LLAMA3_HEADER_END);
        sb_append_stripped(b, msgs[i].content, strlen(msgs[i].content));
        sb_puts(b, LLAMA3_EOT);
    }
    if (add_assistant)
        sb_puts(b, LLAMA3_HEADER_BEGIN "assistant" LLAMA3_HEADER_END);
}

/* Gemma has user and model turns only: a system message's text and GEMMA_SYSTEM_SEP open the
 * next user message (or stand as a user turn of their own when none follows). */
static void render_gemma(struct sbuf *b, const struct ork_chat_msg *msgs, size_t n,
                         bool add_assistant)
{
    const char *pending = NULL;         /* system text waiting for its user turn */
    for (size_t i = 0; i < n; i++) {
        enum role r = role_of(&msgs[i]);
        const char *c = msgs[i].content;
        if (r == ROLE_SYSTEM && i + 1 < n && role_of(&msgs[i + 1]) == ROLE_USER) {
            pending = c;
            continue;
        }
        sb_puts(b, GEMMA_BEGIN);
        sb_puts(b, r == ROLE_ASSISTANT ? "model\n" : "user\n");
        if (pending) {
            sb_append_stripped(b, pending, strlen(pending));
            sb_puts(b, GEMMA_SYSTEM_SEP);
            pending = NULL;
        }
        sb_append_stripped(b, c, strlen(c));
        sb_puts(b, GEMMA_END "\n");
    }
    if (add_assistant)
        sb_puts(b, GEMMA_BEGIN "model\n");
}

static void render_phi3(struct sbuf *b, const struct ork_chat_msg *msgs, size_t n,
                        bool add_assistant)
{
    static const char *const tags[] = {
        [ROLE_SYSTEM] = "<|system|>\n", [ROLE_USER] = "<|user|>\n",
        [ROLE_ASSISTANT] = "<|assistant|>\n",
    };
    for (size_t i = 0; i < n; i++) {
        sb_puts(b, tags[role_of(&msgs[i])]);
        sb_puts(b, msgs[i].content);
        sb_puts(b, PHI3_END "\n");
    }
    if (add_assistant)
        sb_puts(b, tags[ROLE_ASSISTANT]);
}

/* Llama 2 needs an optional leading system message, then user/assistant turns alternating and
 * starting with a user turn (Meta's reference rejects any other order). */
static int render_llama2(struct sbuf *b, const struct ork_chat_msg *msgs, size_t n)
{
    size_t first = 0;
    const char *system = NULL;
    if (n > 0 && role_of(&msgs[0]) == ROLE_SYSTEM) {
        system = msgs[0].content;
        first = 1;
    }
    if (system && first == n)
        return ork_errorf(ORK_EINVAL, "chat: llama2 format needs a user message after the system "
                          "message");
    for (size_t i = first; i < n; i++) {
        enum role want = ((i - first) % 2 == 0) ? ROLE_USER : ROLE_ASSISTANT;
        enum role got = role_of(&msgs[i]);
        if (got == ROLE_SYSTEM)
            return ork_errorf(ORK_EINVAL, "chat: message %zu: llama2 format allows a system message "
                              "only as the first message", i);
        if (got != want)
            return ork_errorf(ORK_EINVAL, "chat: message %zu: llama2 format needs user and "
                              "assistant turns alternating, got '%s' where '%s' was expected", i,
                              msgs[i].role, want == ROLE_USER ? "user" : "assistant");
    }

    for (size_t i = first; i < n; i++) {
        const char *content = msgs[i].content;
        if (role_of(&msgs[i]) == ROLE_ASSISTANT) {
            sb_puts(b, " ");
            sb_append_stripped(b, content, strlen(content));
            sb_puts(b, " " LLAMA2_EOS);
            continue;
        }
        if (i > first)              /* the first BOS comes from the tokenizer */
            sb_puts(b, LLAMA2_BOS);
        sb_puts(b, LLAMA2_B_INST " ");
        if (i == first && system) {
            /* Meta folds B_SYS + system + E_SYS + user into one text and strips the whole; the
             * leading '<' of B_SYS means only the user's trailing whitespace (or, with an empty
             * user message, E_SYS's) is affected. */
            struct sbuf fold = { 0 };
            sb_puts(&fold, LLAMA2_B_SYS);
            sb_puts(&fold, system);
            sb_puts(&fold, LLAMA2_E_SYS);
            sb_puts(&fold, content);
            if (fold.err) {
                ork_free(fold.p);
                return fold.err;
            }
            sb_append_stripped(b, fold.p, fold.len);
            ork_free(fold.p);
        } else {
            sb_append_stripped(b, content, strlen(content));
        }
        sb_puts(b, " " LLAMA2_E_INST);
    }
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * Tool calls */

/* Qwen2.5's tool instructions (its published chat template's wording: the model was trained to
 * answer them), before and after the list of tools. */
#define TOOLS_TAGGED_HEAD                                                                      \
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"        \
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>"
#define TOOLS_TAGGED_TAIL                                                                      \
    "\n</tools>\n\nFor each function call, return a json object with function name and "       \
    "arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": "             \
    "<function-name>, \"arguments\": <args-json-object>}\n</tool_call>"
/* Llama 3.1's JSON tool calling instructions (Meta's model card, "JSON based tool calling"). */
#define TOOLS_JSON_HEAD                                                                        \
    "Given the following functions, please respond with a JSON for a function call with its "   \
    "proper arguments that best answers the given prompt.\n\nRespond in the format "           \
    "{\"name\": function name, \"parameters\": dictionary of argument name and its value}. "   \
    "Do not use variables.\n\n"
/* Between the system text and the tool instructions. */
#define TOOLS_SEP "\n\n"
/* A tool result in the tagged convention. */
#define TOOL_RESPONSE_OPEN "<tool_response>\n"
#define TOOL_RESPONSE_CLOSE "\n</tool_response>"
/* Llama 3.1's role for tool results. */
#define LLAMA3_TOOL_ROLE "ipython"

enum ork_chat_call_style ork_chat_call_style(enum ork_chat_format f)
{
    return (int)f == ORK_CHAT_LLAMA3 ? ORK_CHAT_CALL_JSON : ORK_CHAT_CALL_TAGGED;
}

int ork_chat_tools_system(enum ork_chat_format f, const char *system, const char *const *tools,
                          size_t n_tools, char **out)
{
    if (!out)
        return ork_errorf(ORK_EINVAL, "chat: tools: out must not be NULL");
    *out = NULL;
    if ((unsigned)f >= N_FORMATS)
        return ork_errorf(ORK_EINVAL, "chat: tools: unknown chat format %d", (int)f);
    if (n_tools > 0 && !tools)
        return ork_errorf(ORK_EINVAL, "chat: tools: %zu tools but the array is NULL", n_tools);
    for (size_t i = 0; i < n_tools; i++)
        if (!tools[i])
            return ork_errorf(ORK_EINVAL, "chat: tools: tool %zu is NULL", i);
    struct sbuf b = { 0 };
    sb_puts(&b, system ? system : "");
    if (n_tools > 0 && b.len > 0)
        sb_puts(&b, TOOLS_SEP);
    if (n_tools > 0 && ork_chat_call_style(f) == ORK_CHAT_CALL_JSON) {
        sb_puts(&b, TOOLS_JSON_HEAD);
        for (size_t i = 0; i < n_tools; i++) {
            sb_puts(&b, tools[i]);
            sb_puts(&b, "\n\n");
        }
    } else if (n_tools > 0) {
        sb_puts(&b, TOOLS_TAGGED_HEAD);
        for (size_t i = 0; i < n_tools; i++) {
            sb_puts(&b, "\n");
            sb_puts(&b, tools[i]);
        }
        sb_puts(&b, TOOLS_TAGGED_TAIL);
    }
    if (b.err) {
        ork_free(b.p);
        return b.err;
    }
    *out = b.p;
    return 0;
}

/* s as a JSON string literal (quotes included). */
static void sb_json_string(struct sbuf *b, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    sb_puts(b, "\"");
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            char e[2] = { '\\', (char)c };
            sb_append(b, e, 2);
        } else if (c < 0x20) {
            char e[6] = { '\\', 'u', '0', '0', hex[c >> 4], hex[c & 15] };
            sb_append(b, e, 6);
        } else {
            sb_append(b, (const char *)&c, 1);
        }
    }
    sb_puts(b, "\"");
}

/* An assistant message's content followed by its calls in format f's convention. */
static void sb_assistant_calls(struct sbuf *b, enum ork_chat_format f, const struct ork_chat_msg *m,
                               const struct ork_chat_msg_calls *mc)
{
    bool json = ork_chat_call_style(f) == ORK_CHAT_CALL_JSON;
    sb_puts(b, m->content);
    for (size_t k = 0; k < mc->n; k++) {
        const struct ork_chat_tool_call *c = &mc->calls[k];
        if (b->len > 0)
            sb_puts(b, "\n");
        if (!json)
            sb_puts(b, ORK_CHAT_TOOL_CALL_OPEN);
        sb_puts(b, "{\"name\": ");
        sb_json_string(b, c->name);
        sb_puts(b, json ? ", \"parameters\": " : ", \"arguments\": ");
        sb_puts(b, c->arguments);
        sb_puts(b, "}");
        if (!json)
            sb_puts(b, ORK_CHAT_TOOL_CALL_CLOSE);
    }
}

static bool needs_lowering(const struct ork_chat_msg *msgs, const struct ork_chat_msg_calls *calls,
                           size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (n_calls_of(calls, i) || strcmp(msgs[i].role, "tool") == 0)
            return true;
    return false;
}

/* Rewrite tool results and assistant tool calls as plain turns of format f: *lowered has *nl
 * messages whose contents are ork_malloc'd (free each, then the array). */
static int lower_tools(enum ork_chat_format f, const struct ork_chat_msg *msgs,
                       const struct ork_chat_msg_calls *calls, size_t n,
                       struct ork_chat_msg **lowered, size_t *nl)
{
    struct ork_chat_msg *lm = ork_calloc(n ? n : 1, sizeof(*lm));
    size_t k = 0;
    int ret = 0;
    if (!lm)
        return ork_errorf(ORK_ENOMEM, "chat: cannot allocate %zu messages", n);
    bool json = ork_chat_call_style(f) == ORK_CHAT_CALL_JSON;
    for (size_t i = 0; i < n; i++) {
        struct sbuf b = { 0 };
        sb_append(&b, "", 0);
        const char *role = msgs[i].role;
        if (strcmp(role, "tool") == 0 && json) {
            role = LLAMA3_TOOL_ROLE;
            sb_puts(&b, msgs[i].content);
        } else if (strcmp(role, "tool") == 0) {
            /* a run of tool results is one user turn */
            role = "user";
            for (;; i++) {
                sb_puts(&b, b.len ? "\n" TOOL_RESPONSE_OPEN : TOOL_RESPONSE_OPEN);
                sb_puts(&b, msgs[i].content);
                sb_puts(&b, TOOL_RESPONSE_CLOSE);
                if (i + 1 >= n || strcmp(msgs[i + 1].role, "tool") != 0)
                    break;
            }
        } else if (n_calls_of(calls, i)) {
            sb_assistant_calls(&b, f, &msgs[i], &calls[i]);
        } else {
            sb_puts(&b, msgs[i].content);
        }
        if (b.err) {
            ret = b.err;
            ork_free(b.p);
            goto fail;
        }
        lm[k].role = role;
        lm[k].content = b.p;
        k++;
    }
    *lowered = lm;
    *nl = k;
    return 0;
fail:
    for (size_t j = 0; j < k; j++)
        ork_free((char *)lm[j].content);
    ork_free(lm);
    return ret;
}

static int render_plain(enum ork_chat_format f, const struct ork_chat_msg *msgs, size_t n,
                        bool add_assistant, char **out);

int ork_chat_render(enum ork_chat_format f, const struct ork_chat_msg *msgs, size_t n,
                    bool add_assistant, char **out)
{
    return ork_chat_render_calls(f, msgs, NULL, n, add_assistant, out);
}

int ork_chat_render_calls(enum ork_chat_format f, const struct ork_chat_msg *msgs,
                          const struct ork_chat_msg_calls *calls, size_t n, bool add_assistant,
                          char **out)
{
    if (!out)
        return ork_errorf(ORK_EINVAL, "chat: render: out must not be NULL");
    *out = NULL;
    if ((unsigned)f >= N_FORMATS)
        return ork_errorf(ORK_EINVAL, "chat: render: unknown chat format %d", (int)f);
    int ret = check_messages(msgs, calls, n);
    if (ret < 0 || !needs_lowering(msgs, calls, n))
        return ret < 0 ? ret : render_plain(f, msgs, n, add_assistant, out);
    struct ork_chat_msg *lm = NULL;
    size_t nl = 0;
    if ((ret = lower_tools(f, msgs, calls, n, &lm, &nl)) < 0)
        return ret;
    ret = render_plain(f, lm, nl, add_assistant, out);
    for (size_t i = 0; i < nl; i++)
        ork_free((char *)lm[i].content);
    ork_free(lm);
    return ret;
}

/* Render messages of the roles system, user and assistant (and Llama 3's ipython), checked. */
static int render_plain(enum ork_chat_format f, const struct ork_chat_msg *msgs, size_t n,
                        bool add_assistant, char **out)
{
    int ret = 0;
    struct sbuf b = { 0 };
    sb_append(&b, "", 0);   /* an empty conversation still yields "" */
    switch ((int)f) {
    case ORK_CHAT_CHATML:
        render_chatml(&b, msgs, n, add_assistant);
        break;
    case ORK_CHAT_GEMMA:
        render_gemma(&b, msgs, n, add_assistant);
        break;
    case ORK_CHAT_PHI3:
        render_phi3(&b, msgs, n, add_assistant);
        break;
    case ORK_CHAT_LLAMA3:
        render_llama3(&b, msgs, n, add_assistant);
        break;
    case ORK_CHAT_LLAMA2:
        ret = render_llama2(&b, msgs, n);
        break;
    }
    if (ret == 0 && b.err)
        ret = b.err;
    if (ret < 0) {
        ork_free(b.p);
        return ret;
    }
    *out = b.p;
    return 0;
}
