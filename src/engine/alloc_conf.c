/*
 * alloc_conf.c — --alloc-conf: a PYTORCH_ALLOC_CONF (PYTORCH_CUDA_ALLOC_CONF)
 * string, read as PyTorch reads it, into vc_options.alloc_conf, for the
 * allocator model (src/engine/alloc.c; docs/context.md "PYTORCH_ALLOC_CONF").
 *
 * The keys and their checks follow c10/core/AllocatorConfig.cpp at
 * pytorch/pytorch@0ac716637f3258efcaf7fdfb851bdd520c9c1441
 * (AcceleratorAllocatorConfig::parseArgs: "key:value" pairs joined by ","):
 *  - expandable_segments:True|False (parseExpandableSegments, toBool);
 *  - max_split_size_mb:N, N >= kLargeBuffer / 1 MiB = 20 (parseMaxSplitSize:
 *    "CachingAllocator option max_split_size_mb too small, must be >= 20");
 *  - garbage_collection_threshold:F, 0 < F < 1 (parseGarbageCollectionThreshold).
 *    It acts only with a per-process memory fraction
 *    (CUDACachingAllocator.cpp get_free_block / malloc call
 *    garbage_collect_cached_blocks only when set_fraction): the model keeps
 *    it and nothing changes, as in PyTorch without
 *    torch.cuda.set_per_process_memory_fraction.
 * Refused, not modelled: roundup_power2_divisions (round_size rounds every
 * block up to a power-of-2 division, so peak_allocated changes with it,
 * and the replay's sizes do not follow it), max_non_split_rounding_mb,
 * per_process_memory_fraction, backend (cudaMallocAsync is another
 * allocator). Every other key is unknown (exit 2 naming it), as PyTorch's
 * CUDAAllocatorConfig::parseArgs refuses a key it does not know
 * ("Unrecognized key '...' in CUDA allocator config.").
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"
#include "util.h"

static vc_status bad(vc_error *err, const char *key, const char *fmt, const char *v)
{
    char k[64], val[64];
    vc_escape_text(k, sizeof k, key);
    vc_escape_text(val, sizeof val, v ? v : "");
    return vc_set_error(err, VC_ERR_USAGE, NULL, fmt, k, val);
}

vc_status vc_alloc_conf_parse(const char *s, vc_options *o, vc_error *err)
{
    vc_error_clear(err);
    const vc_options *given = o; /* the legacy struct's size (vramcalc.h): any a release had holds alloc_conf */
    vc_options full_o;
    vc_status in_st = vc__options_in(&given, &full_o, err);
    if (in_st) return in_st;
    memset(&o->alloc_conf, 0, sizeof o->alloc_conf);
    size_t n = strlen(s);
    char *buf = malloc(n + 1);
    if (!buf) return vc_set_error(err, VC_ERR_NOMEM, NULL, "out of memory");
    memcpy(buf, s, n + 1);
    vc_status st = VC_OK;
    char *save = NULL;
    for (char *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        while (*item == ' ') item++;
        char *colon = strchr(item, ':');
        char *v = colon ? colon + 1 : NULL;
        if (colon) *colon = '\0';
        char *e = item + strlen(item);
        while (e > item && e[-1] == ' ') *--e = '\0';
        if (v) {
            while (*v == ' ') v++;
            for (e = v + strlen(v); e > v && e[-1] == ' ';) *--e = '\0';
        }
        if (!strcmp(item, "expandable_segments")) {
            if (!v || !*v) goto novalue;
            if (!strcmp(v, "True") || !strcmp(v, "true")) o->alloc_conf.expandable_segments = 1;
            else if (!strcmp(v, "False") || !strcmp(v, "false")) o->alloc_conf.expandable_segments = 0;
            else { st = bad(err, item, "%s: expected True or False, got '%s'", v); break; }
        } else if (!strcmp(item, "max_split_size_mb")) {
            if (!v || !*v) goto novalue;
            char *end;
            errno = 0;
            long long mb = strtoll(v, &end, 10);
            if (errno || *end || !(*v >= '0' && *v <= '9') || mb < 20) {
                st = bad(err, item, "%s: expected a whole number of MiB, at least 20 (kLargeBuffer), got '%s'", v);
                break;
            }
            o->alloc_conf.max_split_size = mb > (INT64_MAX >> 20) ? INT64_MAX : (int64_t)mb << 20;
        } else if (!strcmp(item, "garbage_collection_threshold")) {
            if (!v || !*v) goto novalue;
            char *end;
            errno = 0;
            double f = strtod(v, &end);
            if (errno || *end || !(f > 0 && f < 1)) {
                st = bad(err, item, "%s: expected a number between 0 and 1 (exclusive), got '%s'", v);
                break;
            }
            o->alloc_conf.gc_threshold = f;
        } else if (!strcmp(item, "roundup_power2_divisions") || !strcmp(item, "max_non_split_rounding_mb") ||
                   !strcmp(item, "per_process_memory_fraction") || !strcmp(item, "backend")) {
            st = bad(err, item, "%s: a PyTorch allocator option vramcalc does not model%s (docs/context.md)",
                     !strcmp(item, "roundup_power2_divisions") ? ": it rounds every block, peak_allocated too" : "");
            break;
        } else {
            st = bad(err, item, "unknown key '%s'%s (expandable_segments, max_split_size_mb, garbage_collection_threshold)",
                     "");
            break;
        }
        continue;
    novalue:
        st = bad(err, item, "%s: expected key:value, got no value%s", "");
        break;
    }
    free(buf);
    if (st) memset(&o->alloc_conf, 0, sizeof o->alloc_conf);
    return st;
}
