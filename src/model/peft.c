/*
 * peft.c — the PEFT methods of --peft, one descriptor row each (issue 26
 * item 1), written from huggingface/peft @5d602fdbff04c33c1c4de55cda9d4ae1d7cb7e40.
 *
 * A row says what the method adds to each target Linear and what it trains;
 * layers/linear.c's setup and emit read the row's flags (vc_peft_row), and
 * src/model/setup.c decides which parameters train from them. The rows:
 *
 *  lora    tuners/lora/layer.py LoraLayer.update_layer: lora_A [r, in],
 *          lora_B [out, r]; Linear.forward: result + lora_B(lora_A(dropout(x))) * scaling.
 *  rslora  LoraConfig(use_rslora=True): update_layer sets scaling =
 *          lora_alpha / math.sqrt(r) instead of lora_alpha / r: the same
 *          tensors, a different scalar (nothing allocated differs).
 *  pissa   LoraConfig(init_lora_weights="pissa"): LoraLayer.pissa_init
 *          replaces lora_A/lora_B with the weight's top-r singular vectors
 *          and writes weight - scaling * B @ A back into the base weight once,
 *          at get_peft_model time; the training step holds the same tensors
 *          as LoRA (the SVD's transients are not part of the step).
 *  dora    LoraConfig(use_dora=True): tuners/lora/variants.py
 *          DoraLinearVariant.init adds lora_magnitude_vector (a
 *          DoraLinearLayer whose `weight` is an nn.Parameter of out_features,
 *          trainable, in adapter_layer_names, so cast like the adapters);
 *          DoraLinearVariant.forward / dora.py DoraLinearLayer.forward build the
 *          weight-norm temporaries every forward (layers/linear.c dora_delta).
 *  ia3     IA3Config: tuners/ia3/layer.py IA3Layer.update_layer: ia3_l is
 *          [1, in] for a feedforward module, [out, 1] otherwise, trainable;
 *          Linear.forward multiplies the input (feedforward) or the output by it.
 *  ln_tuning  LNTuningConfig: tuners/ln_tuning/layer.py LNTuningLayer.update_layer:
 *          ln_tuning_layers[adapter] = deepcopy(layer), trained; the base_layer
 *          frozen and kept; forward runs the copy alone. The copy is in
 *          adapter_layer_names, so cast_adapter_dtype upcasts a 16-bit one to fp32.
 *
 * modules_to_save (any method's config, utils/other.py ModulesToSaveWrapper.update):
 * modules_to_save[adapter] = copy.deepcopy(original_module), trained;
 * original_module.requires_grad_(False) and kept; forward runs the copy. Not a
 * BaseTunerLayer, so cast_adapter_dtype leaves the copy in the model's dtype.
 */
#include <string.h>

#include "model.h"

/* PEFT's defaults for a config.json's model_type (utils/constants.py, peft @5d602fdb):
 * TRANSFORMERS_MODELS_TO_IA3_TARGET_MODULES_MAPPING, ..._IA3_FEEDFORWARD_MODULES_MAPPING and
 * ..._LNTUNING_TARGET_MODULES_MAPPING, for the causal-LM families vramcalc reads (NULL: not in
 * the mapping). */
static const struct {
    const char *model_type, *ia3, *feedforward, *ln;
} defaults[] = {
    {"llama", "k_proj,v_proj,down_proj", "down_proj", "input_layernorm,post_attention_layernorm,norm"},
    {"mistral", "k_proj,v_proj,down_proj", "down_proj", "input_layernorm,post_attention_layernorm,norm"},
    {"mixtral", "k_proj,v_proj,w2", "w2", NULL},
    {"qwen2", "q_proj,v_proj,down_proj", "down_proj", "post_attention_layernorm"},
    {"qwen3", "q_proj,v_proj,down_proj", "down_proj", "post_attention_layernorm"},
    {"gemma", "q_proj,v_proj,down_proj", "down_proj", "input_layernorm,post_attention_layernorm,norm"},
    {"gemma2", "q_proj,v_proj,down_proj", "down_proj",
     "input_layernorm,post_attention_layernorm,pre_feedforward_layernorm,post_feedforward_layernorm,norm"},
    {"gpt_neox", "query_key_value,dense_4h_to_h", "dense_4h_to_h", NULL},
    {"gpt2", "c_attn,mlp.c_proj", "mlp.c_proj", "ln_1,ln_2,ln_f"},
    {"opt", "q_proj,k_proj,fc2", "fc2", NULL},
    {"phi", "q_proj,v_proj,fc2", "fc2", "input_layernorm,final_layernorm"},
    {"bert", "key,value,output.dense", "output.dense", NULL},
    {"roberta", "key,value,output.dense", "output.dense", NULL},
};

static const vc_peft_row rows[VC_PEFT__N] = {
    [VC_PEFT_LORA] = {"lora", true, false, false, false, "tuners/lora/layer.py LoraLayer.update_layer, Linear.forward"},
    [VC_PEFT_RSLORA] = {"rslora", true, false, false, false, "LoraConfig use_rslora: scaling = lora_alpha / sqrt(r)"},
    [VC_PEFT_PISSA] = {"pissa", true, false, false, false, "LoraConfig init_lora_weights=\"pissa\": LoraLayer.pissa_init at load"},
    [VC_PEFT_DORA] = {"dora", true, true, false, false, "tuners/lora/dora.py DoraLinearLayer, variants.py DoraLinearVariant"},
    [VC_PEFT_IA3] = {"ia3", false, false, true, false, "tuners/ia3/layer.py IA3Layer.update_layer, Linear.forward"},
    [VC_PEFT_LN_TUNING] = {"ln_tuning", false, false, false, true, "tuners/ln_tuning/layer.py LNTuningLayer.update_layer, forward"},
};

const vc_peft_row *vc_peft_row_get(vc_peft p) { return (unsigned)p < VC_PEFT__N ? &rows[p] : &rows[VC_PEFT_LORA]; }

int vc_peft_from_name(const char *s)
{
    for (int i = 0; s && i < VC_PEFT__N; i++)
        if (!strcmp(rows[i].name, s)) return i;
    return -1;
}

bool vc__peft_on(const vc_lora *l) { return l->r > 0 || (!vc_peft_row_get(l->method)->lora && l->targets[0]); }

/* Whether `name` is one of the comma-separated `list`, or ends with "." and one
 * (PEFT's check_target_module_exists for a list of target_modules). */
bool vc__peft_match(const char *name, const char *list)
{
    if (!name || !list) return false;
    size_t n = strlen(name);
    for (const char *t = list; *t;) {
        const char *e = strchr(t, ',');
        size_t len = e ? (size_t)(e - t) : strlen(t);
        if (len && (n == len || (n > len && name[n - len - 1] == '.')) && !strncmp(name + n - len, t, len)) return true;
        t += len + (e ? 1 : 0);
    }
    return false;
}

/* PEFT's IA3 target_modules and feedforward_modules and LN tuning's target_modules for a
 * config.json's model_type (static strings; NULL where PEFT's mapping lacks it). */
void vc__peft_defaults(const char *model_type, const char **ia3, const char **feedforward, const char **ln)
{
    *ia3 = *feedforward = *ln = NULL;
    for (size_t i = 0; model_type && i < sizeof defaults / sizeof *defaults; i++)
        if (!strcmp(defaults[i].model_type, model_type)) {
            *ia3 = defaults[i].ia3;
            *feedforward = defaults[i].feedforward;
            *ln = defaults[i].ln;
        }
}

/* Whether the IA3 target `name` is a feedforward module (its vector scales the input):
 * named in `feedforward` (the model_type's default); with none (a model file, or a
 * model_type PEFT has no default for), named as some family's feedforward module in PEFT's
 * mapping (down_proj, w2, fc2, dense_4h_to_h, ...). */
bool vc__ia3_feedforward(const char *feedforward, const char *name)
{
    if (feedforward) return vc__peft_match(name, feedforward);
    for (size_t i = 0; i < sizeof defaults / sizeof *defaults; i++)
        if (vc__peft_match(name, defaults[i].feedforward)) return true;
    return false;
}
