/* test_chat.c -- chat template detection and rendering.
 *
 * Expected renderings are written by hand from the families' published formats (see
 * docs/sampling.md): ChatML as in Qwen's template, Llama 3 as in Meta's model card template,
 * Llama 2 as in Meta's reference chat_completion (B_INST/E_INST/B_SYS/E_SYS), Gemma and Phi-3
 * as in Google's and Microsoft's model cards ("Prompt formatting", "Chat Format"). Detection is
 * checked on real templates from the vocabulary fixtures (read with the GGUF reader) and on
 * inline snippets. */
#include "ork_test.h"

#include <ork-engine/chat.h>
#include <ork-engine/gguf.h>
#include <ork/alloc.h>
#include <ork/error.h>

static const struct ork_chat_msg conv[] = {
    { "system", "You are a helpful assistant." },
    { "user", "Hello!" },
    { "assistant", "Hi there. How can I help?" },
    { "user", "What is 2+2?" },
};
#define N_CONV (sizeof(conv) / sizeof(conv[0]))

static void check_render(enum ork_chat_format f, const struct ork_chat_msg *m, size_t n,
                         bool add_assistant, const char *want)
{
    char *got = NULL;
    int r = ork_chat_render(f, m, n, add_assistant, &got);
    CHECK_EQ_INT(r, 0);
    if (r == 0)
        CHECK_STR(got, want);
    ork_free(got);
}

static void test_chatml(void)
{
    check_render(ORK_CHAT_CHATML, conv, N_CONV, true,
                 "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
                 "<|im_start|>user\nHello!<|im_end|>\n"
                 "<|im_start|>assistant\nHi there. How can I help?<|im_end|>\n"
                 "<|im_start|>user\nWhat is 2+2?<|im_end|>\n"
                 "<|im_start|>assistant\n");
    check_render(ORK_CHAT_CHATML, conv + 1, 1, false, "<|im_start|>user\nHello!<|im_end|>\n");
    /* ChatML keeps content verbatim */
    const struct ork_chat_msg padded[] = { { "user", " a\n" } };
    check_render(ORK_CHAT_CHATML, padded, 1, false, "<|im_start|>user\n a\n<|im_end|>\n");
    check_render(ORK_CHAT_CHATML, NULL, 0, true, "<|im_start|>assistant\n");
    check_render(ORK_CHAT_CHATML, NULL, 0, false, "");
}

static void test_llama3(void)
{
    check_render(ORK_CHAT_LLAMA3, conv, N_CONV, true,
                 "<|start_header_id|>system<|end_header_id|>\n\nYou are a helpful assistant.<|eot_id|>"
                 "<|start_header_id|>user<|end_header_id|>\n\nHello!<|eot_id|>"
                 "<|start_header_id|>assistant<|end_header_id|>\n\nHi there. How can I help?<|eot_id|>"
                 "<|start_header_id|>user<|end_header_id|>\n\nWhat is 2+2?<|eot_id|>"
                 "<|start_header_id|>assistant<|end_header_id|>\n\n");
    /* Meta's template trims each message's content */
    const struct ork_chat_msg padded[] = { { "user", "  \n padded \n\t" } };
    check_render(ORK_CHAT_LLAMA3, padded, 1, false,
                 "<|start_header_id|>user<|end_header_id|>\n\npadded<|eot_id|>");
}

static void test_llama2(void)
{
    check_render(ORK_CHAT_LLAMA2, conv, N_CONV, true,
                 "[INST] <<SYS>>\nYou are a helpful assistant.\n<</SYS>>\n\nHello! [/INST]"
                 " Hi there. How can I help? </s>"
                 "<s>[INST] What is 2+2? [/INST]");
    /* the closing [/INST] opens the assistant turn: add_assistant adds nothing */
    check_render(ORK_CHAT_LLAMA2, conv, N_CONV, false,
                 "[INST] <<SYS>>\nYou are a helpful assistant.\n<</SYS>>\n\nHello! [/INST]"
                 " Hi there. How can I help? </s>"
                 "<s>[INST] What is 2+2? [/INST]");
    /* no system message; user and assistant text stripped */
    const struct ork_chat_msg two[] = {
        { "user", "  Hi  " }, { "assistant", "\nHello.\n" }, { "user", "Bye" },
        { "assistant", "Bye!" },
    };
    check_render(ORK_CHAT_LLAMA2, two, 4, false,
                 "[INST] Hi [/INST] Hello. </s><s>[INST] Bye [/INST] Bye! </s>");
}

static void expect_render_error(enum ork_chat_format f, const struct ork_chat_msg *m, size_t n,
                                int code, const char *needle)
{
    char *out = (char *)"sentinel";
    ork_error_clear();
    CHECK_EQ_INT(ork_chat_render(f, m, n, true, &out), code);
    CHECK(out == NULL);
    if (!strstr(ork_error_message(), needle)) {
        fprintf(stderr, "  message '%s' lacks '%s'\n", ork_error_message(), needle);
        CHECK(0);
    }
}

static void test_gemma(void)
{
    /* the system text opens the first user turn; "assistant" is "model"; content trimmed */
    check_render(ORK_CHAT_GEMMA, conv, N_CONV, true,
                 "<start_of_turn>user\nYou are a helpful assistant.\n\nHello!<end_of_turn>\n"
                 "<start_of_turn>model\nHi there. How can I help?<end_of_turn>\n"
                 "<start_of_turn>user\nWhat is 2+2?<end_of_turn>\n"
                 "<start_of_turn>model\n");
    static const struct ork_chat_msg padded[] = { { "user", "  hi \n" } };
    check_render(ORK_CHAT_GEMMA, padded, 1, false, "<start_of_turn>user\nhi<end_of_turn>\n");
    static const struct ork_chat_msg sys_only[] = { { "system", "Be brief." } };
    check_render(ORK_CHAT_GEMMA, sys_only, 1, false,
                 "<start_of_turn>user\nBe brief.<end_of_turn>\n");
    check_render(ORK_CHAT_GEMMA, NULL, 0, true, "<start_of_turn>model\n");
}

static void test_phi3(void)
{
    check_render(ORK_CHAT_PHI3, conv, N_CONV, true,
                 "<|system|>\nYou are a helpful assistant.<|end|>\n"
                 "<|user|>\nHello!<|end|>\n"
                 "<|assistant|>\nHi there. How can I help?<|end|>\n"
                 "<|user|>\nWhat is 2+2?<|end|>\n"
                 "<|assistant|>\n");
    check_render(ORK_CHAT_PHI3, NULL, 0, false, "");
}

static void test_end_markers(void)
{
    CHECK_STR(ork_chat_end_marker(ORK_CHAT_CHATML), "<|im_end|>");
    CHECK_STR(ork_chat_end_marker(ORK_CHAT_LLAMA3), "<|eot_id|>");
    CHECK_STR(ork_chat_end_marker(ORK_CHAT_GEMMA), "<end_of_turn>");
    CHECK_STR(ork_chat_end_marker(ORK_CHAT_PHI3), "<|end|>");
    CHECK(ork_chat_end_marker((enum ork_chat_format)42) == NULL);
    size_t n = 0;
    const char *const *st = ork_chat_stop_strings(ORK_CHAT_GEMMA, &n);
    CHECK(st && n == 2);
    if (st && n == 2) {
        CHECK_STR(st[0], "<end_of_turn>");
        CHECK_STR(st[1], "<start_of_turn>");
    }
    st = ork_chat_stop_strings(ORK_CHAT_PHI3, &n);
    CHECK(st && n == 2);
    CHECK(ork_chat_stop_strings((enum ork_chat_format)42, &n) == NULL && n == 0);
}

static void test_invalid_roles(void)
{
    const struct ork_chat_msg bad[] = { { "user", "x" }, { "function", "y" } };
    for (int f = ORK_CHAT_CHATML; f <= ORK_CHAT_LLAMA2; f++)
        expect_render_error((enum ork_chat_format)f, bad, 2, ORK_EINVAL,
                            "message 1: unknown role 'function'");
    const struct ork_chat_msg upper[] = { { "User", "x" } };
    expect_render_error(ORK_CHAT_CHATML, upper, 1, ORK_EINVAL, "unknown role 'User'");
    const struct ork_chat_msg null_role[] = { { NULL, "x" } };
    expect_render_error(ORK_CHAT_LLAMA3, null_role, 1, ORK_EINVAL, "message 0: role is NULL");
    const struct ork_chat_msg null_content[] = { { "user", NULL } };
    expect_render_error(ORK_CHAT_CHATML, null_content, 1, ORK_EINVAL, "content is NULL");
    expect_render_error((enum ork_chat_format)7, conv, N_CONV, ORK_EINVAL, "unknown chat format");
    CHECK_EQ_INT(ork_chat_render(ORK_CHAT_CHATML, conv, N_CONV, true, NULL), ORK_EINVAL);
}

static void test_llama2_turn_order(void)
{
    const struct ork_chat_msg two_users[] = { { "user", "a" }, { "user", "b" } };
    expect_render_error(ORK_CHAT_LLAMA2, two_users, 2, ORK_EINVAL, "message 1");
    const struct ork_chat_msg late_system[] = { { "user", "a" }, { "assistant", "b" },
                                                { "system", "c" } };
    expect_render_error(ORK_CHAT_LLAMA2, late_system, 3, ORK_EINVAL, "message 2");
    const struct ork_chat_msg starts_assistant[] = { { "assistant", "a" } };
    expect_render_error(ORK_CHAT_LLAMA2, starts_assistant, 1, ORK_EINVAL, "message 0");
    const struct ork_chat_msg only_system[] = { { "system", "s" } };
    expect_render_error(ORK_CHAT_LLAMA2, only_system, 1, ORK_EINVAL, "needs a user message");
}

static void test_detect_snippets(void)
{
    enum ork_chat_format f = (enum ork_chat_format)-1;
    /* Minimal templates in each family's style, written for this test. */
    const char *chatml = "{% for m in messages %}{{ '<|im_start|>' + m.role + '\\n' + m.content + "
                         "'<|im_end|>\\n' }}{% endfor %}";
    const char *llama3 = "{% for m in messages %}{{ '<|start_header_id|>' + m['role'] + "
                         "'<|end_header_id|>\\n\\n' + m['content'] | trim + '<|eot_id|>' }}"
                         "{% endfor %}";
    const char *llama2 = "{% for m in messages %}{% if m['role'] == 'user' %}{{ bos_token + "
                         "'[INST] ' + m['content'] | trim + ' [/INST]' }}{% else %}{{ ' ' + "
                         "m['content'] | trim + ' ' + eos_token }}{% endif %}{% endfor %}";
    CHECK_EQ_INT(ork_chat_detect(chatml, &f), 0);
    CHECK_EQ_INT(f, ORK_CHAT_CHATML);
    CHECK_EQ_INT(ork_chat_detect(llama3, &f), 0);
    CHECK_EQ_INT(f, ORK_CHAT_LLAMA3);
    CHECK_EQ_INT(ork_chat_detect(llama2, &f), 0);
    CHECK_EQ_INT(f, ORK_CHAT_LLAMA2);
    const char *gemma = "{{ bos_token }}{% for m in messages %}{% set role = 'model' if "
                        "m['role'] == 'assistant' else m['role'] %}{{ '<start_of_turn>' + role + "
                        "'\n' + m['content'] | trim + '<end_of_turn>\n' }}{% endfor %}";
    const char *phi3 = "{% for m in messages %}{{ '<|' + m['role'] + '|>\n' + m['content'] + "
                       "'<|end|>\n' }}{% endfor %}{% if add_generation_prompt %}"
                       "{{ '<|assistant|>\n' }}{% endif %}";
    CHECK_EQ_INT(ork_chat_detect(gemma, &f), 0);
    CHECK_EQ_INT(f, ORK_CHAT_GEMMA);
    CHECK_EQ_INT(ork_chat_detect(phi3, &f), 0);
    CHECK_EQ_INT(f, ORK_CHAT_PHI3);

    ork_error_clear();
    CHECK_EQ_INT(ork_chat_detect("{{ messages | join('\\n') }}", &f), ORK_EUNSUPPORTED);
    CHECK(strstr(ork_error_message(), "unrecognised") != NULL);
    CHECK_EQ_INT(ork_chat_detect(NULL, &f), ORK_EUNSUPPORTED);
    CHECK(strstr(ork_error_message(), "no chat template") != NULL);
}

static void test_format_names(void)
{
    for (int i = ORK_CHAT_CHATML; i < ORK_CHAT_N_FORMATS; i++) {
        enum ork_chat_format f;
        const char *name = ork_chat_format_name((enum ork_chat_format)i);
        CHECK_EQ_INT(ork_chat_format_from_name(name, &f), 0);
        CHECK_EQ_INT(f, i);
    }
    CHECK_STR(ork_chat_format_name(ORK_CHAT_LLAMA3), "llama3");
    enum ork_chat_format f;
    ork_error_clear();
    CHECK_EQ_INT(ork_chat_format_from_name("vicuna", &f), ORK_EINVAL);
    CHECK(strstr(ork_error_message(), "'vicuna'") != NULL);
    CHECK_STR(ork_chat_format_name((enum ork_chat_format)42), "unknown");
}

/* The template text of a vocabulary fixture, NUL-terminated (ork_malloc'd), or NULL. */
static char *fixture_template(const char *rel)
{
    const char *path = ork_test_fixture_opt(rel);
    if (!path)
        return NULL;
    struct ork_gguf *g;
    if (ork_gguf_open(path, &g) != 0) {
        fprintf(stderr, "  cannot open %s: %s\n", path, ork_error_message());
        CHECK(0);
        return NULL;
    }
    struct ork_gguf_str s;
    char *text = NULL;
    if (ork_gguf_get_str(g, "tokenizer.chat_template", &s) == 0)
        text = ork_strndup(s.ptr, (size_t)s.len);
    else
        CHECK(0);
    ork_gguf_close(g);
    return text;
}

static void test_detect_fixture_templates(void)
{
    char *qwen = fixture_template("vocab/qwen3-vocab.gguf");
    char *phi3 = fixture_template("vocab/ggml-vocab-phi-3.gguf");
    if (!qwen && !phi3)
        SKIP("vocabulary fixtures not found (needs ../shared/fixtures)");
    enum ork_chat_format f;
    if (qwen) {
        CHECK_EQ_INT(ork_chat_detect(qwen, &f), 0);
        CHECK_EQ_INT(f, ORK_CHAT_CHATML);
        /* the pieces we emit appear literally in the model's own template */
        CHECK(strstr(qwen, "'<|im_start|>assistant\\n'") != NULL);
        CHECK(strstr(qwen, "'<|im_end|>\\n'") != NULL);
    }
    if (phi3) {   /* Phi-3-mini's own template: the pieces render_phi3 writes */
        CHECK_EQ_INT(ork_chat_detect(phi3, &f), 0);
        CHECK_EQ_INT(f, ORK_CHAT_PHI3);
        CHECK(strstr(phi3, "'<|user|>' + '\n'") != NULL);
        CHECK(strstr(phi3, "'<|end|>' + '\n' + '<|assistant|>' + '\n'") != NULL);
    }
    ork_free(qwen);
    ork_free(phi3);
}

/* Tool calls: the tool list in the system turn, an assistant's calls and a run of tool results
 * (Qwen2.5's ChatML convention; Llama 3.1's JSON calls and ipython turns). */
static void test_tools(void)
{
    const char *tools[] = { "{\"type\":\"function\",\"function\":{\"name\":\"f\"}}" };
    char *sys = NULL;
    CHECK_EQ_INT(ork_chat_tools_system(ORK_CHAT_CHATML, "S", tools, 1, &sys), 0);
    CHECK(sys && !strncmp(sys, "S\n\n# Tools\n", 11));
    CHECK(sys && strstr(sys, "<tools>\n{\"type\":\"function\",\"function\":{\"name\":\"f\"}}\n</tools>"));
    ork_free(sys);
    CHECK_EQ_INT(ork_chat_tools_system(ORK_CHAT_LLAMA3, NULL, tools, 1, &sys), 0);
    CHECK(sys && !strncmp(sys, "Given the following functions", 29) && strstr(sys, "\"parameters\""));
    ork_free(sys);

    const struct ork_chat_msg m[] = {
        { "user", "q" }, { "assistant", "" }, { "tool", "r1" }, { "tool", "r2" },
    };
    const struct ork_chat_tool_call call[] = { { "f", "{\"a\":1}" }, { "g\"", "{}" } };
    const struct ork_chat_msg_calls calls[] = { { NULL, 0 }, { call, 2 }, { NULL, 0 }, { NULL, 0 } };
    char *got = NULL;
    CHECK_EQ_INT(ork_chat_render_calls(ORK_CHAT_CHATML, m, calls, 4, true, &got), 0);
    CHECK_STR(got, "<|im_start|>user\nq<|im_end|>\n"
                   "<|im_start|>assistant\n<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\":1}}\n"
                   "</tool_call>\n<tool_call>\n{\"name\": \"g\\\"\", \"arguments\": {}}\n</tool_call>"
                   "<|im_end|>\n"
                   "<|im_start|>user\n<tool_response>\nr1\n</tool_response>\n<tool_response>\nr2\n"
                   "</tool_response><|im_end|>\n<|im_start|>assistant\n");
    ork_free(got);
    got = NULL;
    CHECK_EQ_INT(ork_chat_render_calls(ORK_CHAT_LLAMA3, m, calls, 3, false, &got), 0);
    CHECK(got && strstr(got, "assistant<|end_header_id|>\n\n{\"name\": \"f\", \"parameters\": {\"a\":1}}"));
    CHECK(got && strstr(got, "<|start_header_id|>ipython<|end_header_id|>\n\nr1<|eot_id|>"));
    ork_free(got);
    /* calls only on assistant messages */
    const struct ork_chat_msg_calls wrong[] = { { call, 1 } };
    got = NULL;
    CHECK_EQ_INT(ork_chat_render_calls(ORK_CHAT_CHATML, m, wrong, 1, true, &got), ORK_EINVAL);
    CHECK(got == NULL);
}

int main(void)
{
    RUN(test_chatml);
    RUN(test_llama3);
    RUN(test_llama2);
    RUN(test_gemma);
    RUN(test_phi3);
    RUN(test_end_markers);
    RUN(test_invalid_roles);
    RUN(test_llama2_turn_order);
    RUN(test_tools);
    RUN(test_detect_snippets);
    RUN(test_format_names);
    RUN(test_detect_fixture_templates);   /* last: may skip the whole file when fixtures are absent */
    return ork_test_done();
}
