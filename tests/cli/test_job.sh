#!/usr/bin/env bash
# test_job.sh — `kareus job` and `kareus catalog`: normal use and bad input (exit 2, precise errors).
source "$(dirname "$0")/lib.sh"

expect_exit 0 "llama3.2-3b TP8 CP1 PP2" -- job show
expect_exit 0 "\"schema\": \"kareus.job\"" -- job show --json
expect_exit 0 "qwen3-1.7b TP4 CP2" -- job show --job qwen3-1.7b-cp2tp4-mbs8-s4096
expect_exit 0 "" -- job write --out "$TMP/job.json"
expect_exit 0 "ok (llama3.2-3b" -- job validate "$TMP/job.json"
expect_exit 0 "a100-sxm4-40gb" -- catalog
expect_exit 0 "busbw_ar_Bps" -- catalog --gpu a100
expect_exit 0 "fwd_qkv_ag" -- catalog --partitions --job llama3.2-3b-cp2tp4-mbs8-s4096
expect_exit 0 "\"key\": \"fwd_attn\"" -- catalog --partitions --json

echo '{"parallelism": {"tp": 5}}' > "$TMP/tp5.json"
expect_exit 2 "parallelism.tp: expected a divisor of the model's 24 attention heads, found 5" -- job validate "$TMP/tp5.json"
echo '{"layers_per_stage": [10, 10]}' > "$TMP/layers.json"
expect_exit 2 "expected layers summing to the model's 28, found a sum of 20" -- job show --job "$TMP/layers.json"
echo '{"gpu": "v100"}' > "$TMP/gpu.json"
expect_exit 2 "unknown GPU 'v100'" -- job validate "$TMP/gpu.json"
echo '{"model": "llama2"}' > "$TMP/model.json"
expect_exit 2 "unknown model 'llama2'" -- catalog --partitions --job "$TMP/model.json"
echo '{"microbatch_size": -8}' > "$TMP/mbs.json"
expect_exit 2 "microbatch_size: expected a positive integer, found -8" -- job validate "$TMP/mbs.json"
echo '{"microbatch_size": 3}' > "$TMP/mbs3.json"
expect_exit 2 "mbs3.json: job 'job': microbatch_size: expected an even number to split into two nanobatches (variant kareus), found 3" -- job validate "$TMP/mbs3.json"
echo '{"seq_len": "long"}' > "$TMP/type.json"
expect_exit 2 "\$.seq_len: expected an integer, found string \"long\"" -- job validate "$TMP/type.json"
echo '{"colour": "blue"}' > "$TMP/unknown.json"
expect_exit 2 "\$.colour: unknown field" -- job validate "$TMP/unknown.json"
printf '{\n  "seq_len": 4096,\n  "tp": \n}\n' > "$TMP/syntax.json"
expect_exit 2 "syntax.json:4:1: invalid JSON" -- job validate "$TMP/syntax.json"
expect_exit 2 "no such file, and not a built-in job name" -- job show --job nonexistent
expect_exit 2 "cannot open" -- job validate "$TMP/missing.json"
expect_exit 2 "unknown or incomplete option" -- job show --bogus
expect_exit 2 "unknown subcommand 'frobnicate'" -- job frobnicate
expect_exit 2 "unknown GPU 'tpu'" -- catalog --gpu tpu
expect_exit 2 "--variant: expected kareus, sequential or default-overlap, found 'fast'" -- catalog --partitions --variant fast
echo '{"microbatch_size": 7}' > "$TMP/odd.json"
expect_exit 2 "expected an even number to split into two nanobatches" -- catalog --partitions --job "$TMP/odd.json"
expect_exit 2 "unknown command 'frob'" -- frob
expect_exit 0 "optimize" -- --help
finish
