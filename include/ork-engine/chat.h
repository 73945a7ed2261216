/* ork-engine/chat.h -- chat templates: ChatML (Qwen, Qwen3-MoE), Llama 3, Llama 2, Gemma and
 * Phi-3, chosen by
 * recognising the model's tokenizer.chat_template metadata (no Jinja interpreter: known
 * template families are detected by their markers). */
#ifndef ORK_ENGINE_CHAT_H
#define ORK_ENGINE_CHAT_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

enum ork_chat_format {
    ORK_CHAT_CHATML = 0,   /* <|im_start|>role\n...<|im_end|>\n */
    ORK_CHAT_LLAMA3 = 1,   /* <|start_header_id|>role<|end_header_id|>\n\n...<|eot_id|> */
    ORK_CHAT_LLAMA2 = 2,   /* [INST] <<SYS>>\n...\n<</SYS>>\n\n... [/INST] */
};
/* Formats added after the three above, as values of the same type outside the enumerator
 * list: a switch over enum ork_chat_format written for the first three still compiles;
 * ork_chat_end_marker and ork_chat_stop_strings cover every format. */
#define ORK_CHAT_GEMMA ((enum ork_chat_format)3)   /* <start_of_turn>user\n...<end_of_turn>\n */
#define ORK_CHAT_PHI3 ((enum ork_chat_format)4)    /* <|user|>\n...<|end|>\n<|assistant|>\n */
#define ORK_CHAT_N_FORMATS 5

/* A call an assistant message made: the function's name and its arguments as JSON text (an
 * object, written into the prompt as it is). */
struct ork_chat_tool_call {
    const char *name;
    const char *arguments;
};

struct ork_chat_msg {
    const char *role;      /* "system", "user", "assistant", "tool" (a tool's result) */
    const char *content;
};

/* The tool calls one assistant message made (n of them; calls NULL when n is 0). */
struct ork_chat_msg_calls {
    const struct ork_chat_tool_call *calls;
    size_t n;
};

/* Detect from the template text. NULL or unrecognised -> ORK_EUNSUPPORTED (message says so);
 * callers usually fall back to ChatML. */
int ork_chat_detect(const char *template_text, enum ork_chat_format *out);
/* "chatml", "llama3", "llama2", "gemma", "phi3" */
int ork_chat_format_from_name(const char *name, enum ork_chat_format *out);
const char *ork_chat_format_name(enum ork_chat_format f);
/* The text that ends an assistant turn in format f ("<|im_end|>", "<end_of_turn>", ...). */
const char *ork_chat_end_marker(enum ork_chat_format f);
/* Stop strings for f (the end marker, then the text that would open the next turn), *n of them:
 * for models whose tokenizer does not make them end-of-generation tokens. */
const char *const *ork_chat_stop_strings(enum ork_chat_format f, size_t *n);

/* Render messages; add_assistant: open an assistant turn at the end. *out is ork_malloc'd
 * NUL-terminated text (free with ork_free). The text contains special-token markers to be
 * tokenized with parse_special = true; BOS is NOT included (the tokenizer adds it). */
int ork_chat_render(enum ork_chat_format f, const struct ork_chat_msg *msgs, size_t n,
                    bool add_assistant, char **out);
/* The same with the tool calls of each message: calls[i] belongs to msgs[i] (only assistant
 * messages may have calls); calls NULL is ork_chat_render. */
int ork_chat_render_calls(enum ork_chat_format f, const struct ork_chat_msg *msgs,
                          const struct ork_chat_msg_calls *calls, size_t n, bool add_assistant,
                          char **out);

/* Tool calls. The tool list goes into the system turn, the model calls a tool by writing an
 * envelope, and results come back as role "tool" messages:
 *   ChatML (Qwen2.5 / Qwen3)  tools in "<tools>\n{tool}\n...</tools>"; a call is
 *                             "<tool_call>\n{\"name\": ..., \"arguments\": {...}}\n</tool_call>";
 *                             results are a user turn of "<tool_response>\n...\n</tool_response>".
 *   Llama 3 (3.1 JSON calls)  tools as JSON in the system turn; a call is the JSON object
 *                             {"name": ..., "parameters": {...}}; results are "ipython" turns.
 *   Others (generic)          the ChatML convention written in the format's own turns.
 * tools[i] is one OpenAI tool definition as JSON text ({"type": "function", "function": {...}}).
 * *out (ork_malloc'd) is system (or "" when NULL) followed by the tool instructions. */
int ork_chat_tools_system(enum ork_chat_format f, const char *system, const char *const *tools,
                          size_t n_tools, char **out);
enum ork_chat_call_style {
    ORK_CHAT_CALL_TAGGED = 0,   /* <tool_call>\n{"name": ..., "arguments": ...}\n</tool_call> */
    ORK_CHAT_CALL_JSON = 1,     /* {"name": ..., "parameters": ...} (Llama 3.1) */
};
/* How format f's model writes a tool call. */
enum ork_chat_call_style ork_chat_call_style(enum ork_chat_format f);
/* The text that opens and closes one tagged call ("<tool_call>\n", "\n</tool_call>"). */
#define ORK_CHAT_TOOL_CALL_OPEN "<tool_call>\n"
#define ORK_CHAT_TOOL_CALL_CLOSE "\n</tool_call>"

#ifdef __cplusplus
}
#endif
#endif
