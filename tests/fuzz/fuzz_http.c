/* fuzz_http.c -- libFuzzer target for the server's request parsing (src/server/request.c), also
 * replayed over tests/fuzz/corpus/http/ by every build. Each input is handed, as an HTTP request
 * body, to the parser and validator of every POST endpoint (/completion, /v1/completions,
 * /v1/chat/completions, /tokenize, /detokenize, /embedding, /v1/embeddings, /apply-template,
 * /slots actions, /props). Accepted requests must satisfy what the parser promises (token ids
 * inside the vocabulary, strings valid UTF-8 without NULs, bounded stop, prompt and choice
 * lists, values in range, plain save file names); rejected ones must carry a 4xx/5xx status
 * and a message. A broken promise traps. */
#include "server/srv_priv.h"

#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A vocabulary size for the id checks (stories260K's). */
#define FUZZ_N_VOCAB 512

#define PROMISE(cond)              \
    do {                           \
        if (!(cond))               \
            __builtin_trap();      \
    } while (0)

static void check_str(const char *s)
{
    if (s)
        PROMISE(ork__srv_utf8_valid(s, strlen(s)));
}

static void check_req(const struct srv_req *r)
{
    check_str(r->prompt_text);
    check_str(r->model);
    check_str(r->filename);
    if (r->filename)
        PROMISE(r->filename[0] && r->filename[0] != '.' && !strchr(r->filename, '/') &&
                strlen(r->filename) <= SRV_MAX_FILENAME);
    for (int32_t i = 0; i < r->n_prompt_ids; i++)
        PROMISE(r->prompt_ids[i] >= 0 && r->prompt_ids[i] < FUZZ_N_VOCAB);
    PROMISE(r->n_prompts >= 0 && r->n_prompts <= SRV_MAX_PROMPTS);
    for (int32_t p = 0; p < r->n_prompts; p++) {
        const struct srv_prompt *pr = &r->prompts[p];
        check_str(pr->text);
        PROMISE(pr->text ? pr->text[0] != 0 : pr->n_ids > 0);
        for (int32_t i = 0; i < pr->n_ids; i++)
            PROMISE(pr->ids[i] >= 0 && pr->ids[i] < FUZZ_N_VOCAB);
    }
    PROMISE(r->n_choices >= 1 && r->n_choices <= SRV_MAX_CHOICES);
    PROMISE(r->n_prompts * r->n_choices <= SRV_MAX_PROMPTS);
    PROMISE(r->id_slot >= -1);
    PROMISE(r->n_stops <= SRV_MAX_STOPS);
    for (size_t i = 0; i < r->n_stops; i++) {
        check_str(r->stops[i]);
        PROMISE(r->stops[i][0] != 0 && strlen(r->stops[i]) <= SRV_MAX_STOP_LEN);
    }
    for (size_t i = 0; i < r->n_msgs; i++) {
        check_str(r->msgs[i].role);
        check_str(r->msgs[i].content);
    }
    PROMISE(r->n_predict >= -1 && r->n_predict <= SRV_MAX_N_PREDICT);
    PROMISE(r->n_probs >= 0 && r->n_probs <= SRV_MAX_N_PROBS);
    PROMISE(r->sampling.temp >= 0 && r->sampling.top_p >= 0 && r->sampling.top_p <= 1);
    switch (r->ep) {
    case SRV_EP_COMPLETION:
    case SRV_EP_OAI_COMPLETION:
    case SRV_EP_EMBEDDING:
    case SRV_EP_OAI_EMBEDDING:
        PROMISE(r->n_prompts >= 1);
        break;
    case SRV_EP_APPLY_TEMPLATE:
    case SRV_EP_OAI_CHAT:
        PROMISE(r->n_msgs > 0 && r->n_msgs <= SRV_MAX_MESSAGES);
        break;
    case SRV_EP_TOKENIZE:
        PROMISE(r->prompt_text != NULL);
        break;
    default:
        break;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    for (int ep = 0; ep < SRV_EP_COUNT_; ep++) {
        struct srv_req r;
        struct srv_error err;
        memset(&err, 0, sizeof err);
        int ret = ork__srv_req_parse((enum srv_endpoint)ep, (const char *)data, size, FUZZ_N_VOCAB,
                                     &r, &err);
        if (ret == 0)
            check_req(&r);
        else
            PROMISE(err.status >= 400 && err.status < 600 && err.message[0] && err.type);
        ork__srv_req_free(&r);
    }
    return 0;
}
