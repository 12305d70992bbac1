#!/usr/bin/env python3
"""A small Llama-style model trained with pipeline × tensor parallelism under torchrun, applying
both halves of a Kareus plan: the SM clock of every pipeline instruction (through the runtime)
and the comm configuration of every partition (launch slot and CTA count of the all-reduce the
partition carries for the other nanobatch).

    kareus optimize --job examples/data/tiny_llama_tp2_pp2.json --methods kareus --out out
    /usr/bin/python3 -m torch.distributed.run --nproc_per_node 4 --redirects 1 --tee 1 \
        examples/train_llama_tp_pp.py --plan out/plans/kareus/fastest.json \
        --backend 'fake:devices=4,log=calls-{rank}.log'

The launcher options are the ones torch 1.13 (Debian's python3-torch, what scripts/setup.sh
installs) and newer both accept: --nproc_per_node (1.13 does not know --nproc-per-node);
--redirects 1 --tee 1 (each rank's stdout to a log and the console; 1.13 on Python 3.11 cannot
parse its own default "0"); the default single-node rendezvous on 127.0.0.1:29500 (not
--standalone, which always takes port 29400); another port with --master_port P or
PET_MASTER_PORT=P. tests/cli/test_torch_doc_commands.sh runs these lines as written.

The job spec gives the model (hidden 256, 8 heads, 4 KV groups, 4 layers), TP × PP (2 × 2), the
microbatch size, sequence length and microbatches; its layers_per_stage split the model. Every
rank finds its stage, TP rank and GPU from torchrun's or Slurm's variables through libkareus
(kareus.torch.rank_info / gpu_device); CPU runs use gloo (the CI path), `--device cuda` uses NCCL
with one GPU per rank.

--check runs the acceptance comparison instead of training: for every launch slot and two CTA
counts of every partition key (microbatch i at count i mod 2), one nanobatched step (of PP
microbatches, which covers 1F1B's warm-up, steady state and cool-down) must give the loss and parameter gradients of the
sequential tensor-parallel step, and both those of the single-process reference model.
--json writes what this rank did (clocks the backend recorded, comm configs applied per
partition, losses, the comparison) to FILE with {rank} replaced.
"""

import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "bindings", "python"))

try:
    import torch
    import torch.distributed as dist
except ImportError:  # pragma: no cover
    sys.stderr.write("train_llama_tp_pp.py: PyTorch is not installed (Debian: apt install python3-torch)\n")
    sys.exit(77)

import kareus  # noqa: E402
import kareus.torch as kt  # noqa: E402
from kareus.torch.llama import FORWARD_OPS, BACKWARD_OPS  # noqa: E402


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--job", default=os.path.join(HERE, "data", "tiny_llama_tp2_pp2.json"))
    ap.add_argument("--plan", help="plan file (kareus optimize / kareus solve) for the job; none: no runtime")
    ap.add_argument("--backend", default="fake:devices=4", help="GPU control backend spec ({rank} is replaced)")
    ap.add_argument("--lock-dir", default=None)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--sequential", action="store_true", help="no nanobatching: Megatron's sequential TP")
    ap.add_argument("--sms", default=None, help="comm SMs for every partition without a plan (e.g. 12)")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--dtype", default="float64", choices=["float64", "float32", "bfloat16"])
    ap.add_argument("--verify", action="store_true", help="wait for the runtime's worker after each hook (exact "
                                                          "clock logs, for tests)")
    ap.add_argument("--check", action="store_true", help="the acceptance comparison instead of training")
    ap.add_argument("--deviate", type=int, default=-1, help="(test) this rank runs its schedule out of order")
    ap.add_argument("--json", default=None)
    return ap.parse_args()


def main():
    a = parse_args()
    with open(a.job) as f:
        job = json.load(f)
    par = job["parallelism"]
    tp, pp, mbs, seq, m = par["tp"], par["pp"], job["microbatch_size"], job["seq_len"], job["num_microbatches"]
    cfg = kt.LlamaConfig.from_job_model(job["model"], seq)
    dtype = getattr(torch, a.dtype)
    plan = kareus.Plan(a.plan, job=a.job) if a.plan else None

    info = kt.rank_info(tp=tp, cp=par.get("cp", 1), pp=pp, plan_stages=plan.num_stages if plan else 0)
    rank, world = info["rank"], info["world_size"]
    device = None
    if a.device == "cuda":
        torch.cuda.set_device(info["local_device"])
        device = torch.device("cuda", info["local_device"])
    if not dist.is_initialized():
        dist.init_process_group("nccl" if a.device == "cuda" else "gloo", rank=rank, world_size=world)

    # Every rank's coordinates, from the library's decomposition: TP groups and pipeline neighbours.
    coords = [kt.rank_info(tp=tp, cp=par.get("cp", 1), pp=pp, env={"RANK": r, "WORLD_SIZE": world,
                                                                   "LOCAL_RANK": 0, "LOCAL_WORLD_SIZE": 1})
              for r in range(world)]
    groups = {}
    for r, c in enumerate(coords):
        groups.setdefault((c["cp_rank"], c["dp_rank"], c["pp_rank"]), []).append(r)
    tp_groups = [sorted(g) for _, g in sorted(groups.items())]
    my_group = next(i for i, g in enumerate(tp_groups) if rank in g)

    def neighbour(dstage):
        for r, c in enumerate(coords):
            if (c["tp_rank"], c["cp_rank"], c["dp_rank"]) == (info["tp_rank"], info["cp_rank"], info["dp_rank"]) \
                    and c["pp_rank"] == info["stage"] + dstage:
                return r
        return None

    stage = info["stage"]
    if plan:
        # (kernel, CTA count) of every setting of the plan: one communicator each (TPComm).
        sms_counts = sorted({(c.get("kernel", "tuned"), c["sms"]) for s in range(plan.num_stages)
                             for i in plan.instructions(s) for c in i.get("comm", []) + i.get("recompute", [])})
    else:
        sms_counts = [("tuned", int(a.sms))] if a.sms else []
    catalog = kt.partition_catalog(a.job)
    check_sms = []
    if a.check:
        sms_list = job.get("planning", {}).get("sms_allreduce") or [3, 30]
        check_sms = [min(sms_list), max(sms_list)]
    comm = kt.TPComm(tp_groups, my_group, sorted(set(sms_counts) | {("tuned", s) for s in check_sms}),
                     backend="nccl" if a.device == "cuda" else "gloo", device=device)

    first_layer = sum(job["layers_per_stage"][:stage])
    layers = range(first_layer, first_layer + job["layers_per_stage"][stage])
    full = kt.init_params(cfg, seed=1234, dtype=dtype)
    ex = kt.PartitionedStage(cfg, full, layers, tp, info["tp_rank"], comm, catalog, stage == 0, stage == pp - 1,
                             device=device)
    g = torch.Generator().manual_seed(99)
    tokens = [torch.randint(0, cfg.vocab, (mbs, seq), generator=g) for _ in range(m)]
    targets = [torch.randint(0, cfg.vocab, (mbs, seq), generator=g) for _ in range(m)]
    if device is not None:
        tokens, targets = [t.to(device) for t in tokens], [t.to(device) for t in targets]
    shape = (mbs, seq, cfg.hidden)
    report = {"rank": rank, "stage": stage, "tp_rank": info["tp_rank"], "launcher": info["launcher"],
              "layers": list(layers), "world_size": world}

    if a.check:  # pp microbatches are enough for 1F1B's warm-up, steady state and cool-down
        report["check"] = check(ex, cfg, full, layers, tp, info, tokens[:pp], targets[:pp], shape, stage, pp, pp,
                                neighbour, catalog, check_sms)
    else:
        train(a, ex, plan, info, tokens, targets, shape, stage, pp, m, neighbour, report, dtype, device)
    if a.json:
        with open(a.json.replace("{rank}", str(rank)), "w") as f:
            json.dump(report, f, indent=1)
    dist.barrier()
    dist.destroy_process_group()


def train(a, ex, plan, info, tokens, targets, shape, stage, pp, m, neighbour, report, dtype, device):
    rt = None
    if plan:
        dev, uuid = kt.gpu_device(info, a.backend.replace("{rank}", str(info["rank"])))
        rt = kareus.Runtime(a.plan, stage, dev, backend=a.backend.replace("{rank}", str(info["rank"])), job=a.job,
                            lock_dir=a.lock_dir, strict=True)
        report.update(device=dev, uuid=uuid, plan_clocks=plan.clocks(stage), plan_order=plan.order(stage),
                      plan_comm=[i.get("comm", []) for i in plan.instructions(stage)])
    static = {k: {"slot": next(iter(p["slots"])), "sms": int(a.sms)} for p in ex.partitions.values()
              for k in [p["key"]]} if a.sms else {}
    order = None
    if a.deviate == info["rank"]:
        order = [(k, mb) for k, mb, _ in kt.schedule_order("1f1b", pp, m, stage)]
        order[0], order[1] = order[1], order[0]
    drv = kt.PipelineDriver(ex, stage, pp, m, shape, neighbour(-1), neighbour(+1), runtime=rt,
                            nanobatched=not a.sequential, comm_config=static, order=order, dtype=dtype, device=device)
    if rt is not None and a.verify:
        begin = rt.begin

        def begin_and_wait(kind, mb, chunk=0):
            rc = begin(kind, mb, chunk)
            rt.sync()
            return rc
        rt.begin = begin_and_wait
    opt = torch.optim.SGD(ex.parameters(), lr=a.lr)
    losses, times = [], []
    try:
        for step in range(a.steps):
            opt.zero_grad(set_to_none=True)
            if device is not None:
                torch.cuda.synchronize()
            t0 = time.perf_counter()
            loss = drv.step(tokens, targets)
            if device is not None:
                torch.cuda.synchronize()
            times.append(time.perf_counter() - t0)
            opt.step()
            if loss is not None:
                losses.append(loss)
                if info["tp_rank"] == 0:
                    print("step %d: loss %.6f (%.1f ms)" % (step, loss, 1e3 * times[-1]), flush=True)
    except kareus.KareusError as exc:
        sys.stderr.write("rank %d: %s\n" % (info["rank"], exc))
        report["error"] = {"name": exc.name, "message": str(exc)}
        if a.json:
            with open(a.json.replace("{rank}", str(info["rank"])), "w") as f:
                json.dump(report, f, indent=1)
        if rt is not None:
            rt.close()  # restore the clocks before leaving
        os._exit(3)  # the other ranks wait for this one's sends: end the job
    if rt is not None:
        rt.sync(timeout_s=0.5)
        report["status"] = {k: v for k, v in rt.status().items() if isinstance(v, (int, str))}
        e = rt.energy()
        report["energy"] = {k: e[k] for k in ("available", "steps", "total_time_s", "total_energy_j")}
        rt.close()
        report["clock_log"] = rt.clock_log()
    report.update(losses=losses, step_times_s=times, nanobatched=not a.sequential,
                  applied=[{"kind": k, "microbatch": mb, "comm": cfg} for k, mb, cfg in drv.applied],
                  partitions=ex.log)


def rel(a, b):
    d = (a - b).abs().max().item()
    n = b.abs().max().item()
    return d / n if n > 0 else d


def grads_of(ex):
    return {n: p.grad.detach().clone() for n, p in ex.params.items()}


def check(ex, cfg, full, layers, tp, info, tokens, targets, shape, stage, pp, m, neighbour, catalog, check_sms):
    """The acceptance comparison; returns the measured relative differences and what was covered."""
    # Reference: the single-process model on the whole step, its gradients sliced to this shard.
    ref = {k: v.clone().requires_grad_(True) for k, v in full.items()}
    ref_loss = sum(kt.reference_loss(cfg, ref, tokens[i], targets[i]) / m for i in range(m))
    ref_loss.backward()
    ref_sh = kt.shard_params(cfg, {k: v.grad for k, v in ref.items()}, tp, info["tp_rank"], layers)
    ref_grads = {n.replace(".", "_"): ref_sh[n] for n in ref_sh if n.replace(".", "_") in ex.params}

    def run(nanobatched, cfg_):
        for p in ex.params.values():
            p.grad = None
        drv = kt.PipelineDriver(ex, stage, pp, m, shape, neighbour(-1), neighbour(+1), nanobatched=nanobatched,
                                comm_config=cfg_)
        ex.log.clear()
        loss = drv.step(tokens, targets)
        return loss, grads_of(ex), list(ex.log)

    seq_loss, seq_grads, _ = run(False, {})
    out = {"reference_loss": float(ref_loss), "sequential_loss": seq_loss,
           "seq_vs_ref_grad": max(rel(seq_grads[n], ref_grads[n]) for n in seq_grads),
           "seq_vs_ref_loss": abs(seq_loss - float(ref_loss)) / abs(float(ref_loss)) if seq_loss is not None else None,
           "runs": []}
    keys = list(FORWARD_OPS) + list(BACKWARD_OPS)
    parts = {p["key"]: p for p in catalog}
    nslots = max(len(parts[k]["slots"]) for k in keys)
    # Run r gives every key its slot r (mod its slot count); microbatch i runs at CTA count
    # check_sms[i % 2], so the configs change between instructions as a plan's do and each run
    # covers both counts.
    for r in range(nslots):
        def conf(kind, mb, r=r):
            return {k: {"slot": list(parts[k]["slots"])[r % len(parts[k]["slots"])],
                        "sms": check_sms[mb % len(check_sms)]} for k in keys}
        loss, grads, log = run(True, conf)
        applied = {(e["tag"][1], e["key"], e["slot"], e["sms"]) for e in log if e["key"] != "trail"}
        want = {(mb, k, c["slot"], c["sms"]) for mb in range(m) for kind in ("forward", "backward")
                for k, c in conf(kind, mb).items() if (k in FORWARD_OPS) == (kind == "forward")}
        out["runs"].append({"configs": [conf("forward", mb) for mb in range(m)], "loss": loss,
                            "vs_seq_loss": abs(loss - seq_loss) / abs(seq_loss) if loss is not None else None,
                            "vs_seq_grad": max(rel(grads[n], seq_grads[n]) for n in grads),
                            "vs_ref_grad": max(rel(grads[n], ref_grads[n]) for n in grads),
                            "applied_as_configured": applied == want,
                            "partitions": len(log)})
    out["covered"] = sorted({(k, c["slot"], c["sms"]) for run_ in out["runs"] for cf in run_["configs"]
                             for k, c in cf.items()})
    return out


if __name__ == "__main__":
    main()
