/* arena.c -- bump allocator for per-step scratch (see ork-engine/arena.h). */
#include <ork-engine/arena.h>

#include <ork/alloc.h>
#include <ork/error.h>

#include <stdint.h>

#define ARENA_ALIGN 64   /* a cache line: keeps SIMD loads aligned and rows from sharing lines */

struct ork_arena {
    uint8_t *base;
    size_t cap, used;
};

int ork_arena_create(size_t capacity, struct ork_arena **out)
{
    struct ork_arena *a = ork_calloc(1, sizeof(*a));
    if (!a)
        return ORK_ENOMEM;
    a->base = ork_aligned_alloc(ARENA_ALIGN, capacity);
    if (!a->base) {
        ork_free(a);
        return ork_errorf(ORK_ENOMEM, "arena: cannot allocate %zu bytes", capacity);
    }
    a->cap = capacity;
    *out = a;
    return 0;
}

void ork_arena_destroy(struct ork_arena *a)
{
    if (!a)
        return;
    ork_free(a->base);
    ork_free(a);
}

void *ork_arena_alloc(struct ork_arena *a, size_t size)
{
    size_t start = (a->used + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
    if (start > a->cap || size > a->cap - start)
        return NULL;
    a->used = start + size;
    return a->base + start;
}

void ork_arena_reset(struct ork_arena *a)
{
    a->used = 0;
}

size_t ork_arena_used(const struct ork_arena *a)
{
    return a->used;
}
