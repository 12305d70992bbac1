"""Collectives of the nanobatched layers: launched asynchronously at a partition's slot, with the
CTA count of the plan, completed at the partition's end.

CPU (gloo): `async_op=True`; gloo runs the collective on its own thread while the partition's
remaining ops run on the caller's; `wait()` at the partition end.

GPU (NCCL), as in reference kareus-method.md §1.3: at the slot an event is recorded on the
compute stream, the comm stream waits on it and the collective is issued from the comm stream;
at the partition end the compute stream waits on an event recorded on the comm stream after the
collective. The next partition (the other nanobatch, which consumes the result) is thus ordered
after it, and nothing blocks the host.

CTA count: one communicator per distinct count, made with ProcessGroupNCCL options
`config.max_ctas = config.min_ctas = count` where the installed torch has them (torch ≥ 2.2
exposes ncclConfig_t there); otherwise the default communicator is used and a warning is given
once. On gloo there are no CTAs: one group per count is still made (the same code path, checked
by the tests), and the count is recorded. Groups are created for the union of counts of the whole
plan, in one order on every rank, because torch.distributed.new_group is collective over the
world.

Kernel (issue 31): a plan's setting names the tuned kernel (the default) or NCCL. The tuned path
is the one above (this executor runs the tuned kernel's CTA count on an NCCL communicator of
that count: a tuned kernel of our own is not part of it). NCCL with a planned CTA count gets a
communicator of its own per count, made the same way — min/max CTAs where torch has them; where it
lacks them, the default communicator with one warning (NCCL's default CTAs). Groups are keyed by
(kernel, count); a bare count means the tuned kernel.
"""

import sys
import warnings

import torch
import torch.distributed as dist

__all__ = ["TPComm"]

_warned = set()


def _warn_once(msg):
    if msg not in _warned:
        _warned.add(msg)
        warnings.warn(msg)
        sys.stderr.flush()


def nccl_cta_options(sms):
    """ProcessGroupNCCL.Options with max_ctas = min_ctas = sms, or None (and a warning once) when
    this torch cannot set them."""
    try:
        from torch.distributed import ProcessGroupNCCL
        opts = ProcessGroupNCCL.Options()
        cfg = getattr(opts, "config", None)
        if cfg is None or not hasattr(cfg, "max_ctas"):
            raise AttributeError("ProcessGroupNCCL.Options has no config.max_ctas")
        cfg.max_ctas = int(sms)
        cfg.min_ctas = int(sms)
        return opts
    except (ImportError, AttributeError) as exc:
        _warn_once("kareus.torch: torch %s cannot set NCCL CTA counts (%s): the plan's comm SMs are recorded "
                   "but every collective uses NCCL's default CTAs" % (torch.__version__, exc))
        return None


def _kernel_count(s):
    """("tuned"|"nccl", count) of an entry of sms_counts: a count or a (kernel, count) pair."""
    if isinstance(s, (tuple, list)):
        kernel, sms = s
        if kernel not in ("tuned", "nccl"):
            raise ValueError("TPComm: kernel %r: expected \"tuned\" or \"nccl\"" % (kernel,))
        return kernel, int(sms)
    return "tuned", int(s)


class _Handle:
    __slots__ = ("work", "tensor", "event")

    def __init__(self, work, tensor, event=None):
        self.work, self.tensor, self.event = work, tensor, event


class TPComm:
    """The tensor-parallel all-reduces of one rank.

    tp_groups  list of rank lists, one per TP group, identical on every rank (world order)
    my_group   index of this rank's TP group in tp_groups
    sms_counts every CTA count the plan uses (any stage): a count (the tuned kernel) or a
               ("tuned"|"nccl", count) pair; one group per (kernel, count) and TP group
    backend    "gloo" or "nccl"; device: the CUDA device on NCCL
    """

    def __init__(self, tp_groups, my_group, sms_counts=(), backend="gloo", device=None):
        self.backend = backend
        self.cuda = backend == "nccl"
        self.ranks = tp_groups[my_group]
        self.size = len(self.ranks)
        self.default = None
        self.by_sms = {}       # (kernel, count) -> group; count -> group for the tuned kernel
        self.sms_applied = {}  # the same keys -> True if the communicator really has that CTA count
        for i, ranks in enumerate(tp_groups):  # collective: every rank makes every group
            g = dist.new_group(ranks, backend=backend)
            if i == my_group:
                self.default = g
        for kernel, sms in sorted(set(_kernel_count(s) for s in sms_counts)):
            opts = nccl_cta_options(sms) if self.cuda else None
            if kernel == "nccl" and self.cuda and opts is None:
                # NCCL without CTA control: NCCL's own default communicator (warned once above).
                self.by_sms[(kernel, sms)] = self.default
                self.sms_applied[(kernel, sms)] = False
                continue
            for i, ranks in enumerate(tp_groups):
                g = dist.new_group(ranks, backend=backend, pg_options=opts) if opts is not None else \
                    dist.new_group(ranks, backend=backend)
                if i == my_group:
                    self.by_sms[(kernel, sms)] = g
                    self.sms_applied[(kernel, sms)] = opts is not None
                    if kernel == "tuned":
                        self.by_sms[sms] = g
                        self.sms_applied[sms] = opts is not None
        if self.cuda:
            self.comm_stream = torch.cuda.Stream(device=device)

    def group(self, sms, kernel="tuned"):
        if sms is None:
            return self.default
        g = self.by_sms.get((kernel or "tuned", int(sms)))
        if g is None:
            made = sorted(k for k in self.by_sms if isinstance(k, tuple))
            raise ValueError("TPComm: no group for the %s kernel with %d comm SMs (made for %s): build TPComm "
                             "with the plan's (kernel, count) pairs" % (kernel or "tuned", sms, made))
        return g

    def all_reduce(self, t):
        """Blocking all-reduce (the sequential execution)."""
        if self.size > 1:
            dist.all_reduce(t, group=self.default)
        return t

    def launch(self, t, sms=None, kernel="tuned"):
        """Starts the all-reduce of t (in place) on the kernel's communicator of sms CTAs (None:
        the default one) and returns a handle."""
        g = self.group(sms, kernel)
        if not self.cuda:
            return _Handle(dist.all_reduce(t, group=g, async_op=True), t)
        compute = torch.cuda.current_stream()
        ready = compute.record_event()
        with torch.cuda.stream(self.comm_stream):
            self.comm_stream.wait_event(ready)
            t.record_stream(self.comm_stream)
            work = dist.all_reduce(t, group=g, async_op=True)
            work.wait()  # makes the comm stream (not the host) wait for NCCL's stream
            done = self.comm_stream.record_event()
        return _Handle(work, t, done)

    def wait(self, h):
        """Completes a launched all-reduce; returns its tensor."""
        if h.event is None:
            h.work.wait()
        else:
            torch.cuda.current_stream().wait_event(h.event)
        return h.tensor
