/* ork-engine/chat.h -- chat templates: ChatML (Qwen), Llama 3 and Llama 2, chosen by
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

struct ork_chat_msg {
    const char *role;      /* "system", "user", "assistant" */
    const char *content;
};

/* Detect from the template text. NULL or unrecognised -> ORK_EUNSUPPORTED (message says so);
 * callers usually fall back to ChatML. */
int ork_chat_detect(const char *template_text, enum ork_chat_format *out);
int ork_chat_format_from_name(const char *name, enum ork_chat_format *out); /* "chatml", "llama3", "llama2" */
const char *ork_chat_format_name(enum ork_chat_format f);

/* Render messages; add_assistant: open an assistant turn at the end. *out is ork_malloc'd
 * NUL-terminated text (free with ork_free). The text contains special-token markers to be
 * tokenized with parse_special = true; BOS is NOT included (the tokenizer adds it). */
int ork_chat_render(enum ork_chat_format f, const struct ork_chat_msg *msgs, size_t n,
                    bool add_assistant, char **out);

#ifdef __cplusplus
}
#endif
#endif
