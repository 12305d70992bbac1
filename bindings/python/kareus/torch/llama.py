"""A Llama-style transformer stage with Megatron tensor parallelism, executed as the partitions
of the Kareus catalog: two nanobatches, partitions in the published order, each launching the
other nanobatch's all-reduce at its configured slot.

Model (per layer): x → RMSNorm → QKV (column-parallel, grouped-query heads split over TP ranks)
→ RoPE → causal attention → output projection (row-parallel) → all-reduce (Megatron's "g") →
residual → RMSNorm → fc1 gate|up (column-parallel) → SwiGLU → fc2 (row-parallel) → all-reduce →
residual. The backward of a column-parallel linear's input is all-reduced (Megatron's "f").

Partitions. The ops of each partition key, their names and order, and the op index of every
launch slot come from libkareus (partition_catalog: what `kareus catalog --partitions` prints);
this module only implements each named op. A forward segment is [bda_mlp_prev, rmsnorm_input,
linear_qkv, qkv_post, rotary, core_attn, linear_proj] (fwd_attn) or [bda_attn, rmsnorm_pre_mlp,
linear_fc1, swiglu, linear_fc2] (fwd_mlp); backward segments are bwd_mlp [rmsnorm_input (of the
layer above), bda_mlp, linear_fc2, swiglu, linear_fc1] and bwd_attn [rmsnorm_pre_mlp, bda_attn,
linear_proj, core_attn, rotary, qkv_post, linear_qkv]. Each segment ends in the collective of its
last op. Execution (reference kareus-method.md §1.1): NB0-seg1, NB1-seg1, NB0-seg2, NB1-seg2, …;
each partition carries the collective produced by the partition before it (always the other
nanobatch's), launches it before op `slot` and completes it at its own end; a trail partition
carries the last one. The sequential execution (the reference for the tests, and what Megatron
does) runs the whole microbatch with each all-reduce blocking right after its op.

Autograd. Every op runs as its own small autograd graph ("island") on detached inputs, so a
backward segment can run any op's backward at any point and launch a collective between two ops.
Parameter gradients accumulate in .grad as usual. Full activation recomputation is not
implemented (the plan's "recompute" entries are ignored; use a job with "recompute": "none").
"""

import math

import torch
import torch.nn.functional as F

__all__ = ["LlamaConfig", "init_params", "shard_params", "reference_loss", "PartitionedStage", "FORWARD_OPS",
           "BACKWARD_OPS"]


class LlamaConfig:
    def __init__(self, hidden=256, ffn=512, heads=8, kv_groups=4, layers=4, vocab=512, seq=32, eps=1e-5,
                 rope_theta=10000.0):
        self.hidden, self.ffn, self.heads, self.kv_groups = hidden, ffn, heads, kv_groups
        self.head_dim = hidden // heads
        self.layers, self.vocab, self.seq, self.eps, self.rope_theta = layers, vocab, seq, eps, rope_theta

    @classmethod
    def from_job_model(cls, model, seq):
        """From a kareus.job spec's model object (hidden, ffn, heads, kv_groups, layers, vocab)."""
        return cls(hidden=model["hidden"], ffn=model["ffn"], heads=model["heads"], kv_groups=model["kv_groups"],
                   layers=model["layers"], vocab=model["vocab"], seq=seq)


def init_params(cfg, seed=1234, dtype=torch.float64):
    """Full (unsharded) parameters, deterministic for a seed: {name: tensor}."""
    g = torch.Generator().manual_seed(seed)
    H, hd = cfg.hidden, cfg.head_dim

    def w(*shape):
        return (torch.randn(*shape, generator=g, dtype=torch.float64) / math.sqrt(shape[-1])).to(dtype)

    p = {"embed": w(cfg.vocab, H), "final_norm": 1 + 0.1 * w(H), "head": w(cfg.vocab, H)}
    for l in range(cfg.layers):
        p["l%d.in_norm" % l] = 1 + 0.1 * w(H)
        p["l%d.wq" % l] = w(cfg.heads * hd, H)
        p["l%d.wk" % l] = w(cfg.kv_groups * hd, H)
        p["l%d.wv" % l] = w(cfg.kv_groups * hd, H)
        p["l%d.wo" % l] = w(H, cfg.heads * hd)
        p["l%d.mlp_norm" % l] = 1 + 0.1 * w(H)
        p["l%d.w_gate" % l] = w(cfg.ffn, H)
        p["l%d.w_up" % l] = w(cfg.ffn, H)
        p["l%d.w_down" % l] = w(H, cfg.ffn)
    return p


def shard_params(cfg, full, tp, t, layers):
    """The tensor-parallel shard of TP rank t for the given layers, as {local name: tensor}:
    wqkv = [q heads of t; k groups of t; v groups of t] (column-parallel), wo = its columns
    (row-parallel), w1 = [gate rows of t; up rows of t], w2 = its columns. Norms, embedding and
    head are replicated. Slicing the full model's gradients the same way gives the shard's."""
    hd = cfg.head_dim
    hq, hk, fl = cfg.heads // tp, cfg.kv_groups // tp, cfg.ffn // tp
    out = {}
    for l in layers:
        q = full["l%d.wq" % l][t * hq * hd:(t + 1) * hq * hd]
        k = full["l%d.wk" % l][t * hk * hd:(t + 1) * hk * hd]
        v = full["l%d.wv" % l][t * hk * hd:(t + 1) * hk * hd]
        out["l%d.wqkv" % l] = torch.cat([q, k, v], 0)
        out["l%d.wo" % l] = full["l%d.wo" % l][:, t * hq * hd:(t + 1) * hq * hd]
        out["l%d.w1" % l] = torch.cat([full["l%d.w_gate" % l][t * fl:(t + 1) * fl],
                                       full["l%d.w_up" % l][t * fl:(t + 1) * fl]], 0)
        out["l%d.w2" % l] = full["l%d.w_down" % l][:, t * fl:(t + 1) * fl]
        out["l%d.in_norm" % l] = full["l%d.in_norm" % l]
        out["l%d.mlp_norm" % l] = full["l%d.mlp_norm" % l]
    for n in ("embed", "final_norm", "head"):
        out[n] = full[n]
    return out


# ---- primitives (shared by the reference and the parallel model) ------------------------------

def rmsnorm(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def rope_tables(seq, dim, theta, dtype):
    inv = 1.0 / (theta ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim))
    ang = torch.outer(torch.arange(seq, dtype=torch.float64), inv)
    emb = torch.cat([ang, ang], -1)
    return emb.cos().to(dtype), emb.sin().to(dtype)


def rope(x, cos, sin):  # x [b, s, h, d]
    x1, x2 = x.chunk(2, -1)
    return x * cos[None, :, None, :] + torch.cat([-x2, x1], -1) * sin[None, :, None, :]


def causal_attention(q, k, v):  # q [b, s, hq, d], k/v [b, s, hk, d]
    rep = q.shape[2] // k.shape[2]
    q = q.transpose(1, 2)
    k, v = k.repeat_interleave(rep, 2).transpose(1, 2), v.repeat_interleave(rep, 2).transpose(1, 2)
    s = q.shape[2]
    scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    mask = torch.ones(s, s, dtype=torch.bool, device=q.device).triu(1)
    p = scores.masked_fill(mask, float("-inf")).softmax(-1)
    o = p @ v  # [b, h, s, d]
    return o.transpose(1, 2).reshape(o.shape[0], s, -1)


def swiglu(gu):
    g, u = gu.chunk(2, -1)
    return F.silu(g) * u


def reference_loss(cfg, full, tokens, targets):
    """The plain single-process model (no parallelism): mean cross-entropy of one microbatch."""
    cos, sin = rope_tables(cfg.seq, cfg.head_dim, cfg.rope_theta, full["embed"].dtype)
    x = F.embedding(tokens, full["embed"])
    b, s, hd = tokens.shape[0], tokens.shape[1], cfg.head_dim
    for l in range(cfg.layers):
        h = rmsnorm(x, full["l%d.in_norm" % l], cfg.eps)
        q = (h @ full["l%d.wq" % l].t()).view(b, s, cfg.heads, hd)
        k = (h @ full["l%d.wk" % l].t()).view(b, s, cfg.kv_groups, hd)
        v = (h @ full["l%d.wv" % l].t()).view(b, s, cfg.kv_groups, hd)
        x = x + causal_attention(rope(q, cos, sin), rope(k, cos, sin), v) @ full["l%d.wo" % l].t()
        h = rmsnorm(x, full["l%d.mlp_norm" % l], cfg.eps)
        gu = torch.cat([h @ full["l%d.w_gate" % l].t(), h @ full["l%d.w_up" % l].t()], -1)
        x = x + swiglu(gu) @ full["l%d.w_down" % l].t()
    logits = rmsnorm(x, full["final_norm"], cfg.eps) @ full["head"].t()
    return F.cross_entropy(logits.reshape(-1, cfg.vocab), targets.reshape(-1))


# ---- islands ---------------------------------------------------------------------------------

class _Island:
    """One op's autograd graph on detached inputs: fwd() runs it, bwd() its backward (parameter
    gradients accumulate in .grad) and returns the inputs' gradients."""

    __slots__ = ("leaves", "outs")

    def fwd(self, fn, *inputs):
        self.leaves = [x.detach().requires_grad_(True) for x in inputs]
        with torch.enable_grad():
            out = fn(*self.leaves)
        self.outs = out if isinstance(out, tuple) else (out,)
        res = tuple(o.detach() for o in self.outs)
        return res if isinstance(out, tuple) else res[0]

    def bwd(self, *grads):
        torch.autograd.backward(self.outs, grads)
        g = tuple(x.grad for x in self.leaves)
        self.leaves = self.outs = None
        return g if len(g) != 1 else g[0]


class _State:
    """Activations and gradients of one nanobatch (or of the whole microbatch, sequentially)."""

    def __init__(self):
        self.isl = {}
        self.v = {}

    def island(self, name, layer):
        i = _Island()
        self.isl[(name, layer)] = i
        return i


# Op names implemented, per partition key (checked against the catalog at construction).
FORWARD_OPS = {"fwd_attn": ["bda_mlp_prev", "rmsnorm_input", "linear_qkv", "qkv_post", "rotary", "core_attn",
                            "linear_proj"],
               "fwd_mlp": ["bda_attn", "rmsnorm_pre_mlp", "linear_fc1", "swiglu", "linear_fc2"]}
BACKWARD_OPS = {"bwd_mlp": ["rmsnorm_input", "bda_mlp", "linear_fc2", "swiglu", "linear_fc1"],
                "bwd_attn": ["rmsnorm_pre_mlp", "bda_attn", "linear_proj", "core_attn", "rotary", "qkv_post",
                             "linear_qkv"]}


class PartitionedStage(torch.nn.Module):
    """The layers of one pipeline stage on one TP rank, run as Kareus partitions.

    cfg, full, layers  model config, full parameters (init_params), this stage's layer indices
    tp, tp_rank, comm  TP degree, rank and its TPComm (comm may be None when tp = 1)
    catalog            partition_catalog(job) of the job (keys, ops, slot op indices)
    first, last        this stage holds the embedding / the final norm, head and loss
    """

    def __init__(self, cfg, full, layers, tp, tp_rank, comm, catalog, first, last, device=None):
        super().__init__()
        self.cfg, self.layers, self.tp, self.comm, self.first, self.last = cfg, list(layers), tp, comm, first, last
        self.hq, self.hk = cfg.heads // tp, cfg.kv_groups // tp
        if cfg.heads % tp or cfg.kv_groups % tp or cfg.ffn % tp:
            raise ValueError("tp %d: expected a divisor of heads %d, kv groups %d and ffn %d"
                             % (tp, cfg.heads, cfg.kv_groups, cfg.ffn))
        sh = shard_params(cfg, full, tp, tp_rank, self.layers)
        keep = [n for n in sh if n.startswith("l")] + (["embed"] if first else []) + \
            (["final_norm", "head"] if last else [])
        self.params = torch.nn.ParameterDict({n.replace(".", "_"): torch.nn.Parameter(sh[n].clone().to(device))
                                              for n in keep})
        self.cos, self.sin = rope_tables(cfg.seq, cfg.head_dim, cfg.rope_theta, full["embed"].dtype)
        if device is not None:
            self.cos, self.sin = self.cos.to(device), self.sin.to(device)
        self.partitions = {p["key"]: p for p in catalog}
        unknown = sorted(set(self.partitions) - set(FORWARD_OPS) - set(BACKWARD_OPS))
        if unknown:
            known = list(FORWARD_OPS) + list(BACKWARD_OPS)
            raise ValueError("the job's partitions include %s: context parallelism (cp > 1) is not implemented by "
                             "this executor (keys implemented: %s)" % (", ".join(unknown), ", ".join(known)))
        for key, ops in list(FORWARD_OPS.items()) + list(BACKWARD_OPS.items()):
            got = self.partitions.get(key)
            if got is None or got["ops"] != ops:
                raise ValueError("partition %s: the catalog's ops are %s, this executor implements %s"
                                 % (key, got and got["ops"], ops))
        self.saved = {}
        self.log = []  # one entry per partition run: what comm configuration was applied
        self._fwd = {n: getattr(self, "_f_" + n) for ops in FORWARD_OPS.values() for n in ops}
        self._bwd = {n: getattr(self, "_b_" + n) for ops in BACKWARD_OPS.values() for n in ops}

    def p(self, name, layer=None):
        return self.params[name if layer is None else "l%d_%s" % (layer, name)]

    # ---- forward ops (state s, layer l); the last op of a segment returns the tensor to reduce --

    def _f_bda_mlp_prev(self, s, l):
        s.v["x", l] = s.v["x_in"] if l == self.layers[0] else s.v["x2", l - 1] + s.v["a2", l - 1]

    def _f_rmsnorm_input(self, s, l):
        s.v["h1", l] = s.island("rmsnorm_input", l).fwd(lambda x: rmsnorm(x, self.p("in_norm", l), self.cfg.eps),
                                                         s.v["x", l])

    def _f_linear_qkv(self, s, l):
        s.v["qkv", l] = s.island("linear_qkv", l).fwd(lambda h: h @ self.p("wqkv", l).t(), s.v["h1", l])

    def _f_qkv_post(self, s, l):
        hd, hq, hk = self.cfg.head_dim, self.hq, self.hk

        def split(qkv):
            b, n = qkv.shape[0], qkv.shape[1]
            q, k, v = qkv.split([hq * hd, hk * hd, hk * hd], -1)
            return q.reshape(b, n, hq, hd), k.reshape(b, n, hk, hd), v.reshape(b, n, hk, hd)
        s.v["q", l], s.v["k", l], s.v["v", l] = s.island("qkv_post", l).fwd(split, s.v["qkv", l])

    def _f_rotary(self, s, l):
        s.v["qr", l], s.v["kr", l] = s.island("rotary", l).fwd(
            lambda q, k: (rope(q, self.cos, self.sin), rope(k, self.cos, self.sin)), s.v["q", l], s.v["k", l])

    def _f_core_attn(self, s, l):
        s.v["o", l] = s.island("core_attn", l).fwd(causal_attention, s.v["qr", l], s.v["kr", l], s.v["v", l])

    def _f_linear_proj(self, s, l):
        y = s.island("linear_proj", l).fwd(lambda o: o @ self.p("wo", l).t(), s.v["o", l])
        return ("a1", l), y

    def _f_bda_attn(self, s, l):
        s.v["x2", l] = s.v["x", l] + s.v["a1", l]

    def _f_rmsnorm_pre_mlp(self, s, l):
        s.v["h2", l] = s.island("rmsnorm_pre_mlp", l).fwd(lambda x: rmsnorm(x, self.p("mlp_norm", l), self.cfg.eps),
                                                           s.v["x2", l])

    def _f_linear_fc1(self, s, l):
        s.v["gu", l] = s.island("linear_fc1", l).fwd(lambda h: h @ self.p("w1", l).t(), s.v["h2", l])

    def _f_swiglu(self, s, l):
        s.v["sw", l] = s.island("swiglu", l).fwd(swiglu, s.v["gu", l])

    def _f_linear_fc2(self, s, l):
        y = s.island("linear_fc2", l).fwd(lambda a: a @ self.p("w2", l).t(), s.v["sw", l])
        return ("a2", l), y

    # ---- backward ops: gradients of the same names -----------------------------------------------

    def _b_rmsnorm_input(self, s, l):  # the input norm of the layer above (none for the top layer)
        up = l + 1
        s.v["gn", l] = s.isl["rmsnorm_input", up].bwd(s.v["gh1", up]) if up in s.isl_layers else None

    def _b_bda_mlp(self, s, l):
        up = l + 1
        s.v["gx3", l] = s.v["g_out"] if s.v["gn", l] is None else s.v["gx2", up] + s.v["gn", l]

    def _b_linear_fc2(self, s, l):
        s.v["gsw", l] = s.isl["linear_fc2", l].bwd(s.v["gx3", l])

    def _b_swiglu(self, s, l):
        s.v["ggu", l] = s.isl["swiglu", l].bwd(s.v["gsw", l])

    def _b_linear_fc1(self, s, l):
        return ("gh2", l), s.isl["linear_fc1", l].bwd(s.v["ggu", l])

    def _b_rmsnorm_pre_mlp(self, s, l):
        s.v["gm", l] = s.isl["rmsnorm_pre_mlp", l].bwd(s.v["gh2", l])

    def _b_bda_attn(self, s, l):
        s.v["gx2", l] = s.v["gx3", l] + s.v["gm", l]

    def _b_linear_proj(self, s, l):
        s.v["go", l] = s.isl["linear_proj", l].bwd(s.v["gx2", l])

    def _b_core_attn(self, s, l):
        s.v["gq", l], s.v["gk", l], s.v["gv", l] = s.isl["core_attn", l].bwd(s.v["go", l])

    def _b_rotary(self, s, l):
        s.v["gq0", l], s.v["gk0", l] = s.isl["rotary", l].bwd(s.v["gq", l], s.v["gk", l])

    def _b_qkv_post(self, s, l):
        s.v["gqkv", l] = s.isl["qkv_post", l].bwd(s.v["gq0", l], s.v["gk0", l], s.v["gv", l])

    def _b_linear_qkv(self, s, l):
        return ("gh1", l), s.isl["linear_qkv", l].bwd(s.v["gqkv", l])

    # ---- the partition executor --------------------------------------------------------------------

    def _segments(self, backward):
        if not backward:
            return [(key, l) for l in self.layers for key in ("fwd_attn", "fwd_mlp")]
        return [(key, l) for l in reversed(self.layers) for key in ("bwd_mlp", "bwd_attn")]

    def _slot(self, key, cfg):
        """(slot name, op index, sms, kernel) of key under cfg ({key: {slot, sms[, kernel]} or
        None}); the catalog's first slot and the default communicator when the plan has no entry."""
        c = cfg.get(key) if cfg else None
        part = self.partitions[key]
        if c is None:
            name = next(iter(part["slots"]))
            return name, part["slots"][name], None, "tuned"
        kernel = c.get("kernel") or "tuned"
        if c["slot"] == "none":
            return "none", -1, c.get("sms"), kernel
        if c["slot"] not in part["slots"]:
            raise ValueError("partition %s: slot %r is not one of %s" % (key, c["slot"], list(part["slots"])))
        return c["slot"], part["slots"][c["slot"]], c.get("sms"), kernel

    def _run(self, states, backward, cfg, nanobatched, tag):
        ops = self._bwd if backward else self._fwd
        table = BACKWARD_OPS if backward else FORWARD_OPS
        comm = self.comm
        reduce_ = comm is not None and comm.size > 1
        if not nanobatched:
            s = states[0]
            for key, l in self._segments(backward):
                for name in table[key]:
                    r = ops[name](s, l)
                    if r is not None:
                        dst, t = r
                        s.v[dst] = comm.all_reduce(t) if reduce_ else t
            return
        pending = None  # (state, destination, tensor): the collective of the previous partition
        parts = [(key, l, nb) for key, l in self._segments(backward) for nb in (0, 1)]
        for key, l, nb in parts + [("trail", None, 0)]:
            slot, at, sms, kernel = self._slot(key, cfg) if key != "trail" else ("norm_0", 0, None, "tuned")
            names = table[key] if key != "trail" else []
            carried, handle = pending, None
            pending = None
            for k, name in enumerate(names):
                if carried is not None and k == at and reduce_:
                    handle = comm.launch(carried[2], sms, kernel)
                r = ops[name](states[nb], l)
                if r is not None:
                    pending = (states[nb], r[0], r[1])
            if carried is not None:
                if reduce_:
                    if handle is None:  # slot "none" (or past the last op): after the compute
                        handle = comm.launch(carried[2], sms, kernel)
                    carried[0].v[carried[1]] = comm.wait(handle)
                else:
                    carried[0].v[carried[1]] = carried[2]
            self.log.append({"tag": tag, "key": key, "layer": l, "nb": nb, "slot": slot, "op_index": at,
                             "sms": sms, "kernel": kernel,
                             "carried": None if carried is None else "%s.%d" % carried[1]})

    # ---- a microbatch through the stage ----------------------------------------------------------

    def forward_microbatch(self, mb, x, cfg=None, nanobatched=True, targets=None, loss_scale=1.0):
        """Forward of microbatch mb: x is the token ids (first stage) or the previous stage's
        output [b, s, hidden]. Returns the output (detached) or, on the last stage, the loss
        (a float, already scaled by loss_scale). cfg: {partition key: {slot, sms} or None}."""
        full = _State()
        if self.first:
            tokens = x
            x = full.island("embed", -1).fwd(lambda: F.embedding(tokens, self.p("embed")))
        b = x.shape[0]
        if nanobatched:
            if b % 2:
                raise ValueError("microbatch of %d sequences: expected an even number to split into two nanobatches"
                                 % b)
            states = [_State(), _State()]
            for i, s in enumerate(states):
                s.v["x_in"] = x[i * b // 2:(i + 1) * b // 2]
        else:
            states = [full]
            full.v["x_in"] = x
        for s in states:
            s.isl_layers = set(self.layers)
        self._run(states, False, cfg, nanobatched, ("forward", mb))
        lastl = self.layers[-1]
        y = torch.cat([s.v["x2", lastl] + s.v["a2", lastl] for s in states], 0)
        self.saved[mb] = (full, states, nanobatched)
        if not self.last:
            return y
        loss = full.island("head", -1).fwd(
            lambda y_: F.cross_entropy((rmsnorm(y_, self.p("final_norm"), self.cfg.eps) @ self.p("head").t())
                                       .reshape(-1, self.cfg.vocab), targets.reshape(-1)) * loss_scale, y)
        return float(loss)

    def backward_microbatch(self, mb, grad_y=None, cfg=None):
        """Backward of microbatch mb: grad_y is the gradient of the output (None on the last stage,
        whose loss is differentiated). Returns the gradient of the input (None on the first
        stage). Uses the nanobatching of the forward."""
        full, states, nanobatched = self.saved.pop(mb)
        if self.last:
            grad_y = full.isl["head", -1].bwd(torch.ones((), dtype=self.cos.dtype, device=self.cos.device))
        b = grad_y.shape[0]
        if nanobatched:
            for i, s in enumerate(states):
                s.v["g_out"] = grad_y[i * b // 2:(i + 1) * b // 2]
        else:
            states[0].v["g_out"] = grad_y
        self._run(states, True, cfg, nanobatched, ("backward", mb))
        first = self.layers[0]
        gx = torch.cat([s.v["gx2", first] + s.isl["rmsnorm_input", first].bwd(s.v["gh1", first]) for s in states], 0)
        if self.first:
            full.isl["embed", -1].bwd(gx)
            return None
        return gx
