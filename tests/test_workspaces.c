/*
 * test_workspaces.c — cuDNN's convolution workspaces (src/engine/cudnn.c,
 * --bound, --cudnn-table) and --alloc-conf's allocator settings
 * (src/engine/alloc_conf.c, src/engine/alloc.c), issue 27 items 2 and 4.
 *
 * Expected values are worked out by hand in the comments:
 *  - a convolution's workspaces follow Conv_v8.cpp's run_conv_plan
 *    (pytorch@06ca69ca): one transient per call, allocated after the output
 *    and freed when the call returns; the bound is FWD_FACTOR (3) and
 *    BWD_FACTOR (16) times the larger of the convolution's input and output;
 *  - the allocator streams follow c10/cuda/CUDACachingAllocator.cpp at
 *    pytorch@eb42ad6e: get_free_block's max_split_size checks, should_split,
 *    and expandable segments' 20 MiB pages in the large pool.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "engine.h"
#include "vramcalc/vramcalc.h"
#include "cli_spelt.h"

#define MiB (INT64_C(1) << 20)

/* One Conv2d(3, 4, 3, padding=1) on a [3, 8, 8] input: per sample the input
 * is 3 x 64 x 4 = 768 B, the output 4 x 64 x 4 = 1,024 B; weight 432 B and
 * bias 16 B, each a 512 B block. */
static const char ONE_CONV[] =
    "{\"name\": \"one_conv\", \"input\": {\"shape\": [3, 8, 8]}, \"layers\": [{\"type\": \"Conv2d\", "
    "\"in_channels\": 3, \"out_channels\": 4, \"kernel_size\": 3, \"padding\": 1}]}";

static vc_model *load(const char *json)
{
    vc_model *m = NULL;
    vc_error err;
    assert_int_equal(vc_model_load_string(json, strlen(json), "one_conv.json", &m, &err), VC_OK);
    return m;
}

static char *write_tmp(const char *text)
{
    static char path[64];
    snprintf(path, sizeof path, "/tmp/vc_ws_XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    return path;
}

/* Inference at batch 1: low end, the figures without workspace: weight and
 * bias 1,024 B, the input 1,024 B (768 rounded to 512 B blocks), the output
 * 1,024 B: peak 3,072 B, one 2 MiB small-pool segment. High end: the forward
 * call's workspace at its bound, 3 x max(768, 1,024) = 3,072 B, live with the
 * output: peak 6,144 B, still in the 2 MiB segment. */
static void bound_interval(void **state)
{
    (void)state;
    vc_model *m = load(ONE_CONV);
    vc_options o;
    vc_options_init(&o);
    o.mode = VC_MODE_INFER;
    vc_result r;
    vc_error err;
    assert_int_equal(vc_estimate(m, &o, &r, &err), VC_OK);
    assert_int_equal(r.memory.cudnn.source, VC_CUDNN_BOUND);
    assert_int_equal(r.memory.peak_allocated, 3072);
    assert_int_equal(r.memory.cudnn.peak_allocated_low, 3072);
    assert_int_equal(r.memory.cudnn.peak_allocated_high, 6144);
    assert_int_equal(r.memory.cudnn.reserved_low, 2 * MiB);
    assert_int_equal(r.memory.cudnn.reserved_high, 2 * MiB);
    assert_int_equal(r.memory.cudnn.total_high - r.memory.cudnn.reserved_high, r.memory.cuda_context);
    vc_result_free(&r);
    /* --bound high: the figures are the high end, the interval the same */
    o.bound = VC_BOUND_HIGH;
    assert_int_equal(vc_estimate(m, &o, &r, &err), VC_OK);
    assert_int_equal(r.memory.peak_allocated, 6144);
    assert_int_equal(r.memory.cudnn.peak_allocated_low, 3072);
    assert_int_equal(r.memory.cudnn.peak_allocated_high, 6144);
    vc_result_free(&r);
    vc_model_free(m);
}

/* A model without a convolution has no interval (source none, both ends the figures). */
static void no_convolution(void **state)
{
    (void)state;
    vc_model *m = load("{\"name\": \"lin\", \"input\": {\"shape\": [16]}, \"layers\": [{\"type\": \"Linear\", "
                       "\"in_features\": 16, \"out_features\": 4}]}");
    vc_options o;
    vc_options_init(&o);
    vc_result r;
    vc_error err;
    assert_int_equal(vc_estimate(m, &o, &r, &err), VC_OK);
    assert_int_equal(r.memory.cudnn.source, VC_CUDNN_NONE);
    assert_int_equal(r.memory.cudnn.peak_allocated_high, r.memory.peak_allocated);
    vc_result_free(&r);
    vc_model_free(m);
}

/* A table's 3 MiB forward workspace: peak 3,072 + 3,145,728 = 3,148,800 B; the
 * 3 MiB request (> 1 MiB, < 10 MiB) fits no cached block and opens a 20 MiB
 * large-pool segment (get_allocation_size: kLargeBuffer): reserved 2 + 20 MiB. */
static void table_exact(void **state)
{
    (void)state;
    char *path = write_tmp("{\"format\": \"vramcalc-cudnn-table-1\", \"precision\": \"fp32\", \"gpu\": \"test\", "
                           "\"convolutions\": [{\"layer\": \"layers[0]\", \"batch\": 1, \"fwd\": 3145728, "
                           "\"bwd_data\": 0, \"bwd_filter\": 0}]}");
    vc_cudnn_table *t = NULL;
    vc_error err;
    assert_int_equal(vc_cudnn_table_load(path, &t, &err), VC_OK);
    assert_string_equal(vc_cudnn_table_precision(t), "fp32");
    vc_model *m = load(ONE_CONV);
    vc_options o;
    vc_options_init(&o);
    o.mode = VC_MODE_INFER;
    o.cudnn_table = t;
    vc_result r;
    assert_int_equal(vc_estimate(m, &o, &r, &err), VC_OK);
    assert_int_equal(r.memory.cudnn.source, VC_CUDNN_TABLE);
    assert_int_equal(r.memory.peak_allocated, 3148800);
    assert_int_equal(r.memory.reserved, 22 * MiB);
    assert_int_equal(r.memory.cudnn.peak_allocated_high, 3148800);
    assert_int_equal(r.memory.cudnn.peak_allocated_low, 3148800);
    vc_result_free(&r);
    /* batch 2, a batch the table lacks (the allocator model's grid batches are such): the
     * layer's one row scaled by the batch, 3 MiB x 2 / 1 = 6 MiB; the figures without it are
     * weights 1,024 + input 1,536 + output 2,048 = 4,608 B: peak 4,608 + 6,291,456 */
    o.batch = 2;
    assert_int_equal(vc_estimate(m, &o, &r, &err), VC_OK);
    assert_int_equal(r.memory.peak_allocated, 4608 + 6 * MiB);
    vc_result_free(&r);
    vc_cudnn_table_free(t);
    unlink(path);
    /* a table without the model's convolution: refused naming the option and the layer */
    path = write_tmp("{\"format\": \"vramcalc-cudnn-table-1\", \"precision\": \"fp32\", \"convolutions\": "
                     "[{\"layer\": \"layers[9]\", \"batch\": 1, \"fwd\": 0, \"bwd_data\": 0, \"bwd_filter\": 0}]}");
    assert_int_equal(vc_cudnn_table_load(path, &t, &err), VC_OK);
    o.cudnn_table = t;
    o.batch = 1;
    assert_int_equal(vc_estimate(m, &o, &r, &err), VC_ERR_USAGE);
    assert_string_equal(CLI_PATH(&err), "--cudnn-table");
    assert_non_null(strstr(CLI_MSG(&err), "no row for the convolution layers[0]"));
    vc_model_free(m);
    vc_cudnn_table_free(t);
    unlink(path);
}

/* Strict parsing: each bad table names the file and the JSON path. */
static void table_errors(void **state)
{
    (void)state;
    static const struct {
        const char *text, *path, *msg;
    } bad[] = {
        {"[]", "", "expected an object"},
        {"{\"format\": \"x\", \"precision\": \"fp32\", \"convolutions\": []}", "format", "vramcalc-cudnn-table-1"},
        {"{\"format\": \"vramcalc-cudnn-table-1\", \"precision\": \"fp64\", \"convolutions\": []}", "precision", "--precision"},
        {"{\"format\": \"vramcalc-cudnn-table-1\", \"precision\": \"fp32\", \"convolutions\": [], \"extra\": 1}", "extra",
         "unknown key"},
        {"{\"format\": \"vramcalc-cudnn-table-1\", \"precision\": \"fp32\", \"convolutions\": [{\"layer\": \"layers[0]\", "
         "\"batch\": 1, \"fwd\": -1, \"bwd_data\": 0, \"bwd_filter\": 0}]}",
         "convolutions[0].fwd", "whole number of bytes"},
        {"{\"format\": \"vramcalc-cudnn-table-1\", \"precision\": \"fp32\", \"convolutions\": [{\"layer\": \"layers[0]\", "
         "\"batch\": 1.5, \"fwd\": 0, \"bwd_data\": 0, \"bwd_filter\": 0}]}",
         "convolutions[0].batch", "positive integer"},
        {"{\"format\": \"vramcalc-cudnn-table-1\", \"precision\": \"fp32\", \"convolutions\": [{\"layer\": \"layers[0]\", "
         "\"batch\": 1, \"fwd\": 0, \"bwd_data\": 0, \"bwd_filter\": 0, \"x\": 1}]}",
         "convolutions[0]", "unknown key"},
        {"{\"format\": \"vramcalc-cudnn-table-1\", \"precision\": \"fp32\", \"convolutions\": [{\"layer\": \"a\", \"batch\": 1, "
         "\"fwd\": 0, \"bwd_data\": 0, \"bwd_filter\": 0}, {\"layer\": \"a\", \"batch\": 1, \"fwd\": 1, \"bwd_data\": 0, "
         "\"bwd_filter\": 0}]}",
         "convolutions[1]", "the same layer and batch"},
        {"{\"format\": ", "", "not valid JSON"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char *path = write_tmp(bad[i].text);
        vc_cudnn_table *t = NULL;
        vc_error err;
        assert_int_equal(vc_cudnn_table_load(path, &t, &err), VC_ERR_USAGE);
        assert_null(t);
        assert_string_equal(err.file, path);
        assert_string_equal(CLI_PATH(&err), bad[i].path);
        if (!strstr(CLI_MSG(&err), bad[i].msg)) fail_msg("case %zu: '%s' lacks '%s'", i, err.msg, bad[i].msg);
        unlink(path);
    }
    vc_cudnn_table *t = NULL;
    vc_error err;
    assert_int_equal(vc_cudnn_table_load("/nonexistent/table.json", &t, &err), VC_ERR_IO);
    assert_string_equal(err.file, "/nonexistent/table.json");
}

static void conf_parse(void **state)
{
    (void)state;
    vc_options o;
    vc_options_init(&o);
    vc_error err;
    assert_int_equal(vc_alloc_conf_parse("expandable_segments:True,max_split_size_mb:128, garbage_collection_threshold:0.6", &o,
                                         &err),
                     VC_OK);
    assert_int_equal(o.alloc_conf.expandable_segments, 1);
    assert_int_equal(o.alloc_conf.max_split_size, 128 * MiB);
    assert_true(o.alloc_conf.gc_threshold > 0.59 && o.alloc_conf.gc_threshold < 0.61);
    /* AllocatorConfig.cpp parseMaxSplitSize: at least kLargeBuffer / 1 MiB = 20 */
    assert_int_equal(vc_alloc_conf_parse("max_split_size_mb:19", &o, &err), VC_ERR_USAGE);
    assert_non_null(strstr(CLI_MSG(&err), "max_split_size_mb"));
    assert_int_equal(o.alloc_conf.max_split_size, 0); /* a refused string leaves the defaults */
    /* parseGarbageCollectionThreshold: (0, 1) */
    assert_int_equal(vc_alloc_conf_parse("garbage_collection_threshold:1", &o, &err), VC_ERR_USAGE);
    assert_int_equal(vc_alloc_conf_parse("expandable_segments:yes", &o, &err), VC_ERR_USAGE);
    assert_int_equal(vc_alloc_conf_parse("expandable_segments", &o, &err), VC_ERR_USAGE);
    assert_int_equal(vc_alloc_conf_parse("max_split_size:128", &o, &err), VC_ERR_USAGE);
    assert_non_null(strstr(CLI_MSG(&err), "unknown key 'max_split_size'"));
    assert_int_equal(vc_alloc_conf_parse("roundup_power2_divisions:4", &o, &err), VC_ERR_USAGE);
    assert_non_null(strstr(CLI_MSG(&err), "does not model"));
}

typedef struct {
    vc_alloc_event ev[16];
    size_t n;
} stream;

static int32_t M(stream *s, int64_t size)
{
    s->ev[s->n] = (vc_alloc_event){size, -1};
    return (int32_t)s->n++;
}

static void F(stream *s, int32_t m) { s->ev[s->n++] = (vc_alloc_event){s->ev[m].size, m}; }

static int64_t replay(const stream *s, int expandable, int64_t max_split)
{
    vc_alloc_scratch sc = {0};
    sc.expandable = expandable;
    sc.max_split = max_split;
    int64_t r = vc_alloc_replay(s->ev, s->n, 0, &sc);
    vc_alloc_scratch_free(&sc);
    return r;
}

/* expandable_segments:True, large pool, 20 MiB pages */
static void expandable(void **state)
{
    (void)state;
    stream s = {.n = 0};
    /* 25 MiB then 5 MiB. Default: a 26 MiB segment (25 rounded to 2 MiB; the
     * 1 MiB left is not split off: should_split wants > 1 MiB), then a 20 MiB one
     * for the 5 MiB: 46 MiB. Expandable: 25 MiB maps 2 pages (40 MiB); the 5 MiB
     * fits the 15 MiB free at the end: 40 MiB. */
    M(&s, 25 * MiB);
    M(&s, 5 * MiB);
    assert_int_equal(replay(&s, 0, 0), 46 * MiB);
    assert_int_equal(replay(&s, 1, 0), 40 * MiB);
    /* 25 MiB then 30 MiB: default 26 + 30 = 56 MiB; expandable: the end's 15 MiB
     * lacks 15, one more page: 60 MiB */
    s.n = 0;
    M(&s, 25 * MiB);
    M(&s, 30 * MiB);
    assert_int_equal(replay(&s, 0, 0), 56 * MiB);
    assert_int_equal(replay(&s, 1, 0), 60 * MiB);
    /* 25 MiB freed, then 30 MiB: default, the 26 MiB block is too small, a new 30 MiB
     * segment: 56 MiB; expandable, the freed block merges with the end's 15 MiB and the
     * 40 MiB mapped hold it: 40 MiB */
    s.n = 0;
    int32_t a = M(&s, 25 * MiB);
    F(&s, a);
    M(&s, 30 * MiB);
    assert_int_equal(replay(&s, 0, 0), 56 * MiB);
    assert_int_equal(replay(&s, 1, 0), 40 * MiB);
    /* small pool, 2 MiB pages: 768 KiB twice (1.5 MiB, one page) and 1 MiB: the
     * end's 512 KiB lacks 512 KiB, one page more: 4 MiB; the default is 4 MiB too
     * (the 1 MiB fits no 2 MiB segment's remainder) */
    s.n = 0;
    M(&s, 768 * 1024);
    M(&s, 768 * 1024);
    M(&s, 1024 * 1024);
    assert_int_equal(replay(&s, 0, 0), 4 * MiB);
    assert_int_equal(replay(&s, 1, 0), 4 * MiB);
}

/* max_split_size_mb:20 */
static void max_split(void **state)
{
    (void)state;
    stream s = {.n = 0};
    /* 100 MiB freed, then 30 MiB: default, best fit splits the 100 MiB block:
     * 100 MiB; max_split 20 MiB: the request is >= max_split and the block >= 30 +
     * kLargeBuffer (20 MiB), "oversized": a new 30 MiB segment, 130 MiB */
    int32_t a = M(&s, 100 * MiB);
    F(&s, a);
    M(&s, 30 * MiB);
    assert_int_equal(replay(&s, 0, 0), 100 * MiB);
    assert_int_equal(replay(&s, 0, 20 * MiB), 130 * MiB);
    /* 100 MiB freed, then 15 MiB: below max_split, a block >= max_split is not
     * handed out: a 16 MiB segment (15 MiB rounded to 2 MiB), 116 MiB */
    s.n = 0;
    a = M(&s, 100 * MiB);
    F(&s, a);
    M(&s, 15 * MiB);
    assert_int_equal(replay(&s, 0, 0), 100 * MiB);
    assert_int_equal(replay(&s, 0, 20 * MiB), 116 * MiB);
    /* 30 MiB freed, 25 MiB, then 2 MiB: default, the 25 MiB splits the 30 MiB block
     * (5 MiB > 1 MiB left) and the 2 MiB takes the remainder: 30 MiB; max_split 20:
     * a request >= max_split is not split (should_split), so the 2 MiB opens a
     * 20 MiB segment: 50 MiB */
    s.n = 0;
    a = M(&s, 30 * MiB);
    F(&s, a);
    M(&s, 25 * MiB);
    M(&s, 2 * MiB);
    assert_int_equal(replay(&s, 0, 0), 30 * MiB);
    assert_int_equal(replay(&s, 0, 20 * MiB), 50 * MiB);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bound_interval), cmocka_unit_test(no_convolution), cmocka_unit_test(table_exact),
        cmocka_unit_test(table_errors),   cmocka_unit_test(conf_parse),     cmocka_unit_test(expandable),
        cmocka_unit_test(max_split),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
