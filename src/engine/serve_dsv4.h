/* serve_dsv4.h — --serve for DeepSeek-V4 from its config (serve_dsv4.c) */
#ifndef VC_SERVE_DSV4_H
#define VC_SERVE_DSV4_H

#include <stdbool.h>
#include <stddef.h>

#include "vramcalc/vramcalc.h"

struct cJSON;

/* options the request was given that DeepSeek-V4's serving refuses (serve_dsv4.c) */
#define VC_DSV4_BLOCK_SIZE 1u /* --block-size */
#define VC_DSV4_PRECISION 2u  /* --precision */
#define VC_DSV4_WEIGHTS 4u    /* --weights */
#define VC_DSV4_MOE_IMBALANCE 8u /* --moe-imbalance */
#define VC_DSV4_EXPERTS 16u   /* --experts-implementation */
#define VC_DSV4_TRANSFORMERS 32u /* --transformers */
#define VC_DSV4_TORCH 64u     /* --torch */

/* vLLM's engine for the deepseek_v4 config cfg on one rank of o->tp (o->prompt + o->new_tokens a request), into r;
 * VC_ERR_USAGE naming the option vLLM or vramcalc cannot take, VC_ERR_MODEL naming the config key */
vc_status vc__serve_dsv4(const struct cJSON *cfg, const vc_options *o, const vc_serve_options *so, const vc_gpu_spec *gpu,
                         unsigned given, vc_serve_result *r, vc_error *err);
/* the model file at path (a config, a directory or an id the loader resolves): *served when it is a deepseek_v4 config,
 * then vc__serve_dsv4's status and desc the weights' formats; otherwise VC_OK and the loader reads it */
vc_status vc__serve_dsv4_file(const char *path, const vc_options *o, const vc_serve_options *so, const vc_gpu_spec *gpu,
                              unsigned given, vc_serve_result *r, bool *served, char *desc, size_t desc_n, vc_error *err);

#endif
