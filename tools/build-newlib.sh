#!/bin/sh
# Build newlib (the C library of the hypervisor) from Debian's newlib-source
# into $1 (e.g. build/newlib).  Kernel code model, no red zone, no PIC,
# no stack protector: see docs/ARCHITECTURE.md ("FPU/SSE discipline").
# make runs it when libc.a is missing or this script changed; it rebuilds
# only when the options and flags differ from those $1/build.flags records
# (a tree without that record is rebuilt).
set -eu
[ -n "${1:-}" ] || { echo "usage: build-newlib.sh DIR" >&2; exit 1; }
out=$(realpath -m "$1")
flags="-O2 -g -ffreestanding -fno-pic -mno-red-zone -mcmodel=kernel -fno-stack-protector -fno-tree-vectorize -fno-builtin"
conf="--host=x86_64-elf --build=x86_64-linux-gnu --disable-multilib
--disable-newlib-supplied-syscalls --enable-newlib-nano-malloc
--disable-newlib-io-float --enable-newlib-reent-small
--disable-newlib-fvwrite-in-streamio --disable-newlib-wide-orient
--enable-newlib-io-c99-formats --enable-newlib-io-long-long"
want="$conf CFLAGS=$flags"
if [ -f "$out/lib/libc.a" ] && [ "$(cat "$out/build.flags" 2>/dev/null)" = "$want" ]; then
	touch "$out/lib/libc.a"	# built as this script builds it: newer than the script now
	exit 0
fi
src=/usr/src/newlib/newlib-3.3.0.tar.xz
[ -f "$src" ] || { echo "build-newlib: $src missing (apt-get install newlib-source)" >&2; exit 1; }
rm -rf "$out"	# nothing of a build with other flags stays
work="$out.work"
rm -rf "$work" && mkdir -p "$work"
tar -C "$work" -xJf "$src"
cd "$work"
mkdir build && cd build
# shellcheck disable=SC2086
../newlib-salsa/newlib/configure $conf --prefix="$out" \
	CC=gcc AR=ar RANLIB=ranlib CFLAGS="$flags" >configure.log 2>&1 \
	|| { tail -30 configure.log >&2; exit 1; }
make -j"$(nproc)" >make.log 2>&1 || { tail -30 make.log >&2; exit 1; }
make install >install.log 2>&1 || { tail -30 install.log >&2; exit 1; }
# the install nests under the host triplet
if [ -d "$out/x86_64-elf" ]; then
	cp -r "$out/x86_64-elf/include" "$out/" && cp -r "$out/x86_64-elf/lib" "$out/"
fi
cd / && rm -rf "$work"
test -f "$out/lib/libc.a"
echo "$want" > "$out/build.flags"
