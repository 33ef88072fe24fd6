/* tests/sliding_cfg.h: the small Mistral config of the sliding-window mask tests (test_sliding_mask.c,
 * test_sliding_4x.c), written twice to temporary files: with a 32-token window (with_window) and with
 * "sliding_window": null (without_window). Include after cmocka.h; the test's group runs sliding_setup and
 * sliding_teardown. */
#ifndef VC_TEST_SLIDING_CFG_H
#define VC_TEST_SLIDING_CFG_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *cfg_text =
    "{\"architectures\": [\"MistralForCausalLM\"], \"head_dim\": 16, \"hidden_act\": \"silu\", \"hidden_size\": 64,"
    " \"intermediate_size\": 128, \"max_position_embeddings\": 4096, \"model_type\": \"mistral\","
    " \"num_attention_heads\": 8, \"num_hidden_layers\": 2, \"num_key_value_heads\": 2, \"rms_norm_eps\": 1e-05,"
    " \"rope_theta\": 10000.0, \"sliding_window\": %s, \"tie_word_embeddings\": false, \"torch_dtype\": \"bfloat16\","
    " \"vocab_size\": 256}\n";

static char with_window[64], without_window[64];

static void write_cfg(char *path, const char *window)
{
    strcpy(path, "/tmp/vc_sliding_XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    assert_non_null(f);
    fprintf(f, cfg_text, window);
    fclose(f);
}

static int sliding_setup(void **state)
{
    (void)state;
    write_cfg(with_window, "32");
    write_cfg(without_window, "null");
    return 0;
}

static int sliding_teardown(void **state)
{
    (void)state;
    unlink(with_window);
    unlink(without_window);
    return 0;
}

#endif
