#!/usr/bin/env python3
"""A two-stage pipeline-parallel training loop in PyTorch (CPU) with a Kareus plan applied.

Each pipeline stage runs in its own thread, as each stage would run in its own process on its
own GPU: activations go forward and gradients back through queues (standing for the pipeline's
point-to-point sends), and each stage executes Megatron's 1F1B order. Every forward and backward
is wrapped in `rt.instruction(kind, microbatch)`, the hook that sets the stage's GPU clock for
that instruction (on the runtime's worker thread) and checks that the job follows the plan.

By default the GPUs are the Kareus simulator's (backend "sim"), so this runs anywhere; with
`--backend nvml` it drives real GPUs (stage s on device s), which needs root or CAP_SYS_ADMIN;
`--backend fake:…` uses the test fake (stage s on its device s).

Without --plan, a demo plan is written first: hand-picked clocks for the built-in default job
(2 stages, 8 microbatches, 1F1B) — an illustration, not an optimised plan; `kareus solve` (from
instruction options) and `kareus optimize` make real ones, which --plan takes. The tiny MLP
here stands in for the model: its "comm configs" are looked up and printed as a Megatron layer
would use them, but it has no tensor-parallel collective to apply them to.

At the end the example checks what the backend recorded: the instruction order it ran equals
the plan's, and the clocks the backend applied are the plan's clocks (exactly, with --verify,
which waits for the worker after each hook; otherwise as a subsequence, since the latest request
wins), followed by the restore. It exits 1 if any check fails.

    /usr/bin/python3 examples/train_pipeline.py [--steps 3] [--verify] [--json out.json]
"""

import argparse
import json
import os
import queue
import sys
import tempfile
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "bindings", "python"))

import kareus  # noqa: E402

try:
    import torch
except ImportError:  # pragma: no cover - reported to the caller
    sys.stderr.write("train_pipeline.py: PyTorch is not installed (Debian: apt install python3-torch)\n")
    sys.exit(77)

STAGES = 2
MICROBATCHES = 8
MB_SIZE = 16


def one_f_one_b(stages, stage, microbatches):
    """Megatron's 1F1B order for one stage: warm-up forwards, then forward/backward pairs, then
    the remaining backwards."""
    warmup = min(stages - stage - 1, microbatches)
    order = [("forward", i) for i in range(warmup)]
    for i in range(microbatches - warmup):
        order += [("forward", warmup + i), ("backward", i)]
    order += [("backward", i) for i in range(microbatches - warmup, microbatches)]
    return order


def write_demo_plan(path):
    """A plan for the default job with hand-picked clocks (the first stage, which waits in the
    pipeline's bubbles, runs its forwards slower), and comm configs for every partition."""
    clocks = {0: {"forward": 1290, "backward": 1410}, 1: {"forward": 1410, "backward": 1350}}
    fwd_comm = [{"key": "fwd_attn", "slot": "rope_0", "sms": 12}, {"key": "fwd_mlp", "slot": "activation_0", "sms": 9}]
    bwd_comm = [{"key": "bwd_mlp", "slot": "linear_0", "sms": 12}, {"key": "bwd_attn", "slot": "attn_0", "sms": 12}]
    recompute = [{"key": "fwd_attn", "slot": "norm_0", "sms": 6}, {"key": "fwd_mlp", "slot": "linear_0", "sms": 6}]
    stages = []
    for s in range(STAGES):
        ins = []
        for kind, mb in one_f_one_b(STAGES, s, MICROBATCHES):
            i = {"kind": kind, "microbatch": mb, "chunk": 0, "freq_mhz": clocks[s][kind]}
            if kind == "forward":
                i["comm"] = fwd_comm
            else:
                i["comm"], i["recompute"] = bwd_comm, recompute
            ins.append(i)
        stages.append({"stage": s, "instructions": ins})
    plan = {"schema": "kareus.plan", "version": 1, "method": "demo", "variant": "kareus",
            "job": {"name": "default", "stages": STAGES, "microbatches": MICROBATCHES, "schedule": "1f1b"},
            "stages": stages}
    with open(path, "w") as f:
        json.dump(plan, f, indent=1)


def dedupe(seq):
    """Consecutive duplicates removed: the runtime coalesces a request equal to the previous one."""
    out = []
    for x in seq:
        if not out or out[-1] != x:
            out.append(x)
    return out


def is_subsequence(small, big):
    it = iter(big)
    return all(any(x == y for y in it) for x in small)


class Stage(threading.Thread):
    """One pipeline stage: its model, optimizer, runtime and 1F1B loop."""

    def __init__(self, stage, args, rt, fwd_q, bwd_q, data, target):
        super().__init__(name="stage%d" % stage)
        self.stage, self.args, self.rt = stage, args, rt
        self.fwd_q, self.bwd_q, self.data, self.target = fwd_q, bwd_q, data, target
        torch.manual_seed(stage)
        if stage == 0:
            self.model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.Tanh(), torch.nn.Linear(64, 64),
                                             torch.nn.Tanh())
        else:
            self.model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.Tanh(), torch.nn.Linear(64, 1))
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.05)
        self.ran = []      # (kind, microbatch, chunk) as executed, every step
        self.losses = []   # stage 1: loss per step
        self.comm_seen = {}
        self.error = None

    def run(self):
        try:
            self.loop()
        except BaseException as exc:  # reported by the main thread
            self.error = exc

    def loop(self):
        rt, M = self.rt, MICROBATCHES
        for step in range(self.args.steps):
            saved, step_loss = {}, 0.0
            for kind, mb in one_f_one_b(STAGES, self.stage, M):
                with rt.instruction(kind, mb):
                    if self.args.verify:
                        rt.sync()  # wait for the clock to be applied: makes the clock log exact
                    key = "fwd_attn" if kind == "forward" else "bwd_attn"
                    self.comm_seen.setdefault((kind, key), rt.comm_config(key))
                    if kind == "backward":
                        self.comm_seen.setdefault(("recompute", "fwd_attn"), rt.comm_config("fwd_attn", recompute=True))
                    if kind == "forward" and self.stage == 0:
                        y = self.model(self.data[mb])
                        saved[mb] = y
                        self.fwd_q.put(y.detach())
                    elif kind == "forward":
                        x = self.fwd_q.get().requires_grad_()
                        loss = torch.nn.functional.mse_loss(self.model(x), self.target[mb]) / M
                        saved[mb] = (x, loss)
                        step_loss += loss.item()
                    elif self.stage == 1:
                        x, loss = saved.pop(mb)
                        loss.backward()
                        self.bwd_q.put(x.grad)
                    else:
                        saved.pop(mb).backward(self.bwd_q.get())
                self.ran.append((kind, mb, 0))
            rt.step_end()
            self.opt.step()
            self.opt.zero_grad()
            if self.stage == 1:
                self.losses.append(step_loss)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--plan", help="plan file (default: write a demo plan for the default job)")
    ap.add_argument("--backend", default="sim:activity=0.6",
                    help="backend spec: sim[:…] (default), nvml (stage s on GPU s), fake:…")
    ap.add_argument("--job", default="default", help="job the plan is validated against ('' for none)")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--verify", action="store_true", help="wait for each clock change, then check the log exactly")
    ap.add_argument("--json", help="write what ran, what was applied and the energy figures here")
    ap.add_argument("--lock-dir", default=None)
    args = ap.parse_args()
    torch.set_num_threads(1)

    tmp = tempfile.TemporaryDirectory()
    plan_path = args.plan or os.path.join(tmp.name, "demo-plan.json")
    if not args.plan:
        write_demo_plan(plan_path)
    plan = kareus.Plan(plan_path, job=args.job or None)  # validated by the C library
    print("kareus %s (%s); plan %s: method %s, job %s, %d stages x %d microbatches"
          % (kareus.version(), kareus.library_path, plan_path, plan.method, plan.job_name, plan.num_stages,
             plan.num_microbatches))

    torch.manual_seed(0)
    data = [torch.randn(MB_SIZE, 32) for _ in range(MICROBATCHES)]
    target = [x.sum(dim=1, keepdim=True).tanh() for x in data]
    fwd_q, bwd_q = queue.Queue(), queue.Queue()
    # Stage s drives device s (the simulator gives each runtime a GPU of its own: device 0).
    backend = args.backend
    if backend.startswith("fake") and "devices=" not in backend:
        backend += (":" if backend == "fake" else ",") + "devices=%d" % STAGES
    sim = backend.startswith("sim")
    runtimes = [kareus.Runtime(plan_path, stage=s, device=0 if sim else s, backend=backend, job=args.job or None,
                               lock_dir=args.lock_dir)
                for s in range(STAGES)]
    stages = [Stage(s, args, runtimes[s], fwd_q, bwd_q, data, target) for s in range(STAGES)]
    for st in stages:
        st.start()
    for st in stages:
        st.join()
    for st in stages:
        if st.error is not None:
            raise st.error

    failures, report = [], {"plan": plan_path, "backend": args.backend, "steps": args.steps, "stages": []}
    for s, (st, rt) in enumerate(zip(stages, runtimes)):
        rt.sync(timeout_s=2.0)  # the last clock applied, the last step's energy final
        status, energy = rt.status(), rt.energy()
        rt.close()              # restores the clocks found at open
        try:
            log = rt.clock_log()
        except kareus.KareusError:  # kareusd, nvml: the backend keeps no log (kareusd's own may)
            log = None
        want_order = [tuple(x) for x in plan.order(s)] * args.steps
        want_clocks = dedupe([(f, f) for f in plan.clocks(s) * args.steps])
        if st.ran != want_order:
            failures.append("stage %d: ran %s, plan says %s" % (s, st.ran[:6], want_order[:6]))
        if status["mismatched_steps"] or status["mode"] != "control":
            failures.append("stage %d: status %s (%s)" % (s, status["mode"], status["reason"]))
        if log is not None:
            applied, restore = log[:-1], log[-1:]
            if args.verify and applied != want_clocks:
                failures.append("stage %d: applied clocks %s, plan %s" % (s, applied, want_clocks))
            if not is_subsequence(applied, want_clocks) or not applied or applied[-1] != want_clocks[-1]:
                failures.append("stage %d: applied clocks %s are not the plan's %s in order" % (s, applied, want_clocks))
            if restore != [(0, 0)]:
                failures.append("stage %d: expected the lock removed at close, log ends with %s" % (s, restore))
        print("\nstage %d on %s (%s): %d steps, %d clock requests, %d coalesced, %d applied, then %s at close"
              % (s, status["backend"], status["device_name"], status["steps"], status["clock_requests"],
                 status["clock_coalesced"], status["clock_sets"],
                 "clocks restored (this backend keeps no clock log)" if log is None
                 else "lock removed" if restore == [(0, 0)] else restore))
        print("  comm configs seen: %s" % {"%s/%s" % k: v for k, v in st.comm_seen.items()})
        if energy["available"]:
            print("  energy: last step %.4f J over %.4f s; %d steps %.4f J over %.4f s"
                  % (energy["step_energy_j"], energy["step_time_s"], energy["steps"], energy["total_energy_j"],
                     energy["total_time_s"]))
            print("  per instruction (last step; window-quantized: interpolated between counter changes, "
                  "observed every %.1f ms):" % (1e3 * energy["counter_period_s"]))
            for i in energy["instructions"][:4]:
                print("    %-8s mb %d  %4d MHz  %8.3f ms  %s J  (%d counter changes inside)"
                      % (i["kind"], i["microbatch"], i["freq_mhz"], 1e3 * i["time_s"],
                         "%.5f" % i["energy_j"] if i["energy_j"] is not None else "n/a", i["counter_updates"]))
            if len(energy["instructions"]) > 4:
                print("    … %d more" % (len(energy["instructions"]) - 4))
        report["stages"].append({"stage": s, "ran": st.ran, "plan_order": want_order, "clock_log": log,
                                 "plan_clocks": plan.clocks(s), "status": status, "energy": energy})
    losses = stages[1].losses
    print("\nloss per step: %s" % ", ".join("%.4f" % x for x in losses))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    if failures:
        print("\nCHECKS FAILED:\n  " + "\n  ".join(failures))
        return 1
    if any(r["clock_log"] is None for r in report["stages"]):
        print("checks passed: instruction order matches the plan; the %s backend keeps no clock log, so the "
              "applied clocks are for its side to check" % status["backend"])
        return 0
    print("checks passed: instruction order and applied clocks match the plan%s; clocks restored at close"
          % (" exactly" if args.verify else " (as a subsequence: the latest request wins)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
