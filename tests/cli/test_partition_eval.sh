#!/usr/bin/env bash
# test_partition_eval.sh — `kareus partition eval` and `kareus catalog --check`: normal use of
# every variant, JSON and timeline output, and out-of-range values (exit 2, precise errors).
source "$(dirname "$0")/lib.sh"

CP=llama3.2-3b-cp2tp4-mbs8-s4096

# Normal use.
expect_exit 0 "effective_energy_j" -- partition eval --partition fwd_attn --freq 1410 --sms 18 --slot linear_0
expect_exit 0 "partition fwd_mlp (sequential)" -- partition eval --partition fwd_mlp --freq 1200 --variant sequential
expect_exit 0 "24 comm SMs, slot norm_0" -- partition eval --partition bwd_mlp --freq 900 --variant default-overlap
expect_exit 0 "slot none" -- partition eval --partition bwd_attn --freq 1110 --sms 12 --slot none
expect_exit 0 "allgather" -- partition eval --job $CP --partition fwd_qkv_ag --freq 1200 --sms 4 --slot rope_0
expect_exit 0 "(no collective)" -- partition eval --partition loss_bwd --freq 1410
expect_exit 0 "\"effective_energy_j\":" -- partition eval --partition fwd_attn --freq 1200 --sms 6 --slot rope_0 --json
expect_exit 0 "time_s" -- partition eval --partition fwd_attn --freq 1200 --sms 6 --slot attn_0 --timeline "$TMP/tl.json"
grep -q '"schema": "kareus.timeline"' "$TMP/tl.json" || { echo "FAIL: timeline file not written" >&2; fails=$((fails + 1)); }
expect_exit 0 "--partition KEY" -- partition eval --help
expect_exit 0 "bf16 8192^3 GEMM throughput" -- catalog --check
expect_exit 0 "\"published_lo\":" -- catalog --check --json

# The JSON numbers equal the text numbers and are reproducible.
a=$("$KAREUS" partition eval --partition fwd_mlp --freq 1290 --sms 9 --slot activation_0 --json)
b=$("$KAREUS" partition eval --partition fwd_mlp --freq 1290 --sms 9 --slot activation_0 --json)
[ "$a" = "$b" ] || { echo "FAIL: two identical evaluations differ" >&2; fails=$((fails + 1)); }

# Out-of-range and malformed values: exit 2 with a precise message.
expect_exit 2 "clock: expected a clock the a100-sxm4-40gb supports (210..1410 MHz in steps of 15), found 1400" -- \
  partition eval --partition fwd_attn --freq 1400 --sms 12 --slot norm_0
expect_exit 2 "found 2000" -- partition eval --partition fwd_attn --freq 2000 --sms 12 --slot norm_0
expect_exit 2 "--freq: expected an integer, found 'fast'" -- partition eval --partition fwd_attn --freq fast --sms 12 --slot norm_0
expect_exit 2 "comm SMs: expected 1..107 (the a100-sxm4-40gb has 108 SMs" -- \
  partition eval --partition fwd_attn --freq 1410 --sms 108 --slot norm_0
expect_exit 2 "found 0" -- partition eval --partition fwd_attn --freq 1410 --sms 0 --slot norm_0
expect_exit 2 "--sms: expected an integer, found '3.5'" -- partition eval --partition fwd_attn --freq 1410 --sms 3.5 --slot norm_0
expect_exit 2 "partition fwd_mlp (kareus): expected a slot among {norm_0, linear_0, activation_0}, found 'attn_0'" -- \
  partition eval --partition fwd_mlp --freq 1410 --sms 12 --slot attn_0
expect_exit 2 "expected a slot among {rope_0, linear_0}, found 'norm_0'" -- \
  partition eval --job $CP --partition bwd_qkv_rs --freq 1410 --sms 4 --slot norm_0
expect_exit 2 "--partition: expected a partition of job 'default' (variant kareus): fwd_attn, fwd_mlp, bwd_mlp, bwd_attn" -- \
  partition eval --partition fwd_qkv_ag --freq 1410 --sms 12 --slot norm_0
expect_exit 2 "found 'fwd_ao'" -- partition eval --job $CP --partition fwd_ao --freq 1410 --sms 12 --slot attn_0
expect_exit 2 "--variant: expected kareus, sequential or default-overlap, found 'fastest'" -- \
  partition eval --partition fwd_attn --freq 1410 --variant fastest
expect_exit 2 "--partition: missing" -- partition eval --freq 1410
expect_exit 2 "--freq: missing" -- partition eval --partition fwd_attn
expect_exit 2 "--sms: missing" -- partition eval --partition fwd_attn --freq 1410 --slot norm_0
expect_exit 2 "--slot: missing" -- partition eval --partition fwd_attn --freq 1410 --sms 12
expect_exit 2 "--sms: partition embed_bwd carries no collective" -- partition eval --partition embed_bwd --freq 1410 --sms 12
expect_exit 2 "no such file, and not a built-in job name" -- partition eval --job nonexistent --partition fwd_attn --freq 1410
expect_exit 2 "unknown or incomplete option '--bogus'" -- partition eval --partition fwd_attn --freq 1410 --bogus
expect_exit 2 "unexpected argument 'extra'" -- partition eval --partition fwd_attn --freq 1410 --sms 3 --slot norm_0 extra
expect_exit 2 "unknown subcommand 'run'" -- partition run
echo '{"gpu": "h100"}' > "$TMP/h100.json"
expect_exit 2 "supports (345..1980 MHz in steps of 15), found 1985" -- \
  partition eval --job "$TMP/h100.json" --partition fwd_attn --freq 1985 --sms 12 --slot norm_0
expect_exit 2 "comm SMs: expected 1..131 (the h100-sxm has 132 SMs" -- \
  partition eval --job "$TMP/h100.json" --partition fwd_attn --freq 1980 --sms 132 --slot norm_0
expect_exit 2 "/nonexistent-dir/x.json: cannot write" -- \
  partition eval --partition fwd_attn --freq 1410 --sms 3 --slot norm_0 --timeline /nonexistent-dir/x.json

# docs/calibration.md holds the current constant tables and calibration comparison verbatim.
for section in "catalog --markdown" "catalog --check"; do
  check_doc_table "${KR_SOURCE_DIR:?}/docs/calibration.md" "$section"
done
finish
