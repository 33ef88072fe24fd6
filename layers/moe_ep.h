/*
 * moe_ep.h — the SparseMoE kind on one Megatron-Core expert-parallel rank
 * (--ep N, layers/moe_ep.c; docs/parallel.md section 6). Private to layers/.
 */
#ifndef VC_MOE_EP_H
#define VC_MOE_EP_H

#include "layer.h"

typedef struct {
    int64_t hidden, inter, E, k, ep; /* hidden size, moe_ffn_hidden_size, experts, top-k, EP ranks */
    double imbalance;                /* --moe-imbalance: the busiest expert's share over the even one */
} vc_moe_ep;

/* The parameters of one rank's MoELayer: router.weight [E, H] and, per local
 * expert, linear_fc1.weight [2F, H] (gate and up fused) and linear_fc2.weight
 * [H, F]; refuses (vc_fail, message "--ep: ...") what is not modelled. */
int vc__moe_ep_setup(vc_setup *s, const vc_moe_ep *c, bool silu, bool shared, bool renorm);
/* MoELayer.forward with the all-to-all dispatcher and SequentialMLP experts. */
void vc__moe_ep_emit(vc_build *b, const vc_moe_ep *c);
/* llm.c: nn.Linear without bias on `rows` rows (mm saving x and the weight). */
vc_t vc__lin_rows(vc_build *b, vc_t x, vc_t w, vc_numel rows, int64_t out);

#endif
