#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# tools/check-fpu.sh must refuse an object that touches FPU/SSE/AVX state
# outside the allowed places, and accept one that does not.
set -eu
check=$(dirname "$0")/../../tools/check-fpu.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

# asm "instructions" -> $tmp/t.o
asm() {
	printf '\t.text\n\t.globl f\nf:\n%s\n\tret\n' "$1" > "$tmp/t.S"
	gcc -c "$tmp/t.S" -o "$tmp/t.o"
}

# Allowed: general registers, state save/restore, the variadic-function
# register save area, an fs prefix objdump shows on its own ("fs nop").
asm '	push %rbp
	mov %rsp, %rbp
	add %rax, %rbx
	mov %fs:0x28, %rax
	xsave (%rdi)
	xrstor (%rdi)
	fxsave64 (%rdi)
	xgetbv
	movaps %xmm0, -0x80(%rbp)
	movaps %xmm7, 0x10(%rsp)
	.byte 0x64, 0x90
	pop %rbp'
if ! "$check" "$tmp/t.o" 2>"$tmp/err"; then
	echo "check-fpu-test: clean object refused:"; cat "$tmp/err"; fail=1
fi

for insn in 'addps %xmm1, %xmm0' 'movss (%rdi), %xmm0' 'vaddps %ymm1, %ymm2, %ymm0' \
	'movaps %xmm8, -0x10(%rbp)' 'movaps (%rdi), %xmm0' 'fldz' 'fstp %st(1)' \
	'emms' 'paddb %mm1, %mm0' 'ldmxcsr (%rdi)' 'vzeroupper' 'fsqrt' 'fstps (%rdi)' \
	'fsave (%rdi)' '.byte 0x64, 0xd9, 0xfa' 'fwait' 'vldmxcsr (%rdi)' 'vstmxcsr (%rdi)' \
	'kmovw %eax, %k1' 'fnclex' 'fildl (%rdi)'; do
	asm "	$insn"
	if "$check" "$tmp/t.o" 2>"$tmp/err"; then
		echo "check-fpu-test: '$insn' passed the check"; fail=1
	elif ! grep -q "outside the allowed places" "$tmp/err"; then
		echo "check-fpu-test: '$insn' refused without the report:"; cat "$tmp/err"; fail=1
	fi
done

# The x87 pointer scrub (arch/x86/fpu.c) in its own function only.
printf '\t.text\n\t.globl fpu_scrub_x87_pointers\nfpu_scrub_x87_pointers:\n\tfnclex\n\temms\n\tfildl (%%rip)\n\tret\n' > "$tmp/t.S"
gcc -c "$tmp/t.S" -o "$tmp/t.o"
if ! "$check" "$tmp/t.o" 2>"$tmp/err"; then
	echo "check-fpu-test: the x87 pointer scrub refused:"; cat "$tmp/err"; fail=1
fi

[ "$fail" = 0 ] && echo "check-fpu-test: passed"
exit "$fail"
