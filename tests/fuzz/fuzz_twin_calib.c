/* fuzz_twin_calib.c -- libFuzzer target for the twin's calibration-file parser (also replayed
 * over the committed corpus tests/fuzz/corpus/twin_calib/ by every build). Parses the input
 * into a default table; an accepted file must give a table the range check accepts and must
 * survive format -> parse unchanged (bit for bit); a rejected one must say why and leave the
 * table as it was. */
#include <ork/alloc.h>
#include <ork/error.h>
#include <ork/twin.h>

#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct ork_twin_consts c, before;
    ork_twin_consts_default(&c);
    before = c;
    ork_error_clear();
    int ret = ork_twin_calib_parse((const char *)data, size, &c);
    if (ret < 0) {
        if (ret != ORK_ENOMEM && ork_error_message()[0] == '\0')
            __builtin_trap();       /* every rejection must say why */
        if (memcmp(&c, &before, sizeof c) != 0)
            __builtin_trap();       /* and must not touch the table */
        return 0;
    }
    if (ork_twin_consts_check(&c) != 0)
        __builtin_trap();
    char *text = NULL;
    if (ork_twin_calib_format(&c, "fuzz", &text) != 0)
        return 0;                   /* ENOMEM only */
    struct ork_twin_consts again;
    memset(&again, 0, sizeof again);
    if (ork_twin_calib_parse(text, strlen(text), &again) != 0 ||
        memcmp(&again, &c, sizeof c) != 0)
        __builtin_trap();           /* the round trip is exact */
    ork_free(text);
    return 0;
}
