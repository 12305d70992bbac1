#!/usr/bin/env bash
# sensitivity.sh — how much Kareus's lead over Nanobatching+Perseus rests on the simulator
# constants the A100 data pin least (docs/results.md, "How much rests on the constants the data
# pin least"). For each variant of the A100 entry it runs `kareus optimize` on the job and prints
# the iso-time energy and iso-energy time reductions against Perseus of N+P and Kareus and their
# difference, and the fastest and most frugal plans of both:
#   nominal         the catalog's A100 entry (comm_clock_exp 0.80 fitted, kappa_tensor 1)
#   exp=LO, exp=HI  the fit of docs/calibration.md redone with comm_clock_exp held at the two
#                   ends of the range the calibration data allow (`kareus calibrate --fix`;
#                   every other fitted constant refitted)
#   kappa=0, 2      the catalog entry with the tensor ops' L2 interference coefficient at 0
#                   (none) and 2 (twice the L2-share estimate); it is not identifiable from
#                   the measured partitions (docs/sim.md)
#   nccl-cta=9.6    the catalog entry with NCCL's bus bandwidth per channel at 9.6 GB/s, the
#                   least with which its 24 default channels reach the measured 230 GB/s (the
#                   catalog's 12 GB/s adds 25 % headroom, an estimate)
# Usage: scripts/sensitivity.sh [KAREUS] [JOB] [EXP_LO] [EXP_HI]
#        (defaults: build/kareus, the default job, 0.5 and 1.25 — the range docs/calibration.md
#        states). Needs python3. Writes only into a temporary directory it removes.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
kareus=$(realpath "${1:-$here/build/kareus}")
job=${2:-}
lo=${3:-0.5}
hi=${4:-1.25}
data="$here/tests/data/calibration/a100-attn-tp2/calib.json"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"

if [ -n "$job" ]; then "$kareus" job write --job "$job" --out base.json; else "$kareus" job write --out base.json; fi
gpu=$(python3 -c 'import json,sys; g=json.load(open("base.json"))["gpu"]; print(g if isinstance(g,str) else "")')
[ -n "$gpu" ] || { echo "sensitivity.sh: the job must name a catalog GPU" >&2; exit 2; }
"$kareus" catalog --gpu "$gpu" --json > catalog.json
for x in "$lo" "$hi"; do
  "$kareus" calibrate --data "$data" --fold all --fix "comm_clock_exp=$x" --out "exp$x.gpu.json" >/dev/null
done
python3 - "$lo" "$hi" <<'PY'
import json, sys
lo, hi = sys.argv[1], sys.argv[2]
base = json.load(open("base.json"))
cat = json.load(open("catalog.json"))
def entry(name, value):
    params = {n: {"value": v["value"], "source": v["source"]} for n, v in cat["params"].items()}
    params[name]["value"] = value
    params[name]["source"] += f"; sensitivity.sh: held at {value}"
    return {"schema": "kareus.gpu", "version": 1, "name": cat["name"], "display": cat["display"], "params": params}
for k in (0.0, 2.0):
    json.dump(entry("kappa_tensor", k), open(f"kappa{k:g}.gpu.json", "w"), indent=1)
json.dump(entry("busbw_per_cta_Bps", 9.6e9), open("ncclcta.gpu.json", "w"), indent=1)
variants = [("nominal", None), (f"exp={lo}", f"exp{lo}.gpu.json"), (f"exp={hi}", f"exp{hi}.gpu.json"),
            ("kappa=0", "kappa0.gpu.json"), ("kappa=2", "kappa2.gpu.json"), ("nccl-cta=9.6", "ncclcta.gpu.json")]
with open("variants.txt", "w") as out:
    for name, f in variants:
        j = dict(base)
        if f:
            j["gpu"] = {"file": f}
        json.dump(j, open(f"job-{name}.json", "w"), indent=1)
        out.write(name + "\n")
PY
printf '%-12s | %-25s | %-25s | %-21s | %s\n' "variant" "iso-time energy N+P/K/diff" "iso-energy time N+P/K/diff" "fastest N+P/K (s)" "frugal N+P/K (kJ)"
while read -r v; do
  "$kareus" optimize --job "job-$v.json" --quiet --json --out "out-$v" > "o-$v.json"
  python3 - "$v" "o-$v.json" <<'PY'
import json, sys
name, path = sys.argv[1], sys.argv[2]
d = json.load(open(path))
rows = {r["method"]: r for r in d["metrics"]["rows"]}
meth = {m["name"]: m for m in d["methods"]}
def pct(x):
    return "   --" if x is None else f"{100 * x:5.1f}"
def diff(a, b):
    return "   --" if a is None or b is None else f"{100 * (b - a):+5.1f}"
n, k = rows["Nanobatching+Perseus"], rows["Kareus"]
it = [n["iso_time_energy_reduction_10pt"], k["iso_time_energy_reduction_10pt"]]
ie = [n["iso_energy_time_reduction_10pt"], k["iso_energy_time_reduction_10pt"]]
mn, mk = meth["Nanobatching+Perseus"], meth["Kareus"]
print(f"{name:12s} | {pct(it[0])} {pct(it[1])} {diff(*it)} pts | {pct(ie[0])} {pct(ie[1])} {diff(*ie)} pts | "
      f"{mn['fastest']['time_s']:.4f} {mk['fastest']['time_s']:.4f} | "
      f"{mn['frugal']['energy_j'] / 1e3:.2f} {mk['frugal']['energy_j'] / 1e3:.2f}")
PY
done < variants.txt
