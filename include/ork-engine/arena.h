/* ork-engine/arena.h -- bump allocator for per-step scratch: sized once at load, reset in O(1)
 * per step, so the decode loop never calls malloc. Allocations are 64-byte aligned. */
#ifndef ORK_ENGINE_ARENA_H
#define ORK_ENGINE_ARENA_H

#include <stddef.h>

struct ork_arena;

int ork_arena_create(size_t capacity, struct ork_arena **out);
void ork_arena_destroy(struct ork_arena *a);
/* NULL when the arena is exhausted (a sizing bug: callers report ORK_ENOMEM). */
void *ork_arena_alloc(struct ork_arena *a, size_t size);
void ork_arena_reset(struct ork_arena *a);
size_t ork_arena_used(const struct ork_arena *a);

#endif
