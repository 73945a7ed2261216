/* text.c -- small text helpers (ork/text.h). */
#include <ork/text.h>

void ork_json_put_str(FILE *f, const char *s)
{
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            fprintf(f, "\\%c", ch);
        else if (ch < 0x20)
            fprintf(f, "\\u%04x", ch);
        else
            fputc(ch, f);
    }
}

void ork_json_put_quoted(FILE *f, const char *s)
{
    fputc('"', f);
    ork_json_put_str(f, s);
    fputc('"', f);
}
