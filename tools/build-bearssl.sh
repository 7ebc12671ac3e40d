#!/bin/sh
# Build the part of BearSSL that ferry uses (X25519, ChaCha20, Poly1305,
# SHA-256, HMAC, HKDF, HMAC-DRBG) into $1/lib/libbearssl.a with ferry's own
# flags; make runs it when the library is missing or this script changed.
# Debian's libbearssl.a cannot be linked as it is: its members use SSE
# registers (the compiler's block copies and zeroing) and read a
# Linux stack-protector canary.  The source is Debian's: the orig tarball of
# bearssl 0.6+dfsg.1, checked against the SHA-256 in Debian's signed .dsc.
# docs/migration.md says more.
set -eu
out=$(realpath -m "$1")
newlib=$(realpath -m "$2")
name=bearssl_0.6+dfsg.1.orig.tar.xz
sum=102a625bd8f6155260867a50c508df8d8c3f796985dd744df1a68e5cd1a79004
work="$out.work"
rm -rf "$work" && mkdir -p "$work"
if [ -f "${BEARSSL_TARBALL:-/nonexistent}" ]; then
	cp "$BEARSSL_TARBALL" "$work/$name"
else
	# apt-get source with the machine's own Debian archives turned into
	# deb-src entries, in private state: the system's apt setup is untouched.
	apt="$work/apt"
	mkdir -p "$apt/parts" "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/dl"
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] && sed 's/^Types: deb$/Types: deb-src/' "$f" > "$apt/parts/$(basename "$f")"
	done
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[ -f "$f" ] && sed -n 's/^deb /deb-src /p' "$f" >> "$apt/parts/from-lists.list"
	done
	set -- -o Dir::Etc::SourceParts="$apt/parts" -o Dir::Etc::SourceList=/dev/null \
		-o Dir::State::Lists="$apt/lists" -o Dir::Cache="$apt/cache" \
		-o APT::Sandbox::User=root
	apt-get "$@" update -qq >/dev/null &&
		(cd "$apt/dl" && apt-get "$@" source --download-only -qq bearssl >/dev/null) &&
		cp "$apt/dl/$name" "$work/$name" ||
		{ echo "build-bearssl: apt-get source bearssl failed" >&2; exit 1; }
fi
echo "$sum  $work/$name" | sha256sum -c --quiet - \
	|| { echo "build-bearssl: $name does not match Debian's checksum" >&2; exit 1; }
tar -C "$work" -xJf "$work/$name"
src="$work/bearssl-0.6"
# The portable, constant-time implementations only (ctmulq: Poly1305 with
# 64x64->128 multiplies, general registers only); no SSE2, AES-NI or
# RDRAND code paths (BR_* switches from BearSSL's src/config.h).
files="ec/ec_c25519_m31.c symcipher/chacha20_ct.c symcipher/poly1305_ctmul.c
symcipher/poly1305_ctmulq.c
hash/sha2small.c mac/hmac.c kdf/hkdf.c rand/hmac_drbg.c codec/ccopy.c
codec/dec32be.c codec/enc32be.c codec/dec32le.c codec/enc32le.c
codec/dec64be.c codec/enc64be.c"
gcc_inc=$(gcc -print-file-name=include)
flags="-std=gnu11 -O2 -g -ffreestanding -fno-pic -fno-pie -mno-red-zone -mcmodel=kernel
-mgeneral-regs-only -fno-stack-protector -fno-tree-vectorize -nostdinc
-isystem $newlib/include -isystem $gcc_inc -I$src/inc -I$src/src
-DBR_64=1 -DBR_INT128=1 -DBR_SSE2=0 -DBR_AES_X86NI=0 -DBR_RDRAND=0
-DBR_POWER8=0 -DBR_USE_UNIX_TIME=0 -DBR_USE_WIN32_TIME=0 -DBR_USE_URANDOM=0
-DBR_USE_WIN32_RAND=0"
mkdir -p "$work/obj"
for f in $files; do
	# shellcheck disable=SC2086
	gcc $flags -c "$src/src/$f" -o "$work/obj/$(basename "$f" .c).o" \
		|| { echo "build-bearssl: $f failed" >&2; exit 1; }
done
mkdir -p "$out/lib" "$out/include"
ar rcs "$out/lib/libbearssl.a" "$work"/obj/*.o
cp "$src"/inc/*.h "$out/include/"
cp "$src/LICENSE.txt" "$out/"
cd / && rm -rf "$work"
test -f "$out/lib/libbearssl.a"
