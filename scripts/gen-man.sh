#!/usr/bin/env bash
# gen-man.sh KAREUS OUT — writes the kareus(1) man page from the program's help texts: help2man
# turns `kareus --help` and `kareus --version` into the page, and one section per command holds
# that command's `kareus CMD --help`. Run by the build (target kareus_man) when help2man exists.
set -euo pipefail
prog=$1 out=$2
inc=$(mktemp)
trap 'rm -f "$inc"' EXIT
{
  echo "[COMMANDS]"
  for cmd in $("$prog" --help | awk '/^commands:/{on=1; next} on && /^  [a-z]/{print $1}'); do
    echo ".SS kareus $cmd"
    echo ".nf"
    # roff: a leading dot or quote would be read as a request; backslashes are escaped.
    "$prog" "$cmd" --help 2>&1 | sed -e 's/\\/\\e/g' -e "s/^\([.']\)/\\\\\&\1/"
    echo ".fi"
  done
  echo "[SEE ALSO]"
  echo "The documentation in share/doc/kareus (README.md, docs/*.md)."
} >"$inc"
help2man --no-info --section=1 --name="jointly choose GPU clocks and comm/compute overlap for LLM training" \
  --include="$inc" --output="$out" "$prog"
