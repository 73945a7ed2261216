/* fuzz_tool_calls.c -- libFuzzer target for the scanner of tool calls in a model's output
 * (ork__srv_tools_scan, src/server/tools.c), also replayed over tests/fuzz/corpus/tool_calls/
 * by every build. The first input byte picks the call style (tagged or JSON) and
 * parallel_tool_calls; the rest is the model's text. Promises: every range lies inside the
 * text in order, a call's name is a known tool and its arguments start with "{"; and the scan
 * of every prefix (as a stream sees the text grow) agrees with the scan of the whole text:
 * content never ends later, the same calls with the same names in the same places, arguments
 * never longer -- so what a stream has sent is never withdrawn. A broken promise traps. */
#include "server/srv_priv.h"
#include "server/tools.h"

#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define PROMISE(cond)              \
    do {                           \
        if (!(cond))               \
            __builtin_trap();      \
    } while (0)

/* Prefixes checked per input (all of them for short inputs, evenly spread otherwise). */
#define FUZZ_PREFIXES 64

static void check_scan(const struct srv_req *r, const char *s, size_t len,
                       const struct srv_tc_scan *sc)
{
    PROMISE(sc->content_end <= len && sc->n >= 0 && sc->n <= SRV_TC_MAX);
    size_t at = sc->content_end;
    for (int k = 0; k < sc->n; k++) {
        const struct srv_tc *c = &sc->c[k];
        PROMISE(at <= c->name_a && c->name_a < c->name_b && c->name_b < c->args_a &&
                c->args_a < c->args_b && c->args_b <= len && s[c->args_a] == '{');
        bool known = false;
        for (size_t i = 0; i < r->n_tools; i++)
            known = known || (strlen(r->tools[i].name) == c->name_b - c->name_a &&
                              !memcmp(r->tools[i].name, s + c->name_a, c->name_b - c->name_a));
        PROMISE(known);
        PROMISE(!c->done || s[c->args_b - 1] == '}');
        PROMISE(c->done || k == sc->n - 1);
        at = c->args_b;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    static struct ork_server srv;
    srv.chat_fmt = (data[0] & 1) ? ORK_CHAT_LLAMA3 : ORK_CHAT_CHATML;
    struct srv_tool tools[2] = { { .name = "get_weather" }, { .name = "f" } };
    struct srv_req r = { .tools = tools, .n_tools = 2, .parallel_tool_calls = (data[0] & 2) != 0 };
    const char *s = (const char *)data + 1;
    size_t len = size - 1;
    struct srv_tc_scan whole, fin, part;
    ork__srv_tools_scan(&srv, &r, s, len, false, &whole);
    ork__srv_tools_scan(&srv, &r, s, len, true, &fin);
    check_scan(&r, s, len, &whole);
    check_scan(&r, s, len, &fin);
    PROMISE(fin.n == whole.n && fin.content_end >= whole.content_end);
    size_t step = len / FUZZ_PREFIXES + 1;
    for (size_t p = 0; p <= len; p += step) {
        ork__srv_tools_scan(&srv, &r, s, p, false, &part);
        check_scan(&r, s, p, &part);
        PROMISE(part.content_end <= whole.content_end && part.n <= whole.n);
        for (int k = 0; k < part.n; k++) {
            const struct srv_tc *a = &part.c[k], *b = &whole.c[k];
            PROMISE(a->name_a == b->name_a && a->name_b == b->name_b && a->args_a == b->args_a &&
                    a->args_b <= b->args_b && (!a->done || (b->done && a->args_b == b->args_b)));
        }
        if (part.n)
            PROMISE(part.content_end == whole.content_end);
    }
    return 0;
}
