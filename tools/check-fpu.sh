#!/bin/sh
# Build-time check of ferry's FPU/SSE discipline (docs/ARCHITECTURE.md):
# the linked image may touch x87/SSE/AVX registers only in
#  - state save/restore instructions (xsave*, xrstor*, fxsave, fxrstor, xsetbv, xgetbv), and
#  - the register-save area of newlib's variadic functions (movaps %xmmN to
#    the stack), which runs only when a caller passes floating-point
#    arguments: ferry's code, built with -mgeneral-regs-only, never does,
#  - fpu_scrub_x87_pointers (arch/x86/fpu.c): fnclex, emms and fildl,
#    between saving one vCPU's state and restoring the next one's.
# Any other such instruction fails the build, fwait too: with a guest's
# state loaded it raises the guest's pending x87 exception in ferry.
set -eu
elf=$1
bad=$(objdump -d --no-show-raw-insn "$elf" | awk '
	/^[0-9a-f]+ <.*>:$/ { fn = $2; next }
	/\t/ {
		line = $0
		insn = line; sub(/^[^\t]*\t/, "", insn)
		# an fs segment prefix objdump shows as a word of its own ("fs nop",
		# bytes of data as "fs"): drop it, check what follows, which an x87
		# instruction beginning with "fs" (fsqrt, fstps, fsave) does not escape
		while (insn ~ /^fs( |$)/) sub(/^fs */, "", insn)
		if (insn == "") next
		if (insn ~ /^(xsave|xrstor|fxsave|fxrstor|xsetbv|xgetbv)/) next
		if (fn == "<fpu_scrub_x87_pointers>:" && insn ~ /^(fnclex|emms|fildl)( |$)/) next
		if (insn ~ /^movaps +%xmm[0-7],-?0x[0-9a-f]+\(%r[sb]p\)$/) next
		if (insn ~ /%[xyz]mm[0-9]|%st(\(|$|,)|%mm[0-7]/ ||
		    insn ~ /%k[0-7]/ ||
		    insn ~ /^(f[a-z]+|emms|v?ldmxcsr|v?stmxcsr|vzero|wait)/) {
			print fn " " line
		}
	}')
if [ -n "$bad" ]; then
	echo "check-fpu: $elf uses FPU/SSE/AVX registers outside the allowed places:" >&2
	echo "$bad" | head -20 >&2
	exit 1
fi
