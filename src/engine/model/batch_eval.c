/* batch_eval.c -- ork_model_eval_multi (engine.h): one new token for each of several sessions in
 * a single forward pass (the server's continuous batching). The layer code is forward.c's: row i
 * of every activation belongs to sessions[i] at its own position and each projection is one
 * matmul over all rows, so a weight matrix streams once per step instead of once per sequence. */
#include "model_priv.h"

int ork_model_eval_multi(struct ork_session *const *ss, const int32_t *tokens, int32_t n,
                         float *logits)
{
    return ork__forward_multi(ss, tokens, n, logits);
}
