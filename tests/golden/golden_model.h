/* golden_model.h -- loading a fixture model for the golden tests: the file under
 * fixtures/models/ (the test skips when it is absent), without its tokenizer (the goldens are
 * token ids). Not a session or decode helper: each test sets up its own session. */
#ifndef ORK_GOLDEN_MODEL_H
#define ORK_GOLDEN_MODEL_H

#include <stdbool.h>
#include <stdio.h>

#include <ork/error.h>
#include <ork-engine/engine.h>

#include "ork_test.h"

/* Load fixtures/models/<file> into *m (no_repack: keep the GGUF row layout, else the default
 * interleaving for the CPU kernels); on failure print the reason and return the error. */
static inline int golden_load_model_layout(const char *file, bool no_repack, struct ork_model **m)
{
    char rel[256];
    snprintf(rel, sizeof rel, "models/%s", file);
    const char *path = ork_test_fixture(rel);
    struct ork_model_params mp;
    ork_model_params_default(&mp);
    mp.no_tokenizer = true;
    mp.no_repack = no_repack;
    int ret = ork_model_load(path, &mp, m);
    if (ret < 0)
        fprintf(stderr, "load %s: %s\n", file, ork_error_describe(ret));
    return ret;
}

static inline int golden_load_model(const char *file, struct ork_model **m)
{
    return golden_load_model_layout(file, false, m);
}

#endif
