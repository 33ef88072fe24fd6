/*
 * shape.c — per-sample shapes.
 */
#include <stdio.h>
#include <string.h>

#include "layer.h"

int64_t vc_shape_numel(const vc_shape *s)
{
    int64_t n = 1;
    for (int i = 0; i < s->nd; i++)
        if (s->d[i] < 0 || __builtin_mul_overflow(n, s->d[i], &n)) return -1;
    return n;
}

vc_shape vc_shape_make(int nd, const int64_t *d)
{
    vc_shape s;
    memset(&s, 0, sizeof s);
    s.nd = nd < 0 ? 0 : nd > VC_MAX_DIMS ? VC_MAX_DIMS : nd;
    for (int i = 0; i < s.nd; i++) s.d[i] = d[i];
    return s;
}

bool vc_shape_eq(const vc_shape *a, const vc_shape *b)
{
    if (a->nd != b->nd) return false;
    for (int i = 0; i < a->nd; i++)
        if (a->d[i] != b->d[i]) return false;
    return true;
}

void vc_shape_str(const vc_shape *s, char *buf, size_t n)
{
    size_t used = 0;
    if (!n) return;
    buf[0] = '\0';
    used += (size_t)snprintf(buf, n, "[");
    for (int i = 0; i < s->nd && used < n; i++)
        used += (size_t)snprintf(buf + used, n - used, "%s%lld", i ? ", " : "", (long long)s->d[i]);
    if (used < n) snprintf(buf + used, n - used, "]");
}

int vc_dim_index(int64_t dim, int nd)
{
    int64_t full = nd + 1; /* with the batch dim */
    if (dim < -full || dim >= full) return -1;
    if (dim < 0) dim += full;
    return dim == 0 ? -2 : (int)(dim - 1);
}
