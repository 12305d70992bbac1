#!/usr/bin/env python3
"""The Python overhead of kareus.torch's partition executor, per partition (prints figures; never
fails on time).

A tiny model (hidden 16, 2 layers, 2 sequences of 4 tokens) makes every kernel nearly free, so
what is measured is the executor's own work: the op islands (detach, enable_grad, one autograd
graph per op), the slot bookkeeping and the log. Three timings per microbatch (forward +
backward), medians of many repeats:

  executor, nanobatched   PartitionedStage with two nanobatches (8 partitions per layer + trails)
  executor, sequential    the same ops on the whole microbatch (4 segments per layer)
  plain autograd          the same model written as one autograd graph, run once per nanobatch

overhead per partition = (nanobatched − plain) / partitions. The collective's launch + wait is
timed separately on a one-rank gloo group (TPComm.launch / wait on a 4 KiB tensor), since the
executor skips collectives when TP = 1.

    KAREUS_LIB=build/libkareus.so PYTHONPATH=bindings/python /usr/bin/python3 bench/bench_torch_executor.py
"""

import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "bindings", "python"))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import kareus.torch as kt  # noqa: E402

JOB = os.path.join(HERE, "..", "examples", "data", "tiny_llama_tp2_pp2.json")


def median_us(fn, repeats):
    fn()
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return 1e6 * statistics.median(ts)


def main():
    repeats = int(os.environ.get("BENCH_REPEATS", "200"))
    torch.set_num_threads(1)
    store = tempfile.mktemp(prefix="kareus-bench-")
    dist.init_process_group("gloo", init_method="file://" + store, rank=0, world_size=1)
    cfg = kt.LlamaConfig(hidden=16, ffn=32, heads=2, kv_groups=2, layers=2, vocab=32, seq=4)
    full = kt.init_params(cfg, dtype=torch.float32)
    catalog = kt.partition_catalog(JOB)
    ex = kt.PartitionedStage(cfg, full, range(cfg.layers), 1, 0, None, catalog, True, True)
    tokens = torch.randint(0, cfg.vocab, (2, cfg.seq))
    targets = torch.randint(0, cfg.vocab, (2, cfg.seq))
    conf = {k: {"slot": list(p["slots"])[1], "sms": None} for k, p in ex.partitions.items()}

    def step(nanobatched):
        ex.log.clear()
        ex.forward_microbatch(0, tokens, conf, nanobatched, targets=targets)
        ex.backward_microbatch(0, None, conf)

    nb = median_us(lambda: step(True), repeats)
    ex.log.clear()
    step(True)
    parts = len(ex.log)
    sq = median_us(lambda: step(False), repeats)
    ex.log.clear()
    step(False)
    ref = {k: v.clone().requires_grad_(True) for k, v in full.items()}

    def plain():
        for i in range(2):  # once per nanobatch, as the executor computes
            kt.reference_loss(cfg, ref, tokens[i:i + 1], targets[i:i + 1]).backward()

    pl = median_us(plain, repeats)
    comm = kt.TPComm([[0]], 0, sms_counts=[8])
    t = torch.zeros(1024)
    launch = median_us(lambda: comm.wait(comm.launch(t, 8)), repeats * 5)
    print("kareus.torch executor overhead (torch %s, 1 thread, %d repeats, medians)" % (torch.__version__, repeats))
    print("  executor, nanobatched  %8.0f us per microbatch fwd+bwd, %d partitions (incl. trails)" % (nb, parts))
    print("  executor, sequential   %8.0f us per microbatch fwd+bwd" % sq)
    print("  plain autograd         %8.0f us for both nanobatches" % pl)
    print("  overhead per partition %8.1f us  ((nanobatched - plain) / partitions)" % ((nb - pl) / parts))
    print("  all-reduce launch+wait %8.1f us  (TPComm on a one-rank gloo group, 4 KiB)" % launch)
    dist.destroy_process_group()
    os.unlink(store)


if __name__ == "__main__":
    main()
