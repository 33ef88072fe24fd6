#!/usr/bin/python3
"""ep_pp_replica.py -- Megatron-Core expert parallelism under pipeline parallelism (--ep N --pp P), one
process per (stage, expert rank), measured.

P x N processes (torch.distributed, gloo, CPU). Global rank = stage x N + expert rank (the pipeline
rank outermost, as vramcalc's `ranks` and Megatron's default order "tp-cp-ep-dp-pp" lay them out:
core/parallel_state.py initialize_model_parallel, NVIDIA/Megatron-LM@d98e8a64ddf34856e74b24714e3bedb2f5a39553,
the MEG commit). Each process holds its stage of a Mixtral-style causal LM
(bench/accuracy/llm/reference.py's CausalLM on configs/mixtral_small.json with num_hidden_layers 4,
so that pp 2 gives each stage 2 decoder layers; the file is written at run time), cut as
transformer_block.py get_num_layers_to_build cuts it (the decoder layers evenly; the embedding on the
first stage; the final norm, the head and the loss on the last). Nothing is copied here:
  - every MoE block is ep_replica.py's build_moe (the plain-torch transcription of Megatron-Core's
    MoELayer and MoEAlltoAllTokenDispatcher, balanced routing), its all_gather and all_to_all_single
    over the stage's N-rank expert-parallel group (a dist.new_group per stage);
  - the stage is driven by pp_replica.py's schedule_1f1b (schedules.py
    forward_backward_pipelining_without_interleaving), with the real p2p of
    p2p_communication.py _communicate between the stages: a receive is torch.empty of the tensor's
    shape (requires_grad=True for a forward receive) filled by a gloo irecv from the same expert
    rank of the neighbouring stage, a send is a gloo isend; the combined calls
    (send_forward_recv_backward, send_backward_recv_forward) post both and wait for both before
    returning (batch_p2p_comm, wait_on_reqs), so deallocate_output_tensor runs after the send;
  - forward_step divides the last stage's loss by the number of micro-batches; backward_step is
    pp_replica.py's (custom_backward through the C++ engine);
  - the stage module is wrapped in DistributedDataParallel over the stage's expert-parallel group,
    as `--parallel ddp` models it (ep_replica.py does the same over its whole world); one bucket copy
    of the stage's gradients;
  - the optimizer is optim2x's PyTorch 2.x foreach Adam / SGD over the stage's parameters,
    zero_grad(set_to_none=True) after it.
The first stage's token ids and the last stage's labels are made once before the steps and reused
(the harness's convention, docs/contract.md). The counter is the harness's (measure.Tracker, the op
observer in 2.x compat); three steps, the peak reset at step 2's start (measure.train_steps's
protocol, with the schedule in place of one forward and backward). Every case is measured twice
(VARIANTS): weighted_swiglu_back's reading with only the compiled function's outputs (bounded) and with
ep_replica.py's Python locals kept (shown). EP_PP_LOG=DIR writes each rank's per-op timeline of steps
2-3 to DIR/rankN.log and lists the tensors Python still reaches after the steps (a diagnostic).

  ep_pp_replica.py --all                            # every case -> ep_pp_replica.json
  ep_pp_replica.py --compare --cli build/vramcalc   # the CTest ep_pp_replica: vramcalc's ranks vs the busiest
"""

import json
import os
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
ACC = os.path.dirname(HERE)
ROOT = os.path.dirname(os.path.dirname(ACC))
OUT = os.path.join(HERE, "ep_pp_replica.json")
BASE_CFG = "bench/accuracy/llm/configs/mixtral_small.json"
LAYERS = 4  # num_hidden_layers of the variant: 2 decoder layers a stage at pp 2
BOUND = 8.0  # the suite's bound (bench/accuracy/suite/README.md)

# (id, batch (per micro-batch), seq, optim, ep, pp, micro-batches, held out): fixed before measuring
CASES = [
    ("mixtral4-b2-s64-adam-ep2-pp2-m2", 2, 64, "adam", 2, 2, 2, False),
    ("mixtral4-b2-s64-adam-ep2-pp2-m4", 2, 64, "adam", 2, 2, 4, False),
    ("mixtral4-b2-s64-sgd-ep2-pp2-m2", 2, 64, "sgd", 2, 2, 2, False),
    ("mixtral4-b2-s64-sgd-ep2-pp2-m4", 2, 64, "sgd", 2, 2, 4, True),
]

# weighted_swiglu_back's reading (HOOKS.fused's region end): fused_bias_swiglu.py weighted_swiglu_back is
# one jit_fuser (torch.compile) function, so after it only its outputs live ("outputs", the bounded
# comparison); ep_replica.py's transcription keeps its locals gw = g * weights and sig = sigmoid(y1)
# alive at that reading ("locals", 2 x [rows, F] more: measured as well, shown beside)
VARIANTS = {"outputs": "outputs only (the compiled function)", "locals": "ep_replica.py's locals kept"}


def config_file(tmpdir):
    """mixtral_small.json with num_hidden_layers = LAYERS, written to `tmpdir` (the replica and
    vramcalc read the same file)."""
    with open(os.path.join(ROOT, BASE_CFG)) as f:
        d = json.load(f)
    d["num_hidden_layers"] = LAYERS
    path = os.path.join(tmpdir, "mixtral_small_4layers.json")
    with open(path, "w") as f:
        json.dump(d, f, indent=1)
    return path


def build_stage(R, cfg, model, pp, stage):
    """The stage's part of CausalLM.forward (reference.py) as a module: the embedding on the first
    stage, its decoder layers, the rotary embedding (GPTModel.forward computes it on every stage), the
    final norm, lm_head and ForCausalLMLoss on the last."""
    import torch
    import torch.nn as nn

    per = cfg.num_hidden_layers // pp
    first, last = stage == 0, stage == pp - 1

    class Stage(nn.Module):
        def __init__(self, embed_tokens, layers, rotary_emb, norm, lm_head):
            super().__init__()  # the parts are arguments: a closure over `model` would keep the other stages alive
            if first:
                self.embed_tokens = embed_tokens
            self.layers = nn.ModuleList(layers)
            self.rotary_emb = rotary_emb
            if last:
                self.norm = norm
                self.lm_head = lm_head

        def forward(self, x, labels=None):
            hidden_states = self.embed_tokens(x) if first else x
            S = hidden_states.shape[1]
            position_ids = torch.arange(0, S).unsqueeze(0)
            position_embeddings = self.rotary_emb(hidden_states, position_ids)
            for layer in self.layers:  # sdpa: no causal mask (CausalLM.forward)
                hidden_states = layer(hidden_states, None, position_embeddings, None, S, 0)
            if not last:
                return hidden_states
            hidden_states = self.norm(hidden_states)
            logits = self.lm_head(hidden_states)
            del hidden_states
            return R.for_causal_lm_loss(logits, labels, cfg.vocab_size)

    return Stage(model.embed_tokens, list(model.layers)[stage * per:(stage + 1) * per], model.rotary_emb, model.norm,
                 model.lm_head)


class GlooP2P:
    """p2p_communication.py's six calls between the stages, by gloo isend/irecv to the same expert
    rank of the neighbouring stage; each call waits for its requests (wait_on_reqs)."""

    def __init__(self, dist, torch, rank, ep, pp, stage, in_shape, out_shape):
        self.dist, self.torch = dist, torch
        self.prev = rank - ep if stage > 0 else None
        self.next = rank + ep if stage < pp - 1 else None
        self.in_shape, self.out_shape = in_shape, out_shape

    def _run(self, send_to, send, recv_from, shape, rg):
        recv, reqs = None, []
        if recv_from is not None:
            recv = self.torch.empty(shape, dtype=self.torch.float32, requires_grad=rg)
            reqs.append(self.dist.irecv(recv.detach(), src=recv_from))
        if send_to is not None and send is not None:
            reqs.append(self.dist.isend(send.detach(), dst=send_to))
        for r in reqs:
            r.wait()
        return recv

    def recv_forward(self):
        return self._run(None, None, self.prev, self.in_shape, True)

    def recv_backward(self):
        return self._run(None, None, self.next, self.out_shape, False)

    def send_forward(self, output_tensor):
        self._run(self.next, output_tensor, None, None, False)

    def send_backward(self, input_tensor_grad):
        self._run(self.prev, input_tensor_grad, None, None, False)

    def send_forward_recv_backward(self, output_tensor):
        return self._run(self.next, output_tensor, self.next, self.out_shape, False)

    def send_backward_recv_forward(self, input_tensor_grad):
        return self._run(self.prev, input_tensor_grad, self.prev, self.in_shape, True)


def rank_main(case):
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    sys.path.insert(0, ACC)
    sys.path.insert(0, os.path.join(ACC, "llm"))
    import gc
    import torch
    import torch.distributed as dist
    from torch.autograd import Variable
    import reference as R  # llm/reference.py, imported before pp_replica puts this directory (its own reference.py) first
    import ep_replica
    import measure
    import optim2x
    import pp_replica
    import vctorch

    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    ep, pp, micro = case["ep"], case["pp"], case["micro"]
    stage, erank = rank // ep, rank % ep
    groups = [dist.new_group(list(range(s * ep, (s + 1) * ep))) for s in range(pp)]  # every rank makes every group
    group = groups[stage]
    cfg = R.Config.load(case["config"])
    E, k = cfg.num_local_experts, cfg.num_experts_per_tok
    B, S, H = case["batch"], case["seq"], cfg.hidden_size
    T = B * S
    pattern = (torch.arange(T * k) % E).view(T, k)  # before the baseline: a constant of the harness
    torch.manual_seed(0)
    input_ids = torch.randint(0, cfg.vocab_size, (B, S), dtype=torch.int64)
    first, last = stage == 0, stage == pp - 1
    tr = measure.Tracker()
    vctorch.HOOKS.fused = tr.fused
    vctorch.HOOKS.read = tr.read
    gc.collect()
    tr.start(install=True)
    tr.O.opobs_set_compat_2x(1)
    model = R.CausalLM(cfg, "sdpa")
    per = cfg.num_hidden_layers // pp
    for layer in list(model.layers)[stage * per:(stage + 1) * per]:
        layer.block_sparse_moe = ep_replica.build_moe(cfg, ep, erank, group, lambda n: pattern[:n],
                                                      fused_outputs_only=case["swiglu_back"] == "outputs")
    module = build_stage(R, cfg, model, pp, stage)
    del model  # the other stages' layers are not on this rank
    gc.collect()
    ids = input_ids.clone() if first else None
    labels = input_ids.clone() if last else None
    ddp = torch.nn.parallel.DistributedDataParallel(module, process_group=group, bucket_cap_mb=25)
    opt = optim2x.make(list(ddp.parameters()), case["optim"])
    p2p = GlooP2P(dist, torch, rank, ep, pp, stage, [B, S, H], [B, S, H])

    def forward_step(input_tensor):
        if last:
            return ddp(ids if first else input_tensor, labels) / micro  # forward_step: /= num_microbatches
        return ddp(ids if first else input_tensor)

    def deallocate(out):  # pp_replica's: the last stage's loss is not sent
        if not last:
            pp_replica.deallocate_output_tensor(torch, out)

    def backward_step(input_tensor, output_tensor, output_tensor_grad):
        return pp_replica.backward_step(torch, Variable, input_tensor, output_tensor, output_tensor_grad)

    def backward_flag(on):
        tr.O.opobs_set_backward(1 if on else 0)

    ddp.train()
    for step in range(1, 4):
        if step == 2:
            tr.O.opobs_reset_peak()
            tr.reset_peak()
        if step == 2 and os.environ.get("EP_PP_LOG"):  # the per-op timeline of steps 2-3, a file a rank (a diagnostic)
            tr.O.opobs_log_open(os.path.join(os.environ["EP_PP_LOG"], "rank%d.log" % rank).encode())
        tr.tag("s%d.sched" % step)
        pp_replica.schedule_1f1b(pp, stage, micro, p2p, forward_step, backward_step, deallocate, backward_flag)
        tr.read("schedule-end")
        tr.tag("s%d.opt" % step)
        opt.step()
        tr.read("step-end")
        tr.tag("s%d.zero" % step)
        opt.zero_grad(set_to_none=True)
        tr.read("zero_grad-end")
    tr.O.opobs_log_close()
    if os.environ.get("EP_PP_LOG"):  # the tensors Python still reaches after the steps, besides parameters and states
        known = set(id(p) for p in module.parameters()) | set(id(t) for st in opt.state.values() for t in st.values()
                                                               if torch.is_tensor(t))
        for o in gc.get_objects():
            if torch.is_tensor(o) and id(o) not in known and o.numel() * o.element_size() >= 512:
                print("live", rank, tuple(o.shape), o.dtype, o.numel() * o.element_size(), file=sys.stderr)
    moe = [m for m in module.modules() if hasattr(m, "routing_map")]
    kept = sum(t.numel() * t.element_size() for m in moe for t in (m.probs, m.routing_map) if t is not None)
    rec = {"case": case["id"], "rank": rank, "stage": stage, "expert_rank": erank, "world_size": world,
           "ep": ep, "pp": pp, "micro_batches": micro, "batch": B, "seq": S, "optim": case["optim"],
           "held_out": case["held_out"], "swiglu_back": case["swiglu_back"], "params": sum(p.numel() for p in module.parameters()),
           "dispatcher_attributes_after_step": kept,
           "peak_allocated": int(tr.O.opobs_peak()),
           "peak_where": tr.O.opobs_peak_where().decode(errors="replace"), "torch": torch.__version__}
    print(json.dumps(rec))
    dist.barrier()


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_case(cfg_path, cid, batch, seq, optim, ep, pp, micro, held, swiglu_back="outputs"):
    case = {"id": cid, "batch": batch, "seq": seq, "optim": optim, "ep": ep, "pp": pp, "micro": micro,
            "held_out": held, "config": cfg_path, "swiglu_back": swiglu_back}
    port, world = str(free_port()), ep * pp
    procs = []
    for r in range(world):
        env = dict(os.environ, LD_PRELOAD=os.path.join(ACC, "libmemtrack.so"), RANK=str(r), WORLD_SIZE=str(world),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
        procs.append(subprocess.Popen([sys.executable, os.path.abspath(__file__), "--rank", json.dumps(case)],
                                      env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    recs = []
    for p in procs:
        out, err = p.communicate(timeout=1800)
        if p.returncode:
            raise SystemExit("ep_pp_replica.py: %s failed: %s" % (cid, err.strip().splitlines()[-3:]))
        for line in err.splitlines():
            if line.startswith("live "):  # the EP_PP_LOG diagnostic
                print(line, file=sys.stderr)
        rec = json.loads(out.strip().splitlines()[-1])
        rec.pop("config", None)
        recs.append(rec)
    return recs


def vramcalc_ranks(cli, cfg_path, batch, seq, optim, ep, pp, micro):
    out = subprocess.run([cli, cfg_path, "-f", "json", "--seq", str(seq), "-b", str(batch), "-o", optim,
                          "--workspace", "0", "--attention", "math", "--ep", str(ep), "--pp", str(pp),
                          "--gpus", str(ep * pp), "--micro-batches", str(micro), "--parallel", "ddp"],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)["ranks"]


def compare(cli, variant="outputs"):
    """Each vramcalc rank kind against the busiest measured process of its stages (the records of
    `variant`); 1 when one is off by more than BOUND percent or a case lacks a process."""
    with open(OUT) as f:
        recs = [r for r in json.load(f)["records"] if r["swiglu_back"] == variant]
    print("weighted_swiglu_back: %s" % VARIANTS[variant])
    print("| case | rank kind (stages) | held out | measured busiest rank (B) | same-stage spread (B) | vramcalc (B) | diff (B) | diff |")
    print("|---|---|---|---|---|---|---|---|")
    worst, bad = 0.0, 0
    with tempfile.TemporaryDirectory() as tmp:
        cfg_path = config_file(tmp)
        for cid, batch, seq, optim, ep, pp, micro, held in CASES:
            rs = [r for r in recs if r["case"] == cid]
            if len(rs) != ep * pp:
                print("| %s | missing ranks | | | | | | |" % cid)
                bad += 1
                continue
            for rk in vramcalc_ranks(cli, cfg_path, batch, seq, optim, ep, pp, micro):
                lo, hi = rk["stages"]
                peaks = [r["peak_allocated"] for r in rs if lo <= r["stage"] <= hi]
                meas = max(peaks)
                est = rk["memory"]["peak_allocated"]
                d = (est - meas) / meas * 100
                worst = max(worst, abs(d))
                bad += abs(d) > BOUND
                print("| %s | %s (%s) | %s | %s | %s | %s | %+d | %+.2f%% |" % (
                    cid, rk["kind"], "%d" % lo if lo == hi else "%d-%d" % (lo, hi), "yes" if held else "",
                    format(meas, ","), format(meas - min(peaks), ","), format(est, ","), est - meas, d))
    print("worst |diff| %.2f%% (bound %.0f%%)" % (worst, BOUND))
    return 1 if bad else 0


def main(argv):
    if argv[:1] == ["--rank"]:
        return rank_main(json.loads(argv[1]))
    if argv[:1] == ["--all"]:
        subprocess.run(["make", "-s", "-C", ACC], check=True)
        recs = []
        with tempfile.TemporaryDirectory() as tmp:
            cfg_path = config_file(tmp)
            for variant in VARIANTS:
                for c in CASES:
                    rs = run_case(cfg_path, *c, swiglu_back=variant)
                    recs += rs
                    print(c[0], variant, [(r["stage"], r["peak_allocated"]) for r in rs], file=sys.stderr)
        with open(OUT, "w") as f:
            json.dump({"source": "NVIDIA/Megatron-LM@d98e8a64ddf34856e74b24714e3bedb2f5a39553",
                       "config": BASE_CFG + " with num_hidden_layers %d" % LAYERS, "records": recs}, f, indent=1)
            f.write("\n")
        return 0
    if argv[:1] == ["--compare"]:
        cli = argv[argv.index("--cli") + 1] if "--cli" in argv else os.path.join(ROOT, "build", "vramcalc")
        rc = compare(cli)
        print()
        compare(cli, "locals")  # ep_replica.py's own transcription: shown, not bounded
        return rc
    print(__doc__.strip().splitlines()[-2].strip(), file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
