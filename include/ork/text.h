/* ork/text.h -- small text helpers every layer may use (src/base/text.c). */
#ifndef ORK_TEXT_H
#define ORK_TEXT_H

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Write s to f as the body of a JSON string (no quotes around it): '"' and '\' escaped with a
 * backslash, control characters below 0x20 as \u00XX, every other byte as it is (UTF-8 passes
 * through). */
void ork_json_put_str(FILE *f, const char *s);
/* The same between double quotes: a whole JSON string. */
void ork_json_put_quoted(FILE *f, const char *s);

#ifdef __cplusplus
}
#endif
#endif
