/*
 * plan.c — builds a plan for (model, options): the layers record their ops
 * (graph.c), the loss follows, and the graph is executed once (autograd.c);
 * and frees it.
 */
#include <stdio.h>
#include <string.h>

#include "ops.h"
#include "plan.h"
#include "util.h"

static vc_status build(const vc_model *m, const vc_options *o, const vc_layout_row *layout, const vc_gen *profile,
                       int first_steps, vc_plan **out, vc_error *err);

vc_status vc_plan_build(const vc_model *m, const vc_options *o, vc_plan **out, vc_error *err)
{
    return build(m, o, vc_layout_row_get(o), NULL, 0, out, err);
}

vc_status vc__plan_build_first_step(const vc_model *m, const vc_options *o, int steps, vc_plan **out, vc_error *err)
{
    return build(m, o, vc_layout_row_get(o), NULL, steps, out, err);
}

vc_status vc__plan_build_layout(const vc_model *m, const vc_options *o, const vc_layout_row *layout, vc_plan **out,
                                vc_error *err)
{
    return build(m, o, layout, NULL, 0, out, err);
}

vc_status vc__plan_build_profile(const vc_model *m, const vc_options *o, int64_t tokens, int64_t rows, vc_plan **out,
                                 vc_error *err)
{
    vc_gen g = {0};
    g.profile = true;
    g.prompt = tokens;
    g.steps = 1;
    g.head_rows = rows;
    vc_options t = *o;
    t.mode = VC_MODE_INFER;
    return build(m, &t, vc_layout_row_get(&t), &g, 0, out, err);
}

vc_status vc__plan_build_capture(const vc_model *m, const vc_options *o, int64_t tokens, vc_plan **out, vc_error *err)
{
    vc_gen g = {0};
    g.profile = true;
    g.capture = true;
    g.prompt = tokens;
    g.steps = 1;
    g.head_rows = 1; /* the twin at the head's rows is built, not run */
    vc_options t = *o;
    t.mode = VC_MODE_INFER;
    return build(m, &t, vc_layout_row_get(&t), &g, 0, out, err);
}

static void cast_inputs(vc_build *b);

/* The sizes of the last plan built on this thread, as the first capacity of
 * the next one's growing arrays (GROW, plan.h: doubling from 64 copies each
 * array about once over, and a --max-seq probe, a pipeline's chunks or a
 * grid batch's plan is built again at about the same size). Only where the
 * arrays are allocated changes; at most 2^20 elements each. */
static _Thread_local size_t last_size[6];
#define HINT_MAX ((size_t)1 << 20)

static void *reserve(size_t hint, size_t elem, size_t *cap)
{
    if (hint <= 64 || hint > HINT_MAX) return NULL; /* GROW's own first capacity */
    void *p = malloc(hint * elem);
    *cap = p ? hint : 0;
    return p;
}

static void reserve_arrays(vc_build *b)
{
    b->t = reserve(last_size[0], sizeof *b->t, &b->ct);
    b->op = reserve(last_size[1], sizeof *b->op, &b->cop);
    b->it = reserve(last_size[2], sizeof *b->it, &b->cit);
    b->s = reserve(last_size[3], sizeof *b->s, &b->cs);
    b->ev = reserve(last_size[4], sizeof *b->ev, &b->cev);
    b->sv = reserve(last_size[5], sizeof *b->sv, &b->csv);
}

static void keep_sizes(const vc_build *b)
{
    const size_t n[6] = {b->nt, b->nop, b->nit, b->ns, b->nev, b->nsv};
    memcpy(last_size, n, sizeof n);
}

/* The tensors the step starts with: parameters (their dtype from the
 * precision row, or pinned: vc_param_pinned_dt), buffers and the model's inputs. */
static void model_tensors(vc_build *b)
{
    const vc_model *m = b->m;
    for (size_t p = 0; p < m->npar; p++) {
        vc_dtype dt = vc_param_pinned_dt(m->par[p].flags, b->param_dt);
        int32_t t = vc__new_tensor(b, vc_n_fixed(m->par[p].numel), dt);
        if (t < 0) break;
        b->t[t].persistent = true;
        b->t[t].param = (int32_t)p;
        b->t[t].rg = m->par[p].trainable && b->train;
        b->par_t[p] = t;
        b->amp_cache[p] = -1;
    }
    for (size_t i = 0; i < m->nbuf; i++) {
        vc_dtype dt = m->buf[i].dt == VC_DT_FLOAT ? b->prec->param_dt : m->buf[i].dt; /* a layout's cast spares buffers */
        int32_t t = vc__new_tensor(b, vc_n_fixed(m->buf[i].numel), dt);
        if (t < 0) break;
        b->t[t].persistent = true;
        b->buf_t[i] = t;
    }
    const vc_model *im = vc__gen_input_model(b);
    /* a layout that casts the parameters may cast the float inputs too
     * (vc_layout_row.cast_inputs): the caller's input keeps the precision's dtype */
    bool cast = b->layout->cast_inputs && b->param_dt != b->prec->param_dt;
    for (int i = 0; i < m->ninputs; i++) {
        int64_t n = vc_shape_numel(&im->val[i].shape);
        vc_dtype dt = m->val[i].dt == VC_DT_FLOAT && cast ? b->prec->act_dt : m->val[i].dt;
        int32_t t = vc__new_tensor(b, vc_n_sample(n), dt);
        if (t < 0) break;
        b->t[t].persistent = true;
        b->t[t].rg = m->stage.input_rg && m->stage.input_rg[i] && b->train; /* a stage's received activation */
        b->val_t[i] = t;
    }
    if (cast) cast_inputs(b);
}

/* FSDP2's root pre-forward (torch/distributed/fsdp/_fully_shard/_fsdp_state.py
 * @01c9f4fcc3ffa856d3d1b038998b8ad90db4ec02, FSDPState._pre_forward: with
 * cast_forward_inputs and a param_dtype, _apply_to_tensors(_cast_fp_tensor)
 * over args and kwargs, before the group's pre_forward; _fsdp_common.py
 * _cast_fp_tensor: x.to(dtype) for a floating-point tensor of another dtype,
 * else x): a _to_copy of each float input into the compute dtype, outside
 * every layer, recorded first so that it runs before the layout's hook for the
 * whole model (autograd.c forward). The copy is the module's argument, held
 * until the model's forward returns (build: vc__end_forward). */
static void cast_inputs(vc_build *b)
{
    b->cur_inst = b->cur_region = -1;
    for (int i = 0; i < b->m->ninputs && !b->st; i++) {
        vc_dtype dt = b->t[b->val_t[i]].dt;
        if (dt != VC_DT_F32 && dt != VC_DT_F16 && dt != VC_DT_BF16) continue;
        b->val_t[i] = vc__op_cast(b, b->val_t[i], b->act_dt);
    }
    b->npre = (int32_t)b->nop;
}

/* A plan; profile: vLLM's profiling run (serve.c) instead of o's mode. */
static vc_status build(const vc_model *m, const vc_options *o, const vc_layout_row *layout, const vc_gen *profile,
                       int first_steps, vc_plan **out, vc_error *err)
{
    /* DeepSeek-V3.2's indexer: vLLM's alone (src/hf/hf_deepseek_v32.c) */
    vc_status qst = vc__dsa_check(m, o, profile || vc__quant_vllm_in(), err);
    if (!qst) qst = vc__quant_check(m, o, err); /* quantized weights: their precision and mode (src/policy/quant.c) */
    if (!qst) qst = vc__t5_check(m, o, err);    /* what a T5 model's estimate does not model (src/hf/hf_t5.c) */
    if (!qst) qst = vc__whisper_check(m, o, profile != NULL, err); /* a Whisper model's (src/hf/hf_whisper.c) */
    if (!qst) qst = vc__dinov2_check(m, o, err); /* a DINOv2 model's autocast (src/hf/hf_layers.c) */
    if (qst) return qst;
    vc_build *b = calloc(1, sizeof *b);
    if (!b) return vc_set_error(err, VC_ERR_NOMEM, NULL, "out of memory");
    b->m = m;
    b->o = *o;
    b->first_steps = first_steps;
    b->batch = o->batch;
    b->blo = 1;
    b->bhi = VC_BATCH_ANY;
    b->memo = calloc(1, sizeof *b->memo);
    if (!b->memo) {
        free(b);
        return vc_set_error(err, VC_ERR_NOMEM, NULL, "out of memory");
    }
    b->memo->grid = &b->memo->own;
    b->train = o->mode == VC_MODE_TRAIN;
    b->loss_t = -1;
    b->held_out_t = -1;
    b->target_t = -1;
    b->prec = vc_precision_row_get(o->precision);
    b->optim = vc_optim_row_get(o->optim);
    b->layout = layout;
    b->hook_inst = -1;
    if (!b->prec || !b->optim || !b->layout) {
        vc_plan_free(b);
        return vc_set_error(err, VC_ERR_USAGE, NULL, "invalid option value");
    }
    if (profile) b->gen = *profile;
    b->gen.split_op = b->gen.split2_op = b->gen.mask = -1;
    b->gen.npass = 0;
    b->gen.ret[0] = b->gen.ret[1] = -1;
    b->fwd_local = b->fwd_local2 = b->dsa_topk = -1;
    b->nfwd_keep = 0;
    b->nmdl_keep = 0;
    for (int i = 0; i < 2; i++) b->kv_share[i].k = b->kv_share[i].v = -1;
    b->nkvd = 0;
    b->kvd_death = -1;
    if (o->mode == VC_MODE_GENERATE || profile) {
        vc_status st = vc__gen_begin(b, err);
        if (st) {
            vc_plan_free(b);
            return st;
        }
    }
    b->act_dt = b->prec->act_dt;
    b->param_dt = b->prec->param_dt;
    b->amp_dt = b->prec->amp_dt;
    if (b->layout->compute) { /* the layout casts the parameters (FSDP2's param_dtype) */
        b->layout->compute(o, &b->param_dt);
        b->act_dt = b->param_dt;
    }

    reserve_arrays(b);
    b->val_t = malloc((m->nval + 1) * sizeof *b->val_t);
    b->par_t = malloc((m->npar + 1) * sizeof *b->par_t);
    b->buf_t = malloc((m->nbuf + 1) * sizeof *b->buf_t);
    b->amp_cache = malloc((m->npar + 1) * sizeof *b->amp_cache);
    if (!b->val_t || !b->par_t || !b->buf_t || !b->amp_cache) {
        vc_plan_free(b);
        return vc_set_error(err, VC_ERR_NOMEM, NULL, "out of memory");
    }
    /* none yet: a pass that stops on an error (a refused option mid-emit) leaves the rest unset */
    for (size_t v = 0; v <= m->nval; v++) b->val_t[v] = -1;
    model_tensors(b);
    /* --packing: modelled for the HF attention core (layers/llm.c ra_emit: sdpa's block mask or
     * flash_attention_2's varlen kernel); the other attention kinds take the row as one sequence */
    for (size_t i = 0; o->packing > 1 && i < m->ninst && !b->st; i++) {
        const char *k = m->inst[i].kind->name;
        if (strstr(k, "Attention") && strcmp(k, "RotaryAttention"))
            vc_refuse(b, O("packing"), "packed sequences through %s (%.80s) are not modelled", k, m->inst[i].path);
        else if (!strcmp(k, "GatedDeltaNet") || !strcmp(k, "PixelValues") || !strncmp(k, "Transformer", 11))
            vc_refuse(b, O("packing"), "packed sequences through %s (%.80s) are not modelled", k, m->inst[i].path);
    }
    if (b->gen.on) vc__gen_emit(b); /* the prefill and the last decoding step */
    else {
        const size_t end = vc__loss_forward_end(b), head = vc__head_inst(m) < end ? vc__head_inst(m) : end;
        vc__emit_instances(b, 0, head); /* the base model */
        vc__end_model_forward(b);
        vc__emit_instances(b, head, end); /* the head (a fused loss runs the LM head itself) */
        for (int32_t k = 0; k < b->npre && !b->st; k++) /* the inputs' casts: arguments of the model's forward */
            for (int32_t j = 0; j < b->op[k].nit; j++)
                if (op_items(b, k)[j].type == IT_OUT) vc__extend_life(b, op_items(b, k)[j].t);
        vc__end_forward(b);
    }
    vc__gen_end(b);
    /* autocast's weight cache is cleared when the forward's autocast region exits */
    for (size_t p = 0; p < m->npar && !b->st; p++)
        if (b->amp_cache[p] >= 0 && b->t[b->amp_cache[p]].release < 0) b->t[b->amp_cache[p]].release = (int32_t)b->nop - 1;
    b->loss_op0 = (int32_t)b->nop; /* --act-offload: the loss runs outside the offload context */
    if (!b->st && b->train && (!m->stage.on || m->stage.last)) vc__emit_loss(b); /* infer: model(x) only; a pipeline stage: the last */
    /* vc_keep_forward: the locals of a *ForConditionalGeneration.forward, which computes the loss too */
    for (size_t i = 0; i < b->nfwd_keep; i++) vc__extend_life(b, b->fwd_keep[i]);
    b->nfwd_keep = 0;
    if (!b->st && b->train && o->hold_output) { /* --hold-output: `out`, the loop's variable, until backward returns */
        if (o->hold_output != 1 || vc_loss_row_get(m->loss)->fused || m->stage.on) {
            b->st = VC_ERR_USAGE;
            b->why_opt = O("hold_output");
            snprintf(b->why, sizeof b->why, "%s", o->hold_output != 1 ? "invalid value"
                     : m->stage.on ? "a pipeline stage's output is sent on, not held: not modelled"
                     : "a fused or chunked loss makes no logits tensor to hold (the LM head runs inside it)");
        } else {
            b->held_out_t = b->val_t[m->output];
        }
    }
    if (!b->st) vc__execute(b);
    if (b->st) {
        vc_status st = b->st;
        if (st == VC_ERR_LIMIT && !b->why[0]) /* s_alloc/s_unref (autograd.c) */
            snprintf(b->why, sizeof b->why, "the simulated step makes more than %d allocations and frees: the "
                     "limit (docs/limits.md)", VC_MAX_PLAN_EVENTS);
        char why[sizeof b->why];
        const char *opt = b->why_opt;
        snprintf(why, sizeof why, "%s", b->why[0] ? b->why : vc_strerror(st));
        vc_plan_free(b);
        return vc_set_error(err, st, opt, "%s", why);
    }
    keep_sizes(b);
    *out = b;
    return VC_OK;
}

void vc__emit_instances(vc_build *b, size_t i0, size_t i1)
{
    const vc_model *m = b->m;
    b->nblk_keep = 0;
    for (size_t i = i0; i < i1 && !b->st; i++) {
        const vc_inst *in = &m->inst[i];
        b->cur_inst = (int)i;
        b->cur_region = b->no_regions ? -1 : in->ckpt;
        b->out_t = -1;
        b->unheld = 0;
        in->kind->emit(b, in->cfg);
        if (b->nop > VC_MAX_PLAN_OPS && !b->st) {
            b->st = VC_ERR_LIMIT;
            snprintf(b->why, sizeof b->why, "%.120s: the model records more than %d autograd ops in one step by this "
                     "layer: the limit (docs/limits.md)", in->path, VC_MAX_PLAN_OPS);
        }
        if (b->out_t < 0 || b->st) {
            if (!b->st) b->st = VC_ERR_MODEL; /* internal: every kind sets its output */
            return;
        }
        b->val_t[in->out] = b->out_t;
        /* the caller holds a module's inputs until it returns (not those that are
         * locals of the source's forward, vc_input_unheld) */
        for (int k = 0; k < in->nin; k++)
            if (!(k < 32 && (b->unheld >> k & 1u))) vc__extend_life(b, b->val_t[in->in[k]]);
        for (size_t k = 0; k < m->nblk; k++)
            if (m->blk_last[k] == (int)i) vc__extend_life(b, b->val_t[m->blk_val[k]]);
        for (size_t k = 0; k < m->nhold && !b->gen.profile; k++) /* "held_until" (model.h) */
            if (m->hold_last[k] == (int)i) vc__extend_life(b, b->val_t[m->hold_val[k]]);
        for (int k = 0; k < b->nblk_keep; k++) /* vc_keep_through_block: a local of the block's forward */
            if (b->blk_keep_at[k] == (int)i) {
                vc_t t = b->blk_keep[k];
                /* a held tensor released before (layers/llm.c kv_dict_end: shared_kv_states' entries, vc_hold'd
                 * when stored) is released here instead: vc_keep_to_here leaves held tensors alone. Not in --serve's
                 * profile and capture runs: vLLM's Gemma 4 has no such dict (its shared layers read the paged
                 * cache), their estimate left as it was */
                if (t >= 0 && b->t[t].held && b->t[t].release >= 0 && !b->gen.profile) vc_release(b, t);
                else vc_keep_to_here(b, t);
            }
    }
}

/* --loss dpo's reference forward, as TRL's DPOTrainer._compute_loss runs it
 * (huggingface/trl @ f2cd57710ae345ea6428ae95363267fcf38a3dc8, trl/trainer/dpo_trainer.py):
 *   with torch.no_grad(), disable_gradient_checkpointing(self.model, ...):
 *       if is_peft_model(model) and self.ref_model is None:
 *           with use_adapter(model, adapter_name=None): ref_outputs = self.model(**ref_model_kwargs)
 *       else: ref_outputs = self.ref_model(**ref_model_kwargs)
 * no_grad: no op records a grad_fn (b->train off while the instances are emitted:
 * graph.c op_input), so nothing is saved and every activation goes at its last use;
 * disable_gradient_checkpointing: the instances run outside their checkpoint regions;
 * use_adapter(None) (trl/trainer/utils.py -> PeftModel.disable_adapter): each LoRA
 * Linear returns base_layer(x) (peft tuners/lora/layer.py Linear.forward, disable_adapters);
 * the frozen reference (`copy`): create_model_from_path(ref_model_path, **ref_model_init_kwargs),
 * the same checkpoint in the same dtype, its own weights and buffers, in eval mode
 * (accelerator.prepare_model(evaluation_mode=True): no dropout, as vc_training is off).
 * The policy's tensors (val_t, par_t, buf_t) are put back afterwards. */
vc_t vc__emit_reference(vc_build *b, bool copy)
{
    const vc_model *m = b->m;
    vc_ref_scope sc;
    if (vc__reference_enter(b, copy, &sc)) return -1;
    int32_t fl = b->fwd_local, fl2 = b->fwd_local2, tk = b->dsa_topk;
    b->fwd_local = b->fwd_local2 = b->dsa_topk = -1;
    if (!b->st) vc__emit_instances(b, 0, m->ninst);
    vc__end_forward(b);
    vc_t out = b->st ? -1 : b->val_t[m->output];
    b->fwd_local = fl;
    b->fwd_local2 = fl2;
    b->dsa_topk = tk;
    vc__reference_leave(b, &sc);
    return out;
}

int vc__reference_enter(vc_build *b, bool copy, vc_ref_scope *sc)
{
    const vc_model *m = b->m;
    size_t nv = m->nval + 1, np = m->npar + 1, nb = m->nbuf + 1;
    int32_t *save = malloc((nv + np + nb) * sizeof *save);
    const bool again = copy && b->ref_t; /* --loss kto: the reference's second forward, its copy made */
    if (copy && !again) b->ref_t = malloc((m->npar + m->nbuf + 1) * sizeof *b->ref_t);
    if (!save || (copy && !b->ref_t)) {
        free(save);
        b->st = VC_ERR_NOMEM;
        return -1;
    }
    memcpy(save, b->val_t, nv * sizeof *save);
    memcpy(save + nv, b->par_t, np * sizeof *save);
    memcpy(save + nv + np, b->buf_t, nb * sizeof *save);
    for (size_t p = 0; copy && p < m->npar + m->nbuf && !b->st; p++) { /* the copy: the model's dtypes */
        bool par = p < m->npar;
        vc_t src = par ? b->par_t[p] : b->buf_t[p - m->npar];
        vc_t t = again ? b->ref_t[p] : vc__new_tensor(b, b->t[src].n, (vc_dtype)b->t[src].dt);
        if (t < 0) break;
        b->t[t].persistent = true;
        if (!again) b->ref_t[b->nref++] = t;
        if (par) b->par_t[p] = t;
        else b->buf_t[p - m->npar] = t;
    }
    sc->save = save;
    sc->train = b->train;
    b->train = false;
    b->no_regions = true;
    b->adapters_off = !copy;
    return 0;
}

void vc__reference_leave(vc_build *b, vc_ref_scope *sc)
{
    const vc_model *m = b->m;
    size_t nv = m->nval + 1, np = m->npar + 1, nb = m->nbuf + 1;
    b->train = sc->train;
    b->no_regions = b->adapters_off = false;
    memcpy(b->val_t, sc->save, nv * sizeof *sc->save);
    memcpy(b->par_t, sc->save + nv, np * sizeof *sc->save);
    memcpy(b->buf_t, sc->save + nv + np, nb * sizeof *sc->save);
    free(sc->save);
    sc->save = NULL;
}

void vc__end_model_forward(vc_build *b)
{
    for (int i = 0; i < b->nmdl_keep && !b->st; i++) vc__extend_life(b, b->mdl_keep[i]);
    b->nmdl_keep = 0;
}

size_t vc__head_inst(const vc_model *m)
{
    size_t head = m->ninst;
    for (size_t i = m->ninst; i-- > 0;)
        if (!strcmp(m->inst[i].kind->name, "Linear")) {
            head = i;
            break;
        }
    if (head == m->ninst) head = m->ninst - 1;
    /* Mamba2ForCausalLM.forward (modeling_mamba2.py @ 020a37d2): lm_head(hidden_states[:, slice_indices, :].to(
     * self.lm_head.weight.dtype)): the slice before the cast, so the cast is part of the head */
    if (head > 0 && head < m->ninst && !strcmp(m->inst[head - 1].kind->name, "Cast")) head--;
    return head;
}

void vc__end_forward(vc_build *b)
{
    b->nmdl_keep = 0; /* a pass that never reached its head (an encoder, a tower): nothing more to keep */
    if (b->fwd_local >= 0) vc__extend_life(b, b->fwd_local);
    if (b->fwd_local2 >= 0) vc__extend_life(b, b->fwd_local2);
    if (b->dsa_topk >= 0) vc__extend_life(b, b->dsa_topk);
    b->fwd_local = b->fwd_local2 = b->dsa_topk = -1;
}

void vc_plan_batch_range(const vc_plan *p, int64_t *lo, int64_t *hi)
{
    *lo = p->blo;
    *hi = p->bhi;
}
size_t vc_plan_events(const vc_plan *p) { return p->nev; }
const char *vc_plan_note(const vc_plan *p) { return p->note; }

vc_grid *vc_grid_new(void) { return calloc(1, sizeof(vc_grid)); }

void vc_grid_free(vc_grid *g)
{
    if (!g) return;
    free(g->pt);
    free(g);
}

void vc_plan_use_grid(vc_plan *p, vc_grid *g) { p->memo->grid = g ? g : &p->memo->own; }

void vc_grid_set_source(vc_grid *g, vc_grid_plan_fn fn, void *ctx)
{
    g->source = fn;
    g->source_ctx = ctx;
}

void vc_plan_free(vc_plan *p)
{
    vc_build *b = p;
    if (!b) return;
    free(b->t); free(b->op); free(b->it); free(b->val_t); free(b->par_t); free(b->buf_t);
    free(b->amp_cache); free(b->part); free(b->comp); free(b->s); free(b->ev); free(b->sv); free(b->rel_off); free(b->rel);
    free(b->rrel_off); free(b->rrel); free(b->reg); free(b->hold); free(b->rhold); free(b->sac); free(b->stash); free(b->bwd); free(b->leafkeep); free(b->kvd_hold); free(b->pgrad); free(b->fwd_live);
    vc__compile_free(b->cmp);
    free(b->pedges); free(b->ref_t); free(b->parrived); free(b->ppending); free(b->owned);
    free(b->flat); free(b->unit_of); free(b->lay_mask);
    free(b->pp_held); free(b->pp_refs); free(b->pp_chunk); free(b->pp_copy); free(b->pp_live);
    if (b->lay_free) b->lay_free(b->lay_state);
    vc__memo_free(b->memo);
    for (struct vc_op *o = b->op_pool, *n; o; o = n) {
        n = o->next;
        free(o);
    }
    vc__gen_end(b);
    free(b->gen.slot);
    free(b->gen.ssm);
    free(b->fwd_keep);
    free(b);
}

int64_t vc__plan_state_floor(const vc_plan *b)
{
    bool *freed = calloc(b->ns + 1, sizeof *freed);
    if (!freed) return 0;
    for (size_t k = 0; k < b->nev; k++)
        if (b->ev[k].kind == EV_FREE) freed[b->ev[k].stor] = true;
    int64_t floor = 0;
    for (size_t s = 0; s < b->ns; s++) {
        const stor_t *x = &b->s[s];
        if (freed[s] || (x->cat != CAT_WEIGHT && x->cat != CAT_OPT) || x->comp >= 0 || x->n.ps || x->n.div > 1) continue;
        int64_t n = vc_bytes(x->n, (vc_dtype)x->dt, 1);
        if (n < 0 || __builtin_add_overflow(floor, n, &floor)) {
            floor = INT64_MAX; /* past 2^63 bytes */
            break;
        }
    }
    free(freed);
    return floor;
}
