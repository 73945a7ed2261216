/* twin_priv.h -- internals shared by the twin's source files (src/twin); not installed. */
#ifndef ORK_TWIN_PRIV_H
#define ORK_TWIN_PRIV_H

#include <ork/twin.h>

/* The table entry called `name`, or NULL. */
const struct ork_twin_const_info *ork__twin_const_find(const char *name);
/* 0 when `v` is acceptable for `e`, else ORK_ERANGE with a message naming the constant. */
int ork__twin_const_validate(const struct ork_twin_const_info *e, double v);

#endif
