#!/usr/bin/env python3
"""fsdp2_gpu.py -- real FSDP2 (torch 2.x fully_shard) on one CUDA GPU, rank 0 of a fake world.

    export CUBLAS_WORKSPACE_CONFIG=:0:0
    for c in "0 - -" "1 - -" "2 - -" "4 - -" "2 bfloat16 float32" "4 bfloat16 float32" \\
             "1 bfloat16 float32" "4 bfloat16 -"; do python3 fsdp2_gpu.py $c; done

Arguments: world size (0: no FSDP, one GPU), MixedPrecisionPolicy's param_dtype and reduce_dtype
("-": None), then optionally fully_shard's reshard_after_forward for every call ("-": not given,
"true", "false" or an int) and the offload policy ("-" or "cpu": CPUOffloadPolicy(), pin_memory
True; the model is then built on the CPU, as fully_shard requires). Prints [world, param_dtype,
reduce_dtype, peak bytes] (and the two extra arguments when given).

Not runnable on the CPU machine (torch 1.13 has no FSDP2); run on a GPU machine with torch 2.x
(fsdp2_gpu.json: torch 2.11.0+cu130 on an H200). This is FSDP2 itself, not a replica:
torch.distributed's "fake" backend (torch.testing._internal.distributed.fake_pg, which FSDP2's own
memory tests use) gives a process group of any world size whose collectives do nothing, so rank 0
allocates what it would in a real world of that size (NCCL allocates nothing through PyTorch's
allocator). The model is bench/accuracy/models/mlp.json in plain torch (Linear 1024->4096, ReLU,
Linear 4096->1024, batch 64, fp32 input), fully_shard on each Linear then on the root, Adam
(CUDA default: foreach), `model(x).float().mean()`, three steps, zero_grad(set_to_none=True); the
peak is torch.cuda.max_memory_allocated() over steps 2 and 3, less what was allocated before the
model. cuBLAS's workspace is off (CUBLAS_WORKSPACE_CONFIG=:0:0): compare with vramcalc
--workspace 0 --attention math --batch 64 [--gpus W --parallel fsdp2 ...].
"""
import torch,sys,json
import torch.nn as nn, torch.distributed as dist
W=int(sys.argv[1]);P=sys.argv[2];R=sys.argv[3]
A=sys.argv[4] if len(sys.argv)>4 else "-";C=sys.argv[5] if len(sys.argv)>5 else "-"
d=torch.device("cuda",0);torch.cuda.set_device(d);torch.manual_seed(0)
b=torch.cuda.memory_allocated()
m=nn.Sequential(nn.Linear(1024,4096),nn.ReLU(),nn.Linear(4096,1024))
if C=="-":m=m.to(d)
if W:
 from torch.testing._internal.distributed.fake_pg import FakeStore
 from torch.distributed.device_mesh import init_device_mesh
 from torch.distributed.fsdp import fully_shard,MixedPrecisionPolicy,CPUOffloadPolicy,OffloadPolicy
 dist.init_process_group("fake",rank=0,world_size=W,store=FakeStore())
 me=init_device_mesh("cuda",(W,))
 mp=MixedPrecisionPolicy(param_dtype=getattr(torch,P) if P!="-" else None,reduce_dtype=getattr(torch,R) if R!="-" else None)
 kw={} if A=="-" else {"reshard_after_forward":{"true":True,"false":False}.get(A) if A in("true","false") else int(A)}
 kw["offload_policy"]=CPUOffloadPolicy() if C=="cpu" else OffloadPolicy()
 for x in (m[0],m[2]):fully_shard(x,mesh=me,mp_policy=mp,**kw)
 fully_shard(m,mesh=me,mp_policy=mp,**kw)
x=torch.randn(64,1024,device=d);o=torch.optim.Adam(m.parameters())
for s in range(3):
 if s==1:torch.cuda.synchronize();torch.cuda.reset_peak_memory_stats()
 l=m(x).float().mean();l.backward();del l;o.step();o.zero_grad(set_to_none=True)
torch.cuda.synchronize()
print(json.dumps([W,P,R,torch.cuda.max_memory_allocated()-b]+([A,C] if len(sys.argv)>4 else [])))
