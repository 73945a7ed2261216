/* fuzz_http.c -- libFuzzer target for the server's request parsing (src/server/request.c), also
 * replayed over tests/fuzz/corpus/http/ by every build. Each input is handed, as an HTTP request
 * body, to the parser and validator of every POST endpoint (/completion, /v1/completions,
 * /v1/chat/completions, /tokenize, /detokenize). Accepted requests must satisfy what the parser
 * promises (token ids inside the vocabulary, strings valid UTF-8, bounded stop list, values in
 * range); rejected ones must carry a 4xx/5xx status and a message. A broken promise traps. */
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
    for (int32_t i = 0; i < r->n_prompt_ids; i++)
        PROMISE(r->prompt_ids[i] >= 0 && r->prompt_ids[i] < FUZZ_N_VOCAB);
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
        PROMISE(r->prompt_text ? r->prompt_text[0] != 0 : r->n_prompt_ids > 0);
        break;
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
