#!/usr/bin/env bash
# test_symbols.sh — libkareus.so exports only the public API: every defined dynamic symbol is a
# kr_ function or object declared in include/kareus/ (no internal kr__, no helper without the
# prefix), and it exports them all (kr_version among them).
source "$(dirname "$0")/lib.sh"
: "${KR_LIBKAREUS:?KR_LIBKAREUS must point to libkareus.so}"
command -v nm >/dev/null || { echo "SKIPPED: no nm"; exit 77; }

syms=$(nm -D --defined-only "$KR_LIBKAREUS" | awk '{print $3}' | sort -u)
bad=$(grep -v '^kr_' <<<"$syms" | grep -v '^_\(init\|fini\|edata\|end\|_bss_start\)$' || true)
internal=$(grep '^kr__' <<<"$syms" || true)
if [ -n "$bad$internal" ]; then
  echo "FAIL: libkareus.so exports symbols outside the public kr_ API:" >&2
  echo "$bad" "$internal" | head -20 >&2
  fails=$((fails + 1))
else
  echo "ok: $(wc -l <<<"$syms") exported symbols, all kr_ public API"
fi
grep -qx kr_version <<<"$syms" || { echo "FAIL: kr_version not exported" >&2; fails=$((fails + 1)); }
# Every exported symbol is declared in a public header.
for s in $syms; do
  case $s in kr_*) grep -qw "$s" "$KR_SOURCE_DIR"/include/kareus/*.h ||
    { echo "FAIL: $s exported but not declared in include/kareus/" >&2; fails=$((fails + 1)); } ;; esac
done

finish
