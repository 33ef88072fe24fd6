#!/usr/bin/python3
"""ep_replica.py -- Megatron-Core expert parallelism (--ep N), one process per rank, measured.

Each rank is a real process (torch.distributed, gloo, CPU) running a Mixtral-style causal LM
(bench/accuracy/llm/reference.py's CausalLM on a config.json) whose MoE blocks are replaced by a
plain-torch replica of Megatron-Core's MoELayer on one expert-parallel rank, written from the
source (NVIDIA/Megatron-LM@d98e8a64ddf34856e74b24714e3bedb2f5a39553; nothing from vramcalc's
engine was read for it):
  - moe/moe_layer.py MoELayer.forward: custom_forward (route, preprocess, dispatch,
    routed_experts_compute, combine, postprocess), with its locals as written there;
  - moe/router.py TopKRouter.gating / routing (no aux loss: moe_aux_loss_coeff's default 0,
    no z-loss, no jitter) and moe/moe_utils.py RouterGatingLinearFunction (the non-TE mm path),
    topk_routing_with_score_function (softmax after topk, the scatters);
  - moe/token_dispatcher.py MoEAlltoAllTokenDispatcher (dropless, tp 1): preprocess's splits,
    dispatch_preprocess (self.probs, self.routing_map kept), token_dispatch (tokens, then
    probs), dispatch_postprocess, combine_preprocess, token_combine, combine_postprocess;
  - moe/moe_utils.py permute / unpermute (unfused, argsort path) and sort_chunks_by_idxs;
  - tensor_parallel/mappings.py _AllToAll (a real all_to_all_single over gloo here);
  - moe/experts.py SequentialMLP.forward, transformer/mlp.py MLP.forward with
    per_token_scale, fusions/fused_bias_swiglu.py WeightedSwiGLUFunction (its jit-fused kernels
    as one operator each: the harness's HOOKS.fused);
  - the local (non-Transformer-Engine) linear: tensor_parallel/layers.py
    LinearWithGradAccumulationAndAsyncCommunication (saves input and weight; matmul).
Routing is made balanced as vramcalc assumes: top-k runs on the real logits, then the selected
indices are overwritten in place (.data, outside autograd) so that assignment j = t k + s goes
to expert j mod E; every rank then receives T k rows, T k / El per local expert.
The rank's model is wrapped in DistributedDataParallel (as --parallel ddp models it) and
stepped with optim2x's foreach Adam / SGD; the measured peak is the harness's (bench/accuracy
/README.md), steps 2-3.

  ep_replica.py --all                       # every case -> ep_replica.json
  ep_replica.py --compare --cli build/vramcalc   # the CTest ep_replica: vramcalc vs the busiest rank
"""

import json
import os
import socket
import subprocess
import sys

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
ACC = os.path.dirname(HERE)
ROOT = os.path.dirname(os.path.dirname(ACC))
OUT = os.path.join(HERE, "ep_replica.json")
CFG = "bench/accuracy/llm/configs/mixtral_small.json"
BOUND = 8.0  # the suite's bound (bench/accuracy/suite/README.md)

# (id, batch, seq, optim, ep, held out)
CASES = [
    ("mixtral_small-b2-s64-adam-ep2", 2, 64, "adam", 2, False),
    ("mixtral_small-b2-s64-sgd-ep2", 2, 64, "sgd", 2, False),
    ("mixtral_small-b4-s32-adam-ep4", 4, 32, "adam", 4, False),
    ("mixtral_small-b1-s128-sgd-ep4", 1, 128, "sgd", 4, True),
]


def build_moe(cfg, ep, rank, group, pattern_of, fused_outputs_only=True):
    """One rank's MoELayer. fused_outputs_only (the default, as Megatron runs it): weighted_swiglu_back's
    reading (the fused region's end) holds only what the jit_fuser'd function returns (input_grad,
    weights_grad), one fused kernel with no intermediate tensors; its Python locals gw and sig are dropped
    inside the region. False keeps them (ep_pp_replica.py's second set of runs shows their effect)."""
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    import vctorch

    E, H, F, k = cfg.num_local_experts, cfg.hidden_size, cfg.intermediate_size, cfg.num_experts_per_tok
    El = E // ep

    class AllToAll(torch.autograd.Function):
        """mappings.py _AllToAll."""

        @staticmethod
        def forward(ctx, input, output_split_sizes, input_split_sizes):
            ctx.output_split_sizes, ctx.input_split_sizes = output_split_sizes, input_split_sizes
            input = input.contiguous()
            output = input.new_empty(size=[sum(output_split_sizes)] + list(input.size()[1:]), dtype=input.dtype)
            dist.all_to_all_single(output, input, output_split_sizes=output_split_sizes,
                                   input_split_sizes=input_split_sizes, group=group)
            return output

        @staticmethod
        def backward(ctx, grad):
            return AllToAll.apply(grad, ctx.input_split_sizes, ctx.output_split_sizes), None, None

    class RouterGatingLinear(torch.autograd.Function):
        """moe_utils.py RouterGatingLinearFunction, the torch.mm path (router_dtype = input dtype)."""

        @staticmethod
        def forward(ctx, inp, weight):
            ctx.save_for_backward(inp, weight)
            return torch.mm(inp, weight.t())

        @staticmethod
        def backward(ctx, grad_output):
            inp, weight = ctx.saved_tensors
            return torch.mm(grad_output, weight), torch.mm(grad_output.t(), inp)

    class Linear(torch.autograd.Function):
        """tensor_parallel/layers.py LinearWithGradAccumulationAndAsyncCommunication (tp 1, no
        gradient_accumulation_fusion): saves input and weight."""

        @staticmethod
        def forward(ctx, input, weight):
            ctx.save_for_backward(input, weight)
            return torch.matmul(input, weight.t())

        @staticmethod
        def backward(ctx, grad_output):
            input, weight = ctx.saved_tensors
            grad_input = grad_output.matmul(weight)
            grad_weight = grad_output.t().matmul(input)
            return grad_input, grad_weight

    class WeightedSwiGLU(torch.autograd.Function):
        """fused_bias_swiglu.py WeightedSwiGLUFunction: saves input and weights; weighted_swiglu and
        weighted_swiglu_back are torch.compile'd (jit_fuser), one operator each here."""

        @staticmethod
        def forward(ctx, input, weights):
            ctx.save_for_backward(input, weights)
            with vctorch.HOOKS.fused("weighted_swiglu"):
                y1, y2 = torch.chunk(input, 2, -1)
                res = (nn.functional.silu(y1) * y2 * weights).to(input.dtype)
            return res

        @staticmethod
        def backward(ctx, g):
            y, weights = ctx.saved_tensors
            with vctorch.HOOKS.fused("weighted_swiglu_back"):
                y1, y2 = torch.chunk(y, 2, -1)
                gw = g * weights
                sig = torch.sigmoid(y1)
                input_grad = torch.cat((gw * sig * (1 + y1 * (1 - sig)) * y2, gw * sig * y1), -1).to(y.dtype)
                weights_grad = torch.sum(nn.functional.silu(y1) * y2 * g, dim=-1, keepdim=True).to(weights.dtype)
                if fused_outputs_only:
                    del gw, sig
            return input_grad, weights_grad

    class MLP(nn.Module):
        """transformer/mlp.py MLP (gated, bias-free): linear_fc1 [2F, H], linear_fc2 [H, F]."""

        def __init__(self):
            super().__init__()
            self.fc1 = nn.Parameter(torch.randn(2 * F, H) * 0.02)
            self.fc2 = nn.Parameter(torch.randn(H, F) * 0.02)

        def forward(self, hidden_states, per_token_scale):
            intermediate_parallel = Linear.apply(hidden_states, self.fc1)
            intermediate_parallel = WeightedSwiGLU.apply(intermediate_parallel, per_token_scale.unsqueeze(-1))
            return Linear.apply(intermediate_parallel, self.fc2)

    class MoELayer(nn.Module):
        def __init__(self):
            super().__init__()
            self.router_weight = nn.Parameter(torch.randn(E, H) * 0.02)
            self.local_experts = nn.ModuleList([MLP() for _ in range(El)])
            self.probs = self.routing_map = None

        # ---- router.py TopKRouter.forward -> routing -> topk_routing_with_score_function
        def route(self, hidden_states):
            logits = RouterGatingLinear.apply(hidden_states.view(-1, H), self.router_weight)
            scores, top_indices = torch.topk(logits, k=k, dim=1, sorted=True)
            top_indices.data.copy_(pattern_of(top_indices.shape[0]))  # balanced routing (module docstring)
            probs = torch.softmax(scores, dim=-1, dtype=torch.float32)
            probs = probs.type_as(logits)
            routing_probs = torch.zeros_like(logits).scatter(1, top_indices, probs)
            routing_map = torch.zeros_like(logits).int().scatter(1, top_indices, 1).bool()
            return routing_probs, routing_map

        # ---- token_dispatcher.py MoEAlltoAllTokenDispatcher
        def dispatch_preprocess(self, hidden_states, routing_map, probs):
            self.hidden_shape = hidden_states.shape
            self.probs = probs
            self.routing_map = routing_map
            hidden_states = hidden_states.view(-1, self.hidden_shape[-1])
            num_local_tokens_per_expert = routing_map.sum(dim=0).long()
            self.num_out_tokens = routing_map.size(0) * k
            self.input_splits = num_local_tokens_per_expert.reshape(ep, El).sum(axis=1)
            gathered = [torch.empty_like(num_local_tokens_per_expert) for _ in range(ep)]
            dist.all_gather(gathered, num_local_tokens_per_expert, group=group)  # gather_from_sequence_parallel_region
            num_global_tokens_per_expert = torch.cat(gathered).reshape(ep, 1, E).transpose(0, 1)
            num_global_tokens_per_local_expert = num_global_tokens_per_expert[
                :, :, rank * El:(rank + 1) * El].contiguous()
            num_global_tokens_per_rank = num_global_tokens_per_local_expert.sum(axis=2)
            self.output_splits = num_global_tokens_per_rank[0]
            self.tokens_per_expert = num_global_tokens_per_local_expert.sum(dim=(0, 1))
            if El > 1:
                self.num_global_tokens_per_local_expert = num_global_tokens_per_local_expert.view(-1, El)
            # _maybe_dtoh_and_synchronize: the splits to the host
            self.input_splits = self.input_splits.tolist()
            self.output_splits = self.output_splits.tolist()
            self.hidden_shape_before_permute = hidden_states.shape
            permutated_local_input_tokens, permuted_probs, self.reversed_local_input_permutation_mapping = \
                self.permute(hidden_states, self.routing_map, probs, self.num_out_tokens)
            return permutated_local_input_tokens, permuted_probs

        @staticmethod
        def permute(tokens, routing_map, probs, num_out_tokens):
            """moe_utils.py permute (not fused, not drop_and_pad)."""
            num_tokens, hidden = tokens.shape
            routing_map = routing_map.bool().T.contiguous()
            flat_sorted = routing_map.reshape(-1).argsort(descending=True, stable=True)
            flat_sorted = flat_sorted[:num_out_tokens]
            sorted_indices = flat_sorted % num_tokens
            permuted_probs = probs.T.contiguous().reshape(-1)[flat_sorted]
            permuted_input = tokens.index_select(0, sorted_indices)
            return permuted_input, permuted_probs, sorted_indices

        @staticmethod
        def sort_chunks_by_idxs(input, split_sizes, sorted_idxs):
            input = torch.split(input, split_sizes, dim=0)
            return torch.cat([input[i] for i in sorted_idxs], dim=0)

        def token_dispatch(self, permutated_local_input_tokens, permuted_probs):
            global_input_tokens = AllToAll.apply(permutated_local_input_tokens, self.output_splits, self.input_splits)
            global_probs = AllToAll.apply(permuted_probs, self.output_splits, self.input_splits)
            return global_input_tokens, global_probs

        def dispatch_postprocess(self, global_input_tokens, global_probs):
            if El > 1:
                sizes = self.num_global_tokens_per_local_expert.ravel().tolist()
                order = list(range(ep * El))
                order = [order[r * El + j] for j in range(El) for r in range(ep)]  # sort_input_by_local_experts
                global_input_tokens = self.sort_chunks_by_idxs(global_input_tokens, sizes, order)
                global_probs = self.sort_chunks_by_idxs(global_probs, sizes, order)
            return global_input_tokens, self.tokens_per_expert, global_probs

        def combine_preprocess(self, hidden_states):
            if El > 1:
                sizes = self.num_global_tokens_per_local_expert.T.ravel().tolist()
                order = [j * ep + r for r in range(ep) for j in range(El)]  # restore_output_by_local_experts
                hidden_states = self.sort_chunks_by_idxs(hidden_states, sizes, order)
            return hidden_states

        def token_combine(self, hidden_states):
            return AllToAll.apply(hidden_states, self.input_splits, self.output_splits)

        def combine_postprocess(self, permutated_local_input_tokens):
            output = self.unpermute(permutated_local_input_tokens, self.reversed_local_input_permutation_mapping,
                                    self.hidden_shape_before_permute)
            return output.view(self.hidden_shape)

        @staticmethod
        def unpermute(permuted_tokens, sorted_indices, restore_shape):
            """moe_utils.py unpermute (not fused, no probs, not deterministic)."""
            _, hidden = restore_shape
            input_dtype = permuted_tokens.dtype
            output_tokens = torch.zeros(restore_shape, dtype=permuted_tokens.dtype)
            output_tokens.scatter_add_(0, sorted_indices.unsqueeze(1).expand(-1, hidden), permuted_tokens)
            out = output_tokens.to(dtype=input_dtype)
            del output_tokens, permuted_tokens, sorted_indices
            return out

        # ---- experts.py SequentialMLP.forward
        def experts(self, permuted_local_hidden_states, tokens_per_expert, permuted_probs):
            if El == 1:
                return self.local_experts[0](permuted_local_hidden_states, permuted_probs)
            tokens_per_expert = tokens_per_expert.tolist()
            tokens_list = torch.split(permuted_local_hidden_states, tokens_per_expert)
            probs_list = torch.split(permuted_probs, tokens_per_expert)
            output_local_list = []
            for expert, tokens, probs in zip(self.local_experts, tokens_list, probs_list):
                output_local_list.append(expert(tokens, probs))
            return torch.cat(output_local_list, dim=0)

        # ---- moe_layer.py MoELayer.forward (custom_forward)
        def forward(self, hidden_states):
            probs, routing_map = self.route(hidden_states)
            hidden_states, probs = self.dispatch_preprocess(hidden_states, routing_map, probs)
            dispatched_input, probs = self.token_dispatch(hidden_states, probs)
            dispatched_input_, tokens_per_expert, permuted_probs = self.dispatch_postprocess(dispatched_input, probs)
            expert_output = self.experts(dispatched_input_, tokens_per_expert, permuted_probs)
            output = self.combine_preprocess(expert_output)
            del expert_output, dispatched_input_, permuted_probs  # routed_experts_compute returns
            output = self.token_combine(output)
            output = self.combine_postprocess(output)
            return output, None

    return MoELayer()


def rank_main(case):
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    sys.path.insert(0, ACC)
    sys.path.insert(0, os.path.join(ACC, "llm"))
    import gc
    import torch
    import torch.distributed as dist
    import measure
    import optim2x
    import reference as R
    import vctorch

    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    cfg = R.Config.load(os.path.join(ROOT, CFG))
    E, k, ep = cfg.num_local_experts, cfg.num_experts_per_tok, case["ep"]
    T = case["batch"] * case["seq"]
    pattern = (torch.arange(T * k) % E).view(T, k)  # made before the baseline: a constant of the harness
    torch.manual_seed(0)
    input_ids = torch.randint(0, cfg.vocab_size, (case["batch"], case["seq"]), dtype=torch.int64)
    tr = measure.Tracker()
    vctorch.HOOKS.fused = tr.fused
    vctorch.HOOKS.read = tr.read
    gc.collect()
    tr.start(install=True)
    tr.O.opobs_set_compat_2x(1)
    model = R.CausalLM(cfg, "sdpa")
    group = dist.group.WORLD  # ep == world: one expert-parallel group
    for layer in model.layers:
        layer.block_sparse_moe = build_moe(cfg, ep, rank, group, lambda n: pattern[:n])
    gc.collect()
    ids = input_ids.clone()
    labels = ids.clone()
    ddp = torch.nn.parallel.DistributedDataParallel(model, bucket_cap_mb=25)
    opt = optim2x.make(list(ddp.parameters()), case["optim"])
    ddp.train()
    measure.train_steps(tr, lambda: ddp(ids, labels=labels)[0], opt, 3)  # the logits are dropped at once
    rec = {"case": case["id"], "rank": rank, "world_size": world, "ep": ep, "batch": case["batch"],
           "seq": case["seq"], "optim": case["optim"], "held_out": case["held_out"],
           "params": sum(p.numel() for p in model.parameters()),
           "peak_allocated": int(tr.O.opobs_peak()),
           "peak_where": tr.O.opobs_peak_where().decode(errors="replace"), "torch": torch.__version__}
    print(json.dumps(rec))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_case(cid, batch, seq, optim, ep, held):
    case = {"id": cid, "batch": batch, "seq": seq, "optim": optim, "ep": ep, "held_out": held}
    port = str(free_port())
    procs = []
    for r in range(ep):
        env = dict(os.environ, LD_PRELOAD=os.path.join(ACC, "libmemtrack.so"), RANK=str(r), WORLD_SIZE=str(ep),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
        procs.append(subprocess.Popen([sys.executable, os.path.abspath(__file__), "--rank", json.dumps(case)],
                                      env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    recs = []
    for p in procs:
        out, err = p.communicate(timeout=900)
        if p.returncode:
            raise SystemExit("ep_replica.py: %s failed: %s" % (cid, err.strip().splitlines()[-1:]))
        recs.append(json.loads(out.strip().splitlines()[-1]))
    return recs


def vramcalc(cli, batch, seq, optim, ep):
    out = subprocess.run([cli, os.path.join(ROOT, CFG), "-f", "json", "--seq", str(seq), "-b", str(batch), "-o", optim,
                          "--workspace", "0", "--attention", "math", "--gpus", str(ep), "--ep", str(ep), "--parallel", "ddp"],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)["memory"]["peak_allocated"]


def main(argv):
    if argv[:1] == ["--rank"]:
        return rank_main(json.loads(argv[1]))
    if argv[:1] == ["--all"]:
        subprocess.run(["make", "-s", "-C", ACC], check=True)
        recs = []
        for c in CASES:
            recs += run_case(*c)
            print(c[0], [r["peak_allocated"] for r in recs if r["case"] == c[0]], file=sys.stderr)
        with open(OUT, "w") as f:
            json.dump({"source": "NVIDIA/Megatron-LM@d98e8a64ddf34856e74b24714e3bedb2f5a39553", "config": CFG,
                       "records": recs}, f, indent=1)
            f.write("\n")
        return 0
    if argv[:1] == ["--compare"]:
        cli = argv[argv.index("--cli") + 1] if "--cli" in argv else os.path.join(ROOT, "build", "vramcalc")
        with open(OUT) as f:
            recs = json.load(f)["records"]
        print("| case | held out | measured busiest rank (B) | vramcalc (B) | diff (B) | diff |")
        print("|---|---|---|---|---|---|")
        worst, bad = 0.0, 0
        for cid, batch, seq, optim, ep, held in CASES:
            rs = [r for r in recs if r["case"] == cid]
            if len(rs) != ep:
                print("| %s | missing | | | | |" % cid)
                bad += 1
                continue
            meas = max(r["peak_allocated"] for r in rs)
            est = vramcalc(cli, batch, seq, optim, ep)
            d = (est - meas) / meas * 100
            worst = max(worst, abs(d))
            bad += abs(d) > BOUND
            print("| %s | %s | %s | %s | %+d | %+.2f%% |" % (cid, "yes" if held else "", format(meas, ","), format(est, ","),
                                                           est - meas, d))
        print("worst |diff| %.2f%% (bound %.0f%%)" % (worst, BOUND))
        return 1 if bad else 0
    print(__doc__.strip().splitlines()[-2].strip(), file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
