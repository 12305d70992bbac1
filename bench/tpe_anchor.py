#!/usr/bin/env python3
"""tpe_anchor.py — Optuna's multi-objective TPE next to `bo` at equal measurement counts (issue 16).

Not part of the product: Optuna lives in the bench's own virtual environment (created on first
use with `python3 -m venv` and `pip install optuna`; --venv DIR, default bench/.venv-tpe, ignored
by git).

For every kareus-variant partition of the jobs and seeds 1..S:
  * the exhaustive frontier (`kareus search --strategy exhaustive`) is the reference;
  * `kareus search --partition KEY --seed s` (bo, default options, no prior) gives bo's count n
    and its evaluated points;
  * TPE (optuna.samplers.TPESampler(seed=s), objectives time, effective energy and total
    energy, categorical clock / slot / comm SMs) asks configurations until n distinct ones were
    measured, each through `kareus partition eval --json` (a repeated configuration is answered
    from the run's cache and not counted);
  * Q = HV(found) / HV(exhaustive frontier) in both planes, the bench's tight box (nadir + 10 %
    of the reference frontier's range).
Prints per partition the medians and, over all runs, in how many bo is at least as good as TPE
in both planes. Figures only.

With --perturbed G (issue 16, round 2): the same pairing on G perturbed simulated GPUs, bench_search's
"GPU" construction (its 16 constants, each uniform within the same ± half-widths, clamped the same
way; seeded here with Python's random.Random(4242 + g), so GPUs other than bench_search's): the
job runs on a GPU entry `{"base": <the job's GPU>, "params": {perturbed values}}`, the exhaustive
frontier of that GPU is the reference, bo runs with `--prior` the nominal GPU entry (the search
never sees the perturbed constants), and TPE (which has no prior) measures the perturbed GPU.

usage: tpe_anchor.py --kareus build/kareus [--seeds 2] [--jobs default,llama3.2-3b-cp2tp4-mbs8-s4096]
                     [--perturbed G]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile


def ensure_optuna(venv):
    try:
        import optuna  # noqa: F401
        return
    except ImportError:
        pass
    py = os.path.join(venv, "bin", "python3")
    if not os.path.exists(py):
        subprocess.check_call([sys.executable, "-m", "venv", venv])
        subprocess.check_call([py, "-m", "pip", "install", "-q", "optuna"])
    os.execv(py, [py] + sys.argv)


def run_json(cmd):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def pareto(pts, P):
    """(t, y) Pareto points of pts [(t, E)] in the plane y = E - P t, sorted by t."""
    q = sorted((t, e - P * t) for t, e in pts)
    front, best = [], float("inf")
    for t, y in q:
        if y < best:
            front.append((t, y))
            best = y
    return front


def hv(front, rt, ry):
    area, prev_t = 0.0, None
    # front sorted by t ascending, y descending
    pts = [(t, y) for t, y in front if t < rt and y < ry]
    for i, (t, y) in enumerate(pts):
        t_next = pts[i + 1][0] if i + 1 < len(pts) else rt
        area += (t_next - t) * (ry - y)
    return area


def quality(ref_pts, pts, P):
    f = pareto(ref_pts, P)
    t0, t1 = f[0][0], f[-1][0]
    y_fast, y_slow = f[0][1], f[-1][1]
    rt, ry = t1 + 0.1 * (t1 - t0), y_fast + 0.1 * (y_fast - y_slow)
    if len(f) == 1:
        rt, ry = t1 * 1.1, y_fast * 1.1
    h_ref = hv(f, rt, ry)
    return hv(pareto(pts, P), rt, ry) / h_ref if h_ref > 0 else 1.0


# bench_search.c's perturbed constants, in its order (the order of the draws); each half-width is
# the catalog's stated uncertainty (`kareus catalog --gpu G --json`: params.<name>.uncertainty).
PERTS = ["gemm_eff", "attn_eff", "attn_bwd_eff", "v_max", "v_exp", "dyn_coeff_w", "tuned_cta_Bps",
         "tuned_cap_frac", "busbw_per_cta_Bps", "comm_clock_exp", "host_op_s", "launch_s", "sync_s",
         "kappa_tensor", "mem_eff", "attn_activity"]


def perturbed_jobs(K, job, g, tmp):
    """(job spec path on perturbed GPU g, nominal GPU entry path) for built-in job `job`."""
    import random
    spec = f"{tmp}/{job}.json"
    subprocess.run([K, "job", "write", "--job", job, "--out", spec], check=True, capture_output=True)
    js = json.load(open(spec))
    gname = js["gpu"] if isinstance(js["gpu"], str) else js["gpu"]["name"]
    cat = run_json([K, "catalog", "--gpu", gname, "--json"])["params"]
    r = random.Random(4242 + g)
    params = {}
    for name in PERTS:
        rel = cat[name]["uncertainty"]
        params[name] = cat[name]["value"] * (1 + rel * (2 * r.random() - 1))
    for name in ("tuned_cap_frac",):
        params[name] = min(params[name], 1.0)
    for name in ("gemm_eff", "attn_eff", "attn_bwd_eff", "mem_eff"):
        params[name] = min(params[name], 0.98)
    params["v_max"] = max(params["v_max"], cat["v_min"]["value"] + 0.02)
    gpu = {"schema": "kareus.gpu", "version": 1, "name": f"perturbed-{g}", "base": gname,
           "params": {k: {"value": v, "source": f"tpe_anchor.py perturbed GPU {g}"} for k, v in params.items()}}
    gpath = f"{tmp}/gpu-{g}.json"
    json.dump(gpu, open(gpath, "w"))
    js["gpu"] = {"file": gpath}
    jpath = f"{tmp}/{job}-gpu{g}.json"
    json.dump(js, open(jpath, "w"))
    npath = f"{tmp}/nominal-{gname}.json"
    json.dump({"schema": "kareus.gpu", "version": 1, "name": f"{gname}-nominal", "base": gname, "params": {}},
              open(npath, "w"))
    return jpath, npath


def median(v):
    v = sorted(v)
    n = len(v)
    return v[n // 2] if n % 2 else 0.5 * (v[n // 2 - 1] + v[n // 2])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kareus", required=True)
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--jobs", default="default,llama3.2-3b-cp2tp4-mbs8-s4096")
    ap.add_argument("--perturbed", type=int, default=0)
    ap.add_argument("--venv", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".venv-tpe"))
    a = ap.parse_args()
    ensure_optuna(a.venv)
    import optuna
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    K = a.kareus
    wins = runs = 0
    print(f"Optuna {optuna.__version__} TPE (multi-objective: time, effective energy, total energy) vs bo at bo's "
          f"count; seeds 1-{a.seeds}; Q = HV found / HV exhaustive, eff | total")
    print(f"{'job':30s} {'key':11s} {'space':>5s} {'n':>5s} | {'bo Q_eff Q_tot':>15s} | {'TPE Q_eff Q_tot':>15s}")
    with tempfile.TemporaryDirectory() as tmp:
        cases = [(job, job, [], "") for job in a.jobs.split(",")] if a.perturbed == 0 else []
        for g in range(a.perturbed):
            for job in a.jobs.split(","):
                jpath, npath = perturbed_jobs(K, job, g, tmp)
                cases.append((job, jpath, ["--prior", npath], f" gpu{g}"))
        for name, job, prior, tag in cases:
            ex = run_json([K, "search", "--job", job, "--strategy", "exhaustive", "--partition", "all",
                           "--variant", "kareus", "--log", "none", "--out", f"{tmp}/ex", "--json", "--quiet"])
            for part in ex["partitions"]:
                if part["variant"] != "kareus":
                    continue
                key = part["key"]
                fr = json.load(open(f"{tmp}/ex/{part['json']}"))
                P = fr["static_power_w"]
                ref = [(p["time_s"], p["energy_j"]) for p in fr["points"]]
                clocks = sorted({p["freq_mhz"] for p in fr["points"]})
                slots = sorted({p["slot"] for p in fr["points"]})
                sms = sorted({p["sms"] for p in fr["points"]})
                rows = []
                for s in range(1, a.seeds + 1):
                    bo = run_json([K, "search", "--job", job, "--partition", key, "--seed", str(s), "--log", "none",
                                   "--out", f"{tmp}/bo", "--json", "--quiet"] + prior)
                    n = bo["partitions"][0]["measurements"]
                    bf = json.load(open(f"{tmp}/bo/{bo['partitions'][0]['json']}"))
                    bpts = [(p["time_s"], p["energy_j"]) for p in bf["points"]]
                    cache = {}

                    def objective(trial):
                        c = (trial.suggest_categorical("freq", clocks), trial.suggest_categorical("slot", slots),
                             trial.suggest_categorical("sms", sms))
                        if c not in cache:
                            r = run_json([K, "partition", "eval", "--job", job, "--partition", key, "--freq",
                                          str(c[0]), "--slot", c[1], "--sms", str(c[2]), "--json"])
                            cache[c] = (r["time_s"], r["energy_j"])
                        t, e = cache[c]
                        return t, e - P * t, e

                    study = optuna.create_study(directions=["minimize"] * 3,
                                                sampler=optuna.samplers.TPESampler(seed=s))
                    trials = 0
                    while len(cache) < n and trials < 20 * n:
                        study.optimize(objective, n_trials=1)
                        trials += 1
                    tpts = list(cache.values())
                    qb = (quality(ref, bpts, P), quality(ref, bpts, 0.0))
                    qt = (quality(ref, tpts, P), quality(ref, tpts, 0.0))
                    rows.append((n, qb, qt))
                    runs += 1
                    wins += qb[0] >= qt[0] and qb[1] >= qt[1]
                print(f"{name + tag:30s} {key:11s} {len(ref):5d} {median([r[0] for r in rows]):5.0f} | "
                      f"{median([r[1][0] for r in rows]):.4f} {median([r[1][1] for r in rows]):.4f} | "
                      f"{median([r[2][0] for r in rows]):.4f} {median([r[2][1] for r in rows]):.4f}", flush=True)
    print(f"bo at least as good as TPE in both planes at equal counts in {wins} of {runs} paired runs")


if __name__ == "__main__":
    main()
