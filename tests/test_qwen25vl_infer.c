/*
 * test_qwen25vl_infer.c — Qwen2.5-VL's vision tower run without grad (issue 31 item 4): --mode infer with
 * --image, against the peaks measured from bench/accuracy/llm/qwen25vl_replica.py through measure_llm.py
 * --mode infer --image (torch 1.13 CPU; measured.json llm558-llm564, run_suite.py's last block), and what the
 * plan holds while the tower runs (src/hf/hf_layers.c, src/hf/hf_vision.c): as
 * Qwen2_5_VLForConditionalGeneration.forward (modeling_qwen2_5_vl.py @ efa7189c) runs it, inputs_embeds =
 * self.model.embed_tokens(input_ids) before self.visual, and Qwen2_5_VisionTransformerPretrainedModel.forward's
 * `for layer_num, blk in enumerate(self.blocks): hidden_states = blk(...)` frees each block's input as the
 * name rebinds.
 *
 * Config: bench/accuracy/llm/configs/qwen2_5_vl_small.json (the replica's small widths: the tower 64 wide, 4
 * heads, 4 blocks, full attention in blocks 1 and 3; the language model 96 wide, 3 layers, vocab 512).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "vramcalc/vramcalc.h"
#include "cli_run.h"

#define CFG VC_TEST_DATA "/../../bench/accuracy/llm/configs/qwen2_5_vl_small.json "

/* measured.json's --mode infer cases that are not held out (llm560 and llm563 are): within 0.1%, a few
 * 512-byte blocks low (the tower's small index tensors: window_index, cu_seqlens, cu_window_seqlens,
 * image_grid_thw, not modelled). llm559: 1280x960 is smart_resize'd to 1288 x 952, 92 x 68 = 6,256 patches: the
 * peak is the tower's attention (4 heads x 6,256^2 float32 scores with the [1, n, n] bool mask and its float
 * copy). */
static void measured(void **state)
{
    (void)state;
    static const cli_measured cases[] = {
        {"qwen2_5_vl_small.json --seq 64 -p fp32 --image 640x480 --images 1", 114104832},     /* llm558 */
        {"qwen2_5_vl_small.json --seq 64 -p fp32 --image 1280x960 --images 1", 1651219456},   /* llm559 */
        {"qwen2_5_vl_small.json --seq 32 -p bf16 --image 1024x768 --images 2", 2565157888LL}, /* llm561 */
        {"qwen2_5_vl_small.json --seq 128 -p fp32 --image 448x336 --images 1", 32459264},     /* llm562 */
        {"qwen2_5_vl_small.json --seq 32 -p fp32 --image 224x224 --images 1", 7350272},       /* llm564 */
    };
    assert_measured(cases, sizeof cases / sizeof *cases, " -m infer -b 1 --attention math --workspace 0", 0.1);
}

/* While the tower runs, the token embeddings are already made: at 224x224 (16 x 16 = 256 patches, 64 image
 * tokens) the peak is the tower's attention in block 0, and 100 text tokens more (--seq 32 -> 132: 96 -> 196
 * tokens) add only what is alive before the tower: embed_tokens' output [1, L, 96] float32, 36,864 -> 75,264
 * bytes (+38,400, both multiples of 512), and the int64 input ids, 768 -> 1,568 bytes (512-byte blocks: 1,024
 * -> 2,048, +1,024). Written after the tower, the embeddings would not be in the difference. */
static void embeddings_before_tower(void **state)
{
    (void)state;
    const char *a = CFG "-m infer --seq 32 -p fp32 --image 224x224 --attention math --workspace 0 -f json";
    const char *b = CFG "-m infer --seq 132 -p fp32 --image 224x224 --attention math --workspace 0 -f json";
    long long pa = cli_json_field(a, "\"peak_allocated\": "), pb = cli_json_field(b, "\"peak_allocated\": ");
    assert_int_equal(pb - pa, (75264 - 36864) + (2048 - 1024));
    cli_run r;
    run(&r, a);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "\"kind\": \"RotaryAttention\""));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(measured),
        cmocka_unit_test(embeddings_before_tower),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
