#!/usr/bin/env bash
# check-consumers.sh BUILD [PREFIX] — installs BUILD into PREFIX (default: a temporary folder),
# checks the installed layout and the exported symbols, then builds and runs the consumer
# programs of tests/consumer/ against it: C and C++ through pkg-config, and C, C++ and C-static
# through find_package(kareus). Run by .ci/run; exits non-zero on the first failure.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "$1" && pwd)
prefix=${2:-$(mktemp -d "${TMPDIR:-/tmp}/kareus-prefix.XXXXXX")}
work=$(mktemp -d "${TMPDIR:-/tmp}/kareus-consumer.XXXXXX")
trap 'rm -rf "$work"' EXIT

cmake --install "$build" --prefix "$prefix" >/dev/null
libdir=$(find "$prefix" -name 'libkareus.so.*' -type f -printf '%h\n' | head -1)
[ -n "$libdir" ] || { echo "consumers: no libkareus.so.* under $prefix" >&2; exit 1; }
for f in bin/kareus include/kareus/kareus.h include/kareus/version.h include/kareus/export.h \
         share/doc/kareus/LICENSE share/doc/kareus/README.md share/bash-completion/completions/kareus; do
  [ -e "$prefix/$f" ] || { echo "consumers: $prefix/$f not installed" >&2; exit 1; }
done
for f in libkareus.a pkgconfig/kareus.pc cmake/kareus/kareusConfig.cmake cmake/kareus/kareusConfigVersion.cmake; do
  [ -e "$libdir/$f" ] || { echo "consumers: $libdir/$f not installed" >&2; exit 1; }
done
soname=$(objdump -p "$libdir"/libkareus.so | awk '/SONAME/{print $2}')
echo "consumers: installed into $prefix (SONAME $soname)"
if command -v help2man >/dev/null; then
  [ -e "$prefix/share/man/man1/kareus.1" ] || { echo "consumers: man page not installed" >&2; exit 1; }
fi
"$prefix/bin/kareus" --version
other=$(nm -D --defined-only "$libdir/libkareus.so" | awk '{print $3}' | grep -v '^kr_' | grep -v '^_\(init\|fini\)$' || true)
internal=$(nm -D --defined-only "$libdir/libkareus.so" | awk '{print $3}' | grep '^kr__' || true)
if [ -n "$other$internal" ]; then echo "consumers: non-public symbols exported: $other $internal" >&2; exit 1; fi
echo "consumers: nm -D: $(nm -D --defined-only "$libdir/libkareus.so" | grep -c ' kr_') kr_ symbols, nothing else"

export PKG_CONFIG_PATH="$libdir/pkgconfig"
export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
cc -std=c17 -Wall -Wextra -Werror -o "$work/pc_c" "$src/tests/consumer/consumer.c" $(pkg-config --cflags --libs kareus)
c++ -std=c++17 -Wall -Wextra -Werror -o "$work/pc_cxx" "$src/tests/consumer/consumer.cpp" $(pkg-config --cflags --libs kareus)
cc -std=c17 -o "$work/pc_c_static" "$src/tests/consumer/consumer.c" \
  $(pkg-config --cflags kareus) "$libdir/libkareus.a" $(pkg-config --static --libs-only-l kareus | sed 's/-lkareus//')
"$work/pc_c"; "$work/pc_cxx"; "$work/pc_c_static"
echo "consumers: pkg-config C, C++ and C (static) built and ran"

cmake -S "$src/tests/consumer" -B "$work/cm" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/cm" >/dev/null
"$work/cm/consumer_c"; "$work/cm/consumer_cxx"; "$work/cm/consumer_c_static"
echo "consumers: find_package(kareus) C, C++ and C (static) built and ran"
