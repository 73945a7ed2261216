/* sim_load.c -- the vendor debugfs `load` file format (spec §12.1): formatting, parsing, and
 * the per-core busy-time window it reports. Text only; the busy intervals come from the walker.
 *
 * Format: "NPU load: " then, per core, " Core%d: " and the load printed with "%2.d%%,", then
 * "\n". "%2.d" has precision 0, so a load of 0 prints no digits: an idle 3-core NPU reads
 * "NPU load:  Core0:   %, Core1:   %, Core2:   %,\n" (spec §12.1, test vector §15.8). */
#include "sim.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ork/error.h>

#define LOAD_PREFIX "NPU load: "

int ork__sim_load_format(char *buf, int cap, const int *pct, int n)
{
    int len = snprintf(buf, (size_t)cap, "%s", LOAD_PREFIX);
    for (int i = 0; i < n && len >= 0 && len < cap; i++) {
        int v = pct[i] < 0 ? 0 : pct[i] > 100 ? 100 : pct[i];
        if (n > 1)
            len += snprintf(buf + len, (size_t)(cap - len), " Core%d: %2.d%%,", i, v);
        else
            len += snprintf(buf + len, (size_t)(cap - len), "%2.d%%", v);
    }
    if (len >= 0 && len < cap)
        len += snprintf(buf + len, (size_t)(cap - len), "\n");
    if (len < 0 || len >= cap)
        return ork_errorf(ORK_ENOSPC, "load text needs more than %d bytes", cap);
    return len;
}

/* Reads "<spaces>[digits]%" at *p; digits optional (empty = 0, the "%2.d" quirk). */
static int load_parse_pct(const char **p, int *out)
{
    const char *s = *p;
    while (*s == ' ')
        s++;
    int v = 0, nd = 0;
    while (isdigit((unsigned char)*s) && nd < 4) {
        v = v * 10 + (*s++ - '0');
        nd++;
    }
    if (*s != '%')
        return -1;
    *out = v > 100 ? 100 : v;
    *p = s + 1;
    return 0;
}

int ork__sim_load_parse(const char *text, int *pct, int max)
{
    if (!text || strncmp(text, "NPU load:", 9) != 0)
        return ork_errorf(ORK_EFORMAT, "load: text does not start with \"NPU load:\"");
    const char *p = text + 9;
    int n = 0;
    const char *core = strstr(p, "Core");
    if (!core) {                              /* single-core form: "NPU load: %2.d%%" */
        if (max < 1 || load_parse_pct(&p, &pct[0]) < 0)
            return ork_errorf(ORK_EFORMAT, "load: expected a percentage after \"NPU load:\"");
        return 1;
    }
    while ((core = strstr(p, "Core")) != NULL && n < max) {
        int idx = -1;
        char *end;
        idx = (int)strtol(core + 4, &end, 10);
        if (end == core + 4 || *end != ':' || idx != n)
            return ork_errorf(ORK_EFORMAT, "load: malformed core label at \"%.12s\"", core);
        p = end + 1;
        if (load_parse_pct(&p, &pct[n]) < 0)
            return ork_errorf(ORK_EFORMAT, "load: Core%d has no \"%%\" value", idx);
        n++;
        if (*p == ',')
            p++;
    }
    return n;
}

int ork_sim_load_parse(const char *text, int *pct, int max)
{
    return ork__sim_load_parse(text, pct, max);
}

int ork_sim_load_format(char *buf, int cap, const int *pct, int n)
{
    return ork__sim_load_format(buf, cap, pct, n);
}
