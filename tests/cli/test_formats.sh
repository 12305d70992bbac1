#!/usr/bin/env bash
# test_formats.sh — `kareus job format`, `kareus plan format`, `kareus report format` and
# `kareus compose format` (the partition frontier): the descriptions of the file
# formats, generated from the field tables the readers and writers use, and the tables of
# docs/formats.md that are their Markdown output (so the documentation cannot drift).
source "$(dirname "$0")/lib.sh"

expect_exit 0 "cluster.inter_node_bw_GBps" -- job format
expect_exit 0 '| `planning.static_power_w` | number |' -- job format --markdown
expect_exit 0 "stages[].instructions[].recompute[].sms" -- plan format
expect_exit 0 '| `predicted.bound_j` | number |' -- plan format --markdown
expect_exit 0 "methods[].ten_point[].energy_j" -- report format
expect_exit 0 '| `metrics.rows[].robust_mean` | number |' -- report format --markdown
expect_exit 2 "format: unexpected argument 'x'" -- report format x
expect_exit 0 "points[].pareto_clock" -- compose format
expect_exit 0 '| `search.space_size` | integer |' -- compose format --markdown
expect_exit 2 "format: unexpected argument 'x'" -- compose format x
expect_exit 0 "kareus job format [--markdown]" -- help job
expect_exit 0 "kareus plan format [--markdown]" -- help plan
expect_exit 2 "format: unexpected argument 'x'" -- plan format x
expect_exit 2 "unexpected argument 'x'" -- job format x

for section in "job format --markdown" "plan format --markdown" "report format --markdown" "compose format --markdown"; do
  check_doc_table "${KR_SOURCE_DIR:?}/docs/formats.md" "$section"
done
finish
