"""A pipeline driver for PartitionedStage: one training step of a pipeline schedule (1F1B by
default) with point-to-point sends and receives between stages, applying a Kareus plan.

The order of instructions is libkareus's (kr_sched_order, the order the plan was made for); each
instruction is bracketed by the runtime's hooks (kareus.Runtime: the instruction's SM clock is
requested, the order is checked against the plan — a rank that deviates gets the runtime's
KR_EMISMATCH with what was expected and what was found), and each partition's comm configuration
is the plan's (Runtime.comm_config per key). Sends are non-blocking (isend) and completed at the
end of the step, so the 1F1B steady state, where neighbours send to each other at the same time,
cannot deadlock; receives block, which keeps the host close to the device in 1F1B.
"""

import torch
import torch.distributed as dist

from .._native import KareusError
from .launch import schedule_order

__all__ = ["PipelineDriver"]

FWD_KEYS = ("fwd_attn", "fwd_mlp")
BWD_KEYS = ("bwd_mlp", "bwd_attn")


class PipelineDriver:
    """stage_exec  the rank's PartitionedStage
    stage, stages  pipeline stage and count; prev_rank / next_rank the global ranks to receive from
                   and send to (None at the ends)
    microbatches   per step; act_shape: [microbatch size, seq, hidden] of the activations sent
    runtime        a kareus.Runtime of this stage (None: no plan: comm_config gives the configs)
    nanobatched    False: the sequential execution (no partitions, blocking all-reduces)
    comm_config    {key: {slot, sms}} used without a runtime, or a function (kind, microbatch) → such a
                   dict (configs that change per instruction, as a plan's do)
    order          the instruction order to run (default: the schedule's; tests pass a wrong one)
    """

    def __init__(self, stage_exec, stage, stages, microbatches, act_shape, prev_rank=None, next_rank=None,
                 runtime=None, nanobatched=True, comm_config=None, schedule="1f1b", order=None, dtype=torch.float64,
                 device=None):
        self.x, self.stage, self.stages, self.m = stage_exec, stage, stages, microbatches
        self.act_shape, self.prev, self.next = list(act_shape), prev_rank, next_rank
        self.rt, self.nanobatched, self.static_cfg = runtime, nanobatched, comm_config or {}
        self.order = order or [(k, mb) for k, mb, _ in schedule_order(schedule, stages, microbatches, stage)]
        self.dtype, self.device = dtype, device
        self.applied = []  # (kind, microbatch, {key: config}) per instruction, in order

    def _static(self, keys, kind, mb):
        c = self.static_cfg(kind, mb) if callable(self.static_cfg) else self.static_cfg
        return {k: c.get(k) for k in keys}

    def _cfg(self, keys, on_plan, kind, mb):
        if self.rt is None or not on_plan:  # off the plan (a reported mismatch): the defaults
            return self._static(keys, kind, mb)
        out = {}
        for k in keys:
            try:
                out[k] = self.rt.comm_config(k)
            except KareusError as exc:  # KR_ESTATE: the step already left the plan
                if exc.name != "KR_ESTATE":
                    raise
                out[k] = self._static([k], kind, mb)[k]
        return out

    def step(self, tokens, targets):
        """One step over `microbatches` microbatches: tokens[i], targets[i] are microbatch i's
        (only the first stage reads tokens, only the last targets). Returns the summed loss on the
        last stage (each microbatch's mean loss / microbatches), else None."""
        loss, sends = 0.0, []
        for kind, mb in self.order:
            on_plan = self.rt is not None and self.rt.begin(kind, mb) == 0  # strict runtimes raise
            try:
                if kind == "forward":
                    cfg = self._cfg(FWD_KEYS, on_plan, kind, mb)
                    if self.stage == 0:
                        x = tokens[mb]
                    else:
                        x = torch.empty(self.act_shape, dtype=self.dtype, device=self.device)
                        dist.recv(x, self.prev)
                    out = self.x.forward_microbatch(mb, x, cfg, self.nanobatched, targets=targets[mb] if
                                                    self.x.last else None, loss_scale=1.0 / self.m)
                    if self.x.last:
                        loss += out
                    else:
                        sends.append(dist.isend(out.contiguous(), self.next))
                else:
                    cfg = self._cfg(BWD_KEYS, on_plan, kind, mb)
                    g = None
                    if not self.x.last:
                        g = torch.empty(self.act_shape, dtype=self.dtype, device=self.device)
                        dist.recv(g, self.next)
                    gx = self.x.backward_microbatch(mb, g, cfg)
                    if gx is not None:
                        sends.append(dist.isend(gx.contiguous(), self.prev))
                self.applied.append((kind, mb, cfg))
            finally:
                if self.rt is not None:
                    self.rt.end()
        for w in sends:
            w.wait()
        if self.rt is not None:
            self.rt.step_end()
        return loss if self.x.last else None
