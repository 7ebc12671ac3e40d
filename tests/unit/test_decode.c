/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests for the x86 instruction decoder (arch/x86/emulate/decode.c):
 * known lengths of several hundred encodings in 16-, 32- and 64-bit mode
 * (byte strings assembled once with GNU as 2.40 and baked in here),
 * truncated buffers, the 15-byte limit, undefined opcodes, decoded fields,
 * memory operands, and random bytes; then the MMIO emulator
 * (arch/x86/emulate/mmio.c) against a fake device, its arithmetic
 * against the host CPU's.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "arch/x86/emulate/decode.h"
#include "arch/x86/emulate/mmio.h"

struct vec {
	enum cpu_mode mode;
	const char *bytes;
	size_t nbytes;
	int len;		/* expected length */
	const char *text;	/* what as(1) was given */
};

#define T(m, b, l, t) { CPU_MODE_##m, b, sizeof(b) - 1, l, t }
#define L64(b, l, t) T(LONG64, b, l, t)
#define P32(b, l, t) T(PROT32, b, l, t)
#define P16(b, l, t) T(PROT16, b, l, t)
#define R16(b, l, t) T(REAL, b, l, t)

/* Assembled by GNU as: every string is exactly one instruction. */
static const struct vec vectors[] = {
	/* 64-bit mode */
	L64("\x90", 1, "nop"), L64("\xf3\x90", 2, "pause"), L64("\xf4", 1, "hlt"),
	L64("\x0f\xa2", 2, "cpuid"), L64("\x0f\x32", 2, "rdmsr"), L64("\x0f\x30", 2, "wrmsr"),
	L64("\x0f\x31", 2, "rdtsc"), L64("\x0f\x01\xf9", 3, "rdtscp"), L64("\x0f\x08", 2, "invd"),
	L64("\x0f\x09", 2, "wbinvd"), L64("\x0f\x01\xd9", 3, "vmmcall"),
	L64("\x0f\x01\xc1", 3, "vmcall"), L64("\x0f\x01\xd1", 3, "xsetbv"),
	L64("\x0f\x01\xc8", 3, "monitor"), L64("\x0f\x01\xc9", 3, "mwait"),
	L64("\x0f\x01\xf8", 3, "swapgs"), L64("\x0f\x05", 2, "syscall"),
	L64("\x48\x0f\x07", 3, "sysretq"), L64("\xcd\x80", 2, "int $0x80"),
	L64("\x0f\x0b", 2, "ud2"), L64("\x0f\xb9\x00", 3, "ud1 (%rax),%eax"),
	L64("\xf3\x0f\x1e\xfa", 4, "endbr64"), L64("\x0f\xae\xe8", 3, "lfence"),
	L64("\x0f\x20\xc0", 3, "movq %cr0,%rax"), L64("\x0f\x22\xd8", 3, "movq %rax,%cr3"),
	L64("\x45\x0f\x20\xc1", 4, "movq %cr8,%r9"), L64("\x44\x0f\x22\xc0", 4, "movq %rax,%cr8"),
	L64("\x0f\x21\xf8", 3, "movq %dr7,%rax"), L64("\x0f\x01\x38", 3, "invlpg (%rax)"),
	L64("\x0f\x01\x3d\x78\x56\x34\x12", 7, "invlpg 0x12345678(%rip)"),
	L64("\x0f\x01\x13", 3, "lgdt (%rbx)"), L64("\x0f\x01\x04\xd8", 4, "sgdt (%rax,%rbx,8)"),
	L64("\x0f\x00\xd8", 3, "ltr %ax"), L64("\xe4\x60", 2, "in $0x60,%al"),
	L64("\x66\xed", 2, "in %dx,%ax"), L64("\xef", 1, "outl %eax,(%dx)"),
	L64("\xf3\x6c", 2, "rep insb"), L64("\xf3\x48\xab", 3, "rep stosq"),
	L64("\xf3\xa4", 2, "rep movsb"), L64("\xf0\x48\x0f\xb1\x0a", 5, "lock cmpxchg %rcx,(%rdx)"),
	L64("\x64\xf0\x0f\xc1\x43\x10", 6, "lock xaddl %eax,%fs:0x10(%rbx)"),
	L64("\x48\x87\x03", 3, "xchg %rax,(%rbx)"), L64("\x89\x00", 2, "mov %eax,(%rax)"),
	L64("\x89\x04\x24", 3, "mov %eax,(%rsp)"), L64("\x89\x45\x00", 3, "mov %eax,(%rbp)"),
	L64("\x41\x89\x04\x24", 4, "mov %eax,(%r12)"),
	L64("\x41\x89\x45\x00", 4, "mov %eax,(%r13)"),
	L64("\x89\x45\x7f", 3, "mov %eax,0x7f(%rbp)"),
	L64("\x89\x45\x80", 3, "mov %eax,-0x80(%rbp)"),
	L64("\x89\x85\x80\x00\x00\x00", 6, "mov %eax,0x80(%rbp)"),
	L64("\x89\x80\x78\x56\x34\x12", 6, "mov %eax,0x12345678(%rax)"),
	L64("\x89\x04\x18", 3, "mov %eax,(%rax,%rbx,1)"),
	L64("\x43\x89\x04\x88", 4, "mov %eax,(%r8,%r9,4)"),
	L64("\x89\x44\xec\x10", 4, "mov %eax,0x10(%rsp,%rbp,8)"),
	L64("\x43\x89\x84\xf5\x00\x10\x00\x00", 8, "mov %eax,0x1000(%r13,%r14,8)"),
	L64("\x89\x04\x8d\x78\x56\x34\x12", 7, "mov %eax,0x12345678(,%rcx,4)"),
	L64("\x89\x04\x25\x78\x56\x34\x12", 7, "mov %eax,0x12345678"),
	L64("\x89\x05\x78\x56\x34\x12", 6, "mov %eax,0x12345678(%rip)"),
	L64("\x67\x89\x00", 3, "mov %eax,(%eax)"),
	L64("\x67\x89\x05\x10\x00\x00\x00", 7, "mov %eax,0x10(%eip)"),
	L64("\x45\x89\x3f", 3, "mov %r15d,(%r15)"), L64("\x4c\x8b\x38", 3, "mov (%rax),%r15"),
	L64("\x40\x88\x20", 3, "mov %spl,(%rax)"), L64("\x88\x20", 2, "mov %ah,(%rax)"),
	L64("\x40\x8a\x30", 3, "movb (%rax),%sil"), L64("\x66\x89\x07", 3, "movw %ax,(%rdi)"),
	L64("\xc6\x00\x12", 3, "movb $0x12,(%rax)"),
	L64("\x66\xc7\x00\x34\x12", 5, "movw $0x1234,(%rax)"),
	L64("\xc7\x00\x78\x56\x34\x12", 6, "movl $0x12345678,(%rax)"),
	L64("\x48\xc7\x00\xff\xff\xff\xff", 7, "movq $-1,(%rax)"),
	L64("\x48\xc7\x05\x08\x00\x00\x00\xff\xff\xff\x7f", 11, "movq $0x7fffffff,0x8(%rip)"),
	L64("\xc7\x05\x78\x56\x34\x12\x78\x56\x34\x12", 10, "movl $0x12345678,0x12345678(%rip)"),
	L64("\x66\xc7\x05\x78\x56\x34\x12\x34\x12", 9, "movw $0x1234,0x12345678(%rip)"),
	L64("\xc6\x84\x98\x78\x56\x34\x12\x01", 8, "movb $1,0x12345678(%rax,%rbx,4)"),
	L64("\xb0\x12", 2, "mov $0x12,%al"), L64("\x66\xb8\x34\x12", 4, "mov $0x1234,%ax"),
	L64("\xb8\x78\x56\x34\x12", 5, "mov $0x12345678,%eax"),
	L64("\x48\xb8\xf0\xde\xbc\x9a\x78\x56\x34\x12", 10, "movabs $0x123456789abcdef0,%rax"),
	L64("\x49\xbb\xf0\xde\xbc\x9a\x78\x56\x34\x12", 10, "movabs $0x123456789abcdef0,%r11"),
	L64("\x48\xc7\xc0\xff\xff\xff\xff", 7, "mov $-1,%rax"),
	L64("\xa0\x88\x77\x66\x55\x44\x33\x22\x11", 9, "movabs 0x1122334455667788,%al"),
	L64("\xa1\x88\x77\x66\x55\x44\x33\x22\x11", 9, "movabs 0x1122334455667788,%eax"),
	L64("\x48\xa3\x88\x77\x66\x55\x44\x33\x22\x11", 10, "movabs %rax,0x1122334455667788"),
	L64("\x66\xa3\x88\x77\x66\x55\x44\x33\x22\x11", 10, "movabs %ax,0x1122334455667788"),
	L64("\x67\xa0\x44\x33\x22\x11", 6, "addr32 mov 0x11223344,%al"),
	L64("\x0f\xb6\x00", 3, "movzbl (%rax),%eax"),
	L64("\x4c\x0f\xb6\x00", 4, "movzbq (%rax),%r8"),
	L64("\x48\x0f\xbf\x40\x10", 5, "movswq 0x10(%rax),%rax"),
	L64("\x48\x63\x00", 3, "movslq (%rax),%rax"), L64("\x04\x12", 2, "add $0x12,%al"),
	L64("\x05\x78\x56\x34\x12", 5, "add $0x12345678,%eax"),
	L64("\x66\x05\x34\x12", 4, "add $0x1234,%ax"),
	L64("\x48\x05\x78\x56\x34\x12", 6, "add $0x12345678,%rax"),
	L64("\x80\x00\x01", 3, "addb $1,(%rax)"),
	L64("\x81\x00\x78\x56\x34\x12", 6, "addl $0x12345678,(%rax)"),
	L64("\x66\x81\x00\x34\x12", 5, "addw $0x1234,(%rax)"),
	L64("\x83\x00\x01", 3, "addl $1,(%rax)"),
	L64("\x48\x83\x40\x10\x80", 5, "addq $-128,0x10(%rax)"),
	L64("\x21\x03", 2, "and %eax,(%rbx)"), L64("\x09\x03", 2, "orl %eax,(%rbx)"),
	L64("\x80\x4f\x10\x80", 4, "orb $0x80,0x10(%rdi)"),
	L64("\xf6\x00\x01", 3, "testb $1,(%rax)"),
	L64("\x66\xf7\x00\x01\x00", 5, "testw $1,(%rax)"),
	L64("\xf7\x00\x01\x00\x00\x00", 6, "testl $1,(%rax)"),
	L64("\x48\xf7\x00\x01\x00\x00\x00", 7, "testq $1,(%rax)"),
	L64("\x85\x00", 2, "test %eax,(%rax)"), L64("\x48\xf7\x58\x08", 4, "negq 0x8(%rax)"),
	L64("\xf6\x38", 2, "idivb (%rax)"), L64("\xf6\x10", 2, "notb (%rax)"),
	L64("\xa8\x12", 2, "test $0x12,%al"),
	L64("\xa9\x78\x56\x34\x12", 5, "test $0x12345678,%eax"),
	L64("\xc1\xe0\x03", 3, "shl $3,%eax"), L64("\xc1\x20\x03", 3, "shll $3,(%rax)"),
	L64("\x48\xd3\xe8", 3, "shr %cl,%rax"), L64("\x6b\xc8\x12", 3, "imul $0x12,%eax,%ecx"),
	L64("\x66\x69\xc8\x34\x12", 5, "imul $0x1234,%ax,%cx"),
	L64("\x69\x08\x78\x56\x34\x12", 6, "imul $0x12345678,(%rax),%ecx"),
	L64("\x6a\x12", 2, "push $0x12"), L64("\x68\x78\x56\x34\x12", 5, "push $0x12345678"),
	L64("\x66\x68\x34\x12", 4, "pushw $0x1234"), L64("\x50", 1, "push %rax"),
	L64("\x41\x54", 2, "push %r12"), L64("\x66\x50", 2, "pushw %ax"), L64("\x9c", 1, "pushfq"),
	L64("\x8f\x00", 2, "popq (%rax)"), L64("\xff\x75\x08", 3, "pushq 0x8(%rbp)"),
	L64("\xff\xd0", 2, "call *%rax"), L64("\xff\x50\x08", 3, "call *0x8(%rax)"),
	L64("\xff\x25\x00\x00\x00\x00", 6, "jmp *(%rip)"), L64("\xff\x28", 2, "ljmp *(%rax)"),
	L64("\xc8\x00\x10\x03", 4, "enter $0x1000,$3"), L64("\xc9", 1, "leave"),
	L64("\xc3", 1, "ret"), L64("\xc2\x08\x00", 3, "ret $8"), L64("\xcb", 1, "lretl"),
	L64("\xca\x10\x00", 3, "lretl $16"), L64("\xe9\xfb\x00\x00\x00", 5, "jmp .+0x100"),
	L64("\xeb\xfe", 2, "jmp ."), L64("\xe8\xfb\x0f\x00\x00", 5, "call .+0x1000"),
	L64("\x74\xfe", 2, "je ."), L64("\x0f\x84\xfa\x0f\x00\x00", 6, "je .+0x1000"),
	L64("\xe3\xfe", 2, "jrcxz ."), L64("\xe2\xfe", 2, "loop ."),
	L64("\xc7\xf8\xfa\x00\x00\x00", 6, "xbegin .+0x100"), L64("\xc6\xf8\x01", 3, "xabort $1"),
	L64("\x0f\x01\xd5", 3, "xend"), L64("\x0f\xc8", 2, "bswap %eax"),
	L64("\x49\x0f\xc9", 3, "bswap %r9"), L64("\x0f\x95\x00", 3, "setne (%rax)"),
	L64("\x0f\xba\xe0\x03", 4, "bt $3,%eax"), L64("\x0f\xba\x28\x03", 4, "btsl $3,(%rax)"),
	L64("\x0f\xa4\x03\x04", 4, "shld $4,%eax,(%rbx)"),
	L64("\x0f\xad\xc3", 3, "shrd %cl,%eax,%ebx"), L64("\x0f\xc7\x08", 3, "cmpxchg8b (%rax)"),
	L64("\x48\x0f\xc7\x08", 4, "cmpxchg16b (%rax)"), L64("\x0f\xc7\xf0", 3, "rdrand %eax"),
	L64("\xf3\x48\x0f\xb8\xd8", 5, "popcnt %rax,%rbx"),
	L64("\xf3\x0f\xbd\x00", 4, "lzcnt (%rax),%eax"),
	L64("\x66\xf3\x0f\xbc\xd8", 5, "tzcnt %ax,%bx"),
	L64("\x0f\x38\xf0\x00", 4, "movbe (%rax),%eax"),
	L64("\xf2\x0f\x38\xf0\x00", 5, "crc32b (%rax),%eax"),
	L64("\xf2\x48\x0f\x38\xf1\xc0", 6, "crc32q %rax,%rax"), L64("\xd9\x00", 2, "flds (%rax)"),
	L64("\xdd\x5c\xd8\x08", 4, "fstpl 0x8(%rax,%rbx,8)"), L64("\xdf\xe0", 2, "fnstsw %ax"),
	L64("\x0f\xae\x00", 3, "fxsave (%rax)"), L64("\x48\x0f\xae\x28", 4, "xrstor64 (%rax)"),
	L64("\x0f\xae\x38", 3, "clflush (%rax)"), L64("\x0f\x18\x08", 3, "prefetcht0 (%rax)"),
	L64("\x0f\x28\xc8", 3, "movaps %xmm0,%xmm1"),
	L64("\x44\x0f\x28\x00", 4, "movaps (%rax),%xmm8"),
	L64("\x44\x0f\x11\x78\x10", 5, "movups %xmm15,0x10(%rax)"),
	L64("\x66\x0f\x7f\x00", 4, "movdqa %xmm0,(%rax)"),
	L64("\xf3\x0f\x6f\x00", 4, "movdqu (%rax),%xmm0"),
	L64("\x66\x48\x0f\x7e\xc0", 5, "movq %xmm0,%rax"),
	L64("\xf2\x0f\x10\x08", 4, "movsd (%rax),%xmm1"),
	L64("\x66\x0f\x70\xc8\x1b", 5, "pshufd $0x1b,%xmm0,%xmm1"),
	L64("\x66\x0f\x70\x08\x1b", 5, "pshufd $0x1b,(%rax),%xmm1"),
	L64("\x0f\x70\xc8\x01", 4, "pshufw $1,%mm0,%mm1"),
	L64("\x66\x0f\x73\xd0\x04", 5, "psrlq $4,%xmm0"),
	L64("\x0f\x71\xf1\x02", 4, "psllw $2,%mm1"),
	L64("\x0f\xc2\xc8\x01", 4, "cmpps $1,%xmm0,%xmm1"),
	L64("\xf2\x0f\xc2\x08\x02", 5, "cmpsd $2,(%rax),%xmm1"),
	L64("\x0f\xc6\xc8\x03", 4, "shufps $3,%xmm0,%xmm1"),
	L64("\x66\x0f\xc4\xc0\x01", 5, "pinsrw $1,%eax,%xmm0"),
	L64("\x66\x0f\xc5\xc0\x01", 5, "pextrw $1,%xmm0,%eax"),
	L64("\x66\x0f\x38\x00\xc8", 5, "pshufb %xmm0,%xmm1"),
	L64("\x66\x0f\x38\x00\x08", 5, "pshufb (%rax),%xmm1"),
	L64("\x66\x0f\x3a\x0f\xc8\x03", 6, "palignr $3,%xmm0,%xmm1"),
	L64("\x66\x0f\x3a\x16\x00\x01", 6, "pextrd $1,%xmm0,(%rax)"),
	L64("\x66\x48\x0f\x3a\x22\xc0\x01", 7, "pinsrq $1,%rax,%xmm0"),
	L64("\x66\x0f\x3a\x63\x48\x10\x1a", 7, "pcmpistri $0x1a,0x10(%rax),%xmm1"),
	L64("\x66\x0f\x3a\xdf\xc8\x01", 6, "aeskeygenassist $1,%xmm0,%xmm1"),
	L64("\x66\x0f\x3a\x44\xc8\x11", 6, "pclmulqdq $0x11,%xmm0,%xmm1"),
	L64("\x0f\x3a\xcc\xc8\x01", 5, "sha1rnds4 $1,%xmm0,%xmm1"), L64("\x0f\x77", 2, "emms"),
	L64("\x0f\x0f\xc8\x9e", 4, "pfadd %mm0,%mm1"),
	L64("\x0f\x0f\x08\xb4", 4, "pfmul (%rax),%mm1"),
	L64("\x66\x0f\x78\xc0\x08\x04", 6, "extrq $4,$8,%xmm0"),
	L64("\xf2\x0f\x78\xc1\x08\x04", 6, "insertq $4,$8,%xmm1,%xmm0"),
	L64("\x66\x0f\x79\xc1", 4, "extrq %xmm1,%xmm0"), L64("\xc5\xf8\x77", 3, "vzeroupper"),
	L64("\xc5\xf4\x58\xd0", 4, "vaddps %ymm0,%ymm1,%ymm2"),
	L64("\xc4\x41\x34\x58\xd0", 5, "vaddps %ymm8,%ymm9,%ymm10"),
	L64("\xc4\xe1\x70\x58\xd0", 5, "{vex3} vaddps %xmm0,%xmm1,%xmm2"),
	L64("\xc5\xf4\x58\x10", 4, "vaddps (%rax),%ymm1,%ymm2"),
	L64("\xc4\x81\x74\x58\x54\x88\x10", 7, "vaddps 0x10(%r8,%r9,4),%ymm1,%ymm2"),
	L64("\xc5\xfe\x6f\x05\x00\x00\x00\x00", 8, "vmovdqu (%rip),%ymm0"),
	L64("\xc5\xfd\x70\xc8\x1b", 5, "vpshufd $0x1b,%ymm0,%ymm1"),
	L64("\xc5\xf1\x73\xd8\x04", 5, "vpsrldq $4,%xmm0,%xmm1"),
	L64("\xc5\xf0\xc2\xd0\x01", 5, "vcmpps $1,%xmm0,%xmm1,%xmm2"),
	L64("\xc4\xe3\xfd\x00\xc8\x4e", 6, "vpermq $0x4e,%ymm0,%ymm1"),
	L64("\xc4\xe3\x71\x0c\x10\x05", 6, "vblendps $5,(%rax),%xmm1,%xmm2"),
	L64("\xc4\xe2\x75\xb8\xd0", 5, "vfmadd231ps %ymm0,%ymm1,%ymm2"),
	L64("\xc4\xe2\x7d\x92\x14\x88", 6, "vgatherdps %ymm0,(%rax,%ymm1,4),%ymm2"),
	L64("\xc4\xe2\x60\xf2\xc8", 5, "andn %eax,%ebx,%ecx"),
	L64("\xc4\xe2\xe0\xf2\x08", 5, "andn (%rax),%rbx,%rcx"),
	L64("\xc4\xe2\x78\xf7\xcb", 5, "bextr %eax,%ebx,%ecx"),
	L64("\xc4\xe3\x7b\xf0\xd8\x03", 6, "rorx $3,%eax,%ebx"),
	L64("\xc4\xe2\xf9\xf7\xcb", 5, "shlx %rax,%rbx,%rcx"),
	L64("\xc5\xf8\x90\xd1", 4, "kmovw %k1,%k2"),
	L64("\x62\xf1\x74\x48\x58\xd0", 6, "vaddps %zmm0,%zmm1,%zmm2"),
	L64("\x62\xf1\x74\x49\x58\x10", 6, "vaddps (%rax),%zmm1,%zmm2{%k1}"),
	L64("\x62\xf1\x74\x48\x58\x50\x01", 7, "vaddps 0x40(%rax),%zmm1,%zmm2"),
	L64("\x62\xf1\x74\x48\x58\x50\x40", 7, "vaddps 0x1000(%rax),%zmm1,%zmm2"),
	L64("\x62\xf1\x74\x08\x58\xd0", 6, "{evex} vaddps %xmm0,%xmm1,%xmm2"),
	L64("\x62\xf3\x75\x48\x25\xd0\xff", 7, "vpternlogd $0xff,%zmm0,%zmm1,%zmm2"),
	L64("\x62\xf1\x7d\x48\x70\xc8\x01", 7, "vpshufd $1,%zmm0,%zmm1"),
	L64("\x62\xf1\xf5\x48\x73\xd0\x04", 7, "vpsrlq $4,%zmm0,%zmm1"),
	L64("\x62\xf1\x74\x48\xc2\xc8\x01", 7, "vcmpps $1,%zmm0,%zmm1,%k1"),
	L64("\x62\xf5\x74\x48\x58\xd0", 6, "vaddph %zmm0,%zmm1,%zmm2"),
	L64("\x62\xf6\x75\x48\x98\xd0", 6, "vfmadd132ph %zmm0,%zmm1,%zmm2"),
	L64("\x62\xf3\x7c\x48\x26\xc8\x01", 7, "vgetmantph $1,%zmm0,%zmm1"),
	L64("\x8f\xe8\x68\xa2\xd9\x00", 6, "vpcmov %xmm0,%xmm1,%xmm2,%xmm3"),
	L64("\x8f\xe8\x78\xc0\xc8\x03", 6, "vprotb $3,%xmm0,%xmm1"),
	L64("\x8f\xe9\x78\x90\xd1", 5, "vprotb %xmm0,%xmm1,%xmm2"),
	L64("\x8f\xea\x78\x10\xd8\x34\x12\x00\x00", 9, "bextr $0x1234,%eax,%ebx"),
	L64("\x8f\xea\x60\x12\xc0\x78\x56\x34\x12", 9, "lwpins $0x12345678,%eax,%ebx"),
	L64("\x8f\xe9\x60\x01\xc8", 5, "blcfill %eax,%ebx"),
	L64("\x66\x0f\x1f\x04\x00", 5, "nopw 0x0(%rax,%rax,1)"),
	L64("\x0f\x1f\x00", 3, "nopl 0x0(%rax)"),
	L64("\x2e\x66\x0f\x1f\x04\x00", 6, "nopw %cs:0x0(%rax,%rax,1)"),
	L64("\x48\x63\xc0", 3, "movsxd %eax,%rax"),
	/* 32-bit mode */
	P32("\x0f\xa2", 2, "cpuid"), P32("\xf4", 1, "hlt"), P32("\x0f\x01\xd9", 3, "vmmcall"),
	P32("\x89\x00", 2, "mov %eax,(%eax)"), P32("\x89\x04\x24", 3, "mov %eax,(%esp)"),
	P32("\x89\x45\x00", 3, "mov %eax,(%ebp)"),
	P32("\xa3\x78\x56\x34\x12", 5, "mov %eax,0x12345678"),
	P32("\x89\x44\xec\x10", 4, "mov %eax,0x10(%esp,%ebp,8)"),
	P32("\x89\x04\x8d\x78\x56\x34\x12", 7, "mov %eax,0x12345678(,%ecx,4)"),
	P32("\x89\x84\x73\x80\x00\x00\x00", 7, "mov %eax,0x80(%ebx,%esi,2)"),
	P32("\x67\x66\x89\x00", 4, "mov %ax,(%bx,%si)"),
	P32("\x67\x66\x89\x46\x10", 5, "mov %ax,0x10(%bp)"),
	P32("\x66\xa3\x34\x12\x00\x00", 6, "mov %ax,0x1234"),
	P32("\x67\x66\x89\x83\x34\x12", 6, "mov %ax,0x1234(%bp,%di)"),
	P32("\xc7\x00\x78\x56\x34\x12", 6, "movl $0x12345678,(%eax)"),
	P32("\x66\xc7\x00\x34\x12", 5, "movw $0x1234,(%eax)"),
	P32("\x67\xc7\x07\x78\x56\x34\x12", 7, "movl $0x12345678,(%bx)"),
	P32("\x67\xc6\x84\x34\x12\x01", 6, "movb $1,0x1234(%si)"),
	P32("\xa1\x78\x56\x34\x12", 5, "mov 0x12345678,%eax"),
	P32("\xa0\x78\x56\x34\x12", 5, "mov 0x12345678,%al"),
	P32("\x66\xa3\x78\x56\x34\x12", 6, "mov %ax,0x12345678"),
	P32("\x67\xa1\x34\x12", 4, "addr16 mov 0x1234,%eax"),
	P32("\xbb\x78\x56\x34\x12", 5, "mov $0x12345678,%ebx"),
	P32("\x66\xbb\x34\x12", 4, "mov $0x1234,%bx"),
	P32("\x68\x78\x56\x34\x12", 5, "push $0x12345678"),
	P32("\x66\x68\x34\x12", 4, "pushw $0x1234"), P32("\x06", 1, "push %es"),
	P32("\x07", 1, "pop %es"), P32("\x0e", 1, "push %cs"), P32("\x1e", 1, "push %ds"),
	P32("\x1f", 1, "pop %ds"), P32("\x27", 1, "daa"), P32("\x37", 1, "aaa"),
	P32("\x60", 1, "pusha"), P32("\x61", 1, "popa"), P32("\x62\x03", 2, "bound %eax,(%ebx)"),
	P32("\x63\x03", 2, "arpl %ax,(%ebx)"), P32("\x40", 1, "inc %eax"),
	P32("\x9a\x78\x56\x34\x12\x10\x00", 7, "lcall $0x10,$0x12345678"),
	P32("\xea\x78\x56\x34\x12\x10\x00", 7, "ljmp $0x10,$0x12345678"),
	P32("\x66\x9a\x34\x12\x10\x00", 6, "lcallw $0x10,$0x1234"),
	P32("\x66\xea\x34\x12\x10\x00", 6, "ljmpw $0x10,$0x1234"), P32("\xce", 1, "into"),
	P32("\xd4\x0a", 2, "aam"), P32("\xd4\x10", 2, "aam $16"), P32("\xd5\x10", 2, "aad $16"),
	P32("\xd6", 1, ".byte 0xd6"), P32("\xc4\x00", 2, "les (%eax),%eax"),
	P32("\xc5\x4b\x10", 3, "lds 0x10(%ebx),%ecx"), P32("\x67\x66\xc4\x07", 4, "les (%bx),%ax"),
	P32("\xc5\xf4\x58\xd0", 4, "vaddps %ymm0,%ymm1,%ymm2"),
	P32("\xc4\xe1\x70\x58\xd0", 5, "{vex3} vaddps %xmm0,%xmm1,%xmm2"),
	P32("\xc4\xe3\xfd\x00\xc8\x4e", 6, "vpermq $0x4e,%ymm0,%ymm1"),
	P32("\x62\xf1\x74\x48\x58\x10", 6, "vaddps (%eax),%zmm1,%zmm2"),
	P32("\x62\xf1\x74\x48\x58\xd0", 6, "vaddps %zmm0,%zmm1,%zmm2"),
	P32("\x8f\xe8\x68\xa2\xd9\x00", 6, "vpcmov %xmm0,%xmm1,%xmm2,%xmm3"),
	P32("\x8f\x00", 2, "popl (%eax)"), P32("\xe8\xfb\x0f\x00\x00", 5, "call .+0x1000"),
	P32("\x66\xe8\xfc\x00", 4, "callw .+0x100"), P32("\xe9\xfb\x0f\x00\x00", 5, "jmp .+0x1000"),
	P32("\x66\xe9\xfc\x00", 4, "data16 jmp .+0x100"),
	P32("\x0f\x84\xfa\x0f\x00\x00", 6, "je .+0x1000"),
	P32("\x66\x0f\x84\xfb\x00", 5, "data16 je .+0x100"), P32("\xe3\xfe", 2, "jecxz ."),
	P32("\x67\xe3\xfd", 3, "jcxz ."), P32("\xc8\x08\x00\x00", 4, "enter $8,$0"),
	P32("\xc2\x04\x00", 3, "ret $4"), P32("\x0f\x20\xc0", 3, "movl %cr0,%eax"),
	P32("\x0f\x22\xe0", 3, "movl %eax,%cr4"), P32("\x0f\x34", 2, "sysenter"),
	P32("\x67\x0f\xb6\x81\x34\x12", 6, "movzbl 0x1234(%bx,%di),%eax"),
	/* 16-bit mode */
	P16("\x0f\xa2", 2, "cpuid"), P16("\xf4", 1, "hlt"), P16("\x89\x00", 2, "mov %ax,(%bx,%si)"),
	P16("\x89\x02", 2, "mov %ax,(%bp,%si)"), P16("\x89\x03", 2, "mov %ax,(%bp,%di)"),
	P16("\x89\x04", 2, "mov %ax,(%si)"), P16("\x89\x46\x00", 3, "mov %ax,(%bp)"),
	P16("\x89\x07", 2, "mov %ax,(%bx)"), P16("\x89\x40\x10", 3, "mov %ax,0x10(%bx,%si)"),
	P16("\x89\x46\xf0", 3, "mov %ax,-0x10(%bp)"),
	P16("\x89\x87\x34\x12", 4, "mov %ax,0x1234(%bx)"),
	P16("\x89\x82\x34\x12", 4, "mov %ax,0x1234(%bp,%si)"),
	P16("\xc7\x06\x34\x12\x34\x12", 6, "movw $0x1234,0x1234"),
	P16("\xc7\x07\x34\x12", 4, "movw $0x1234,(%bx)"),
	P16("\xc6\x45\x10\x12", 4, "movb $0x12,0x10(%di)"),
	P16("\x66\xc7\x07\x78\x56\x34\x12", 7, "movl $0x12345678,(%bx)"),
	P16("\x67\x66\xc7\x00\x78\x56\x34\x12", 8, "movl $0x12345678,(%eax)"),
	P16("\x67\x66\x89\x04\x98", 5, "mov %eax,(%eax,%ebx,4)"),
	P16("\x67\x66\x89\x84\x24\x78\x56\x34\x12", 9, "mov %eax,0x12345678(%esp)"),
	P16("\x67\xc7\x04\xcd\x78\x56\x34\x12\x34\x12", 10, "movw $0x1234,0x12345678(,%ecx,8)"),
	P16("\xa0\x34\x12", 3, "mov 0x1234,%al"), P16("\xa1\x34\x12", 3, "mov 0x1234,%ax"),
	P16("\x66\xa1\x34\x12", 4, "mov 0x1234,%eax"),
	P16("\x67\xa1\x78\x56\x34\x12", 6, "addr32 mov 0x12345678,%ax"),
	P16("\xb8\x34\x12", 3, "mov $0x1234,%ax"),
	P16("\x66\xb8\x78\x56\x34\x12", 6, "mov $0x12345678,%eax"),
	P16("\xb4\x12", 2, "mov $0x12,%ah"), P16("\x05\x34\x12", 3, "add $0x1234,%ax"),
	P16("\x66\x05\x78\x56\x34\x12", 6, "add $0x12345678,%eax"),
	P16("\x81\x07\x34\x12", 4, "addw $0x1234,(%bx)"),
	P16("\x66\x81\x07\x78\x56\x34\x12", 7, "addl $0x12345678,(%bx)"),
	P16("\x83\x07\x01", 3, "addw $1,(%bx)"), P16("\xa9\x34\x12", 3, "test $0x1234,%ax"),
	P16("\xf7\x07\x34\x12", 4, "testw $0x1234,(%bx)"),
	P16("\x66\xf7\x07\x78\x56\x34\x12", 7, "testl $0x12345678,(%bx)"),
	P16("\xf6\x07\x12", 3, "testb $0x12,(%bx)"), P16("\xf7\x17", 2, "notw (%bx)"),
	P16("\x68\x34\x12", 3, "push $0x1234"),
	P16("\x66\x68\x78\x56\x34\x12", 6, "pushl $0x12345678"), P16("\x6a\x12", 2, "push $0x12"),
	P16("\x9a\x34\x12\x10\x00", 5, "lcall $0x10,$0x1234"),
	P16("\xea\xf0\xff\x00\xf0", 5, "ljmp $0xf000,$0xfff0"),
	P16("\x66\x9a\x78\x56\x34\x12\x10\x00", 8, "lcalll $0x10,$0x12345678"),
	P16("\xe8\xfd\x00", 3, "call .+0x100"),
	P16("\x66\xe8\xfa\x0f\x00\x00", 6, "calll .+0x1000"), P16("\xe9\xfd\x00", 3, "jmp .+0x100"),
	P16("\x0f\x84\xfc\x00", 4, "je .+0x100"), P16("\xeb\xfe", 2, "jmp ."),
	P16("\xe4\x60", 2, "in $0x60,%al"), P16("\xcd\x10", 2, "int $0x10"),
	P16("\xc8\x10\x00\x01", 4, "enter $0x10,$1"), P16("\xc4\x07", 2, "les (%bx),%ax"),
	P16("\xc5\x7c\x10", 3, "lds 0x10(%si),%di"), P16("\x0f\xb6\x07", 3, "movzbw (%bx),%ax"),
	P16("\x66\x0f\xb6\x46\x10", 5, "movzbl 0x10(%bp),%eax"),
	P16("\x0f\x01\x16\x34\x12", 5, "lgdt 0x1234"), P16("\x66\x0f\x01\x1f", 4, "lidtl (%bx)"),
	P16("\x66\xff\x2f", 3, "ljmpl *(%bx)"), P16("\x0f\x20\xc0", 3, "movl %cr0,%eax"),
	P16("\x0f\x22\xc0", 3, "movl %eax,%cr0"), P16("\xf3\xa5", 2, "rep movsw"),
	P16("\x66\xf3\xab", 3, "rep stosl"), P16("\x0f\x09", 2, "wbinvd"),
	/* Hand-written; lengths checked with objdump -d. */
	L64("\x48\x66\xb8\x34\x12", 5, "REX then 66: REX ignored, mov ax,imm16"),
	L64("\x66\x48\xb8\x01\x02\x03\x04\x05\x06\x07\x08", 11, "66 REX.W: W wins, imm64"),
	L64("\x40\x48\xb8\x01\x02\x03\x04\x05\x06\x07\x08", 11, "two REX: last one counts"),
	L64("\x48\x40\xb8\x01\x02\x03\x04", 7, "two REX: last one has no W"),
	L64("\x0f\x20\x00", 3, "mov cr0,rax with mod=0: no memory form"),
	L64("\x0f\x22\x5c", 3, "mov rsp,cr3 with mod=1: no disp8"),
	L64("\x41\x8b\x04\x25\x78\x56\x34\x12", 8, "SIB base 5 mod 0 with REX.B: no base"),
	L64("\x41\x8b\x05\x78\x56\x34\x12", 7, "RIP-relative whatever REX.B"),
	L64("\x43\x8b\x44\x25\x10", 5, "SIB index r12, base r13, disp8"),
	L64("\xf7\x08\x01\x02\x03\x04", 6, "F7 /1 (test alias) has imm32"),
	L64("\x0f\x78\xc8", 3, "vmread: no immediate"),
	L64("\x66\x66\x66\x66\x66\x66\x2e\x0f\x1f\x84\x00\x00\x00\x00\x00", 15, "15-byte nop"),
	L64("\x2e\x2e\x2e\x48\xc7\x84\x98\x78\x56\x34\x12\x78\x56\x34\x12", 15, "15-byte mov"),
	L64("\x66\xe8\x01\x02\x03\x04", 6, "Intel: 66 call rel32 in 64-bit mode"),
	L64("\x66\x0f\x84\x01\x02\x03\x04", 7, "Intel: 66 jcc rel32 in 64-bit mode"),
	L64("\x66\xe9\x01\x02\x03\x04", 6, "Intel: 66 jmp rel32 in 64-bit mode"),
	L64("\xf0\xf2\xf3\x26\x2e\x36\x3e\x64\x65\x67\x66\x90", 12, "every legacy prefix"),
	L64("\x26\x66\x41\x89\x00", 5, "segment, 66, REX: mov [r8],ax"),
	L64("\x8f\xe8\x78\xc0\x00\x03", 6, "XOP vprotb with memory operand"),
	L64("\x62\xf1\x74\x48\x58\x94\x88\x00\x01\x00\x00", 11, "EVEX with SIB and disp32"),
	P32("\xc5\x00", 2, "lds eax,[eax]: mod 0 is not VEX"),
	P32("\x62\x40\x10", 3, "bound eax,[eax+10h]: mod 1 is not EVEX"),
	P32("\x8f\x40\x10", 3, "pop [eax+10h]: map < 8 is not XOP"),
	P32("\x66\xc5\x00", 3, "66 lds: fine when not VEX"),
	P16("\x0f\x20\xc0", 3, "mov eax,cr0 in 16-bit code"),
	P16("\x66\x67\x8b\x84\x88\x78\x56\x34\x12", 9, "32-bit addressing in 16-bit code"),
};

/* Undefined in the mode, or invalid prefix combinations: #UD. */
static const struct vec invalid[] = {
	L64("\x06", -EILSEQ, "push es"), L64("\x07", -EILSEQ, "pop es"),
	L64("\x0e", -EILSEQ, "push cs"), L64("\x16", -EILSEQ, "push ss"),
	L64("\x17", -EILSEQ, "pop ss"), L64("\x1e", -EILSEQ, "push ds"),
	L64("\x1f", -EILSEQ, "pop ds"), L64("\x27", -EILSEQ, "daa"), L64("\x37", -EILSEQ, "aaa"),
	L64("\x60", -EILSEQ, "pusha"), L64("\x61", -EILSEQ, "popa"),
	L64("\x82\xc0\x01", -EILSEQ, "82 alias of 80"),
	L64("\x9a\x00\x00\x00\x00\x10\x00", -EILSEQ, "call far ptr"),
	L64("\xea\x00\x00\x00\x00\x10\x00", -EILSEQ, "jmp far ptr"), L64("\xce", -EILSEQ, "into"),
	L64("\xd4\x0a", -EILSEQ, "aam"), L64("\xd5\x0a", -EILSEQ, "aad"),
	L64("\xd6", -EILSEQ, "salc"), L64("\x0f\x04", -EILSEQ, "0f 04"),
	L64("\x0f\x0a", -EILSEQ, "0f 0a"), L64("\x0f\x24\xc0", -EILSEQ, "mov from tr"),
	L64("\x0f\x36", -EILSEQ, "0f 36"), L64("\x0f\x7a", -EILSEQ, "0f 7a"),
	L64("\x0f\xa6", -EILSEQ, "0f a6"), P32("\x0f\x3f", -EILSEQ, "0f 3f"),
	L64("\x66\xc5\xf8\x77", -EILSEQ, "66 before VEX"),
	L64("\xf3\xc5\xf8\x77", -EILSEQ, "F3 before VEX"),
	L64("\xf0\xc4\xe1\x78\x77", -EILSEQ, "LOCK before VEX"),
	L64("\x40\xc5\xf8\x77", -EILSEQ, "REX before VEX"),
	L64("\x48\x62\xf1\x74\x48\x58\xd0", -EILSEQ, "REX before EVEX"),
	L64("\x66\x8f\xe8\x78\xc0\xc8\x03", -EILSEQ, "66 before XOP"),
	L64("\xc4\xe0\x78\x58\xc0", -EILSEQ, "VEX map 0"),
	L64("\xc4\xe4\x78\x58\xc0", -EILSEQ, "VEX map 4"),
	L64("\x62\xf4\x74\x48\x58\xd0", -EILSEQ, "EVEX map 4 (APX)"),
	L64("\x62\xf7\x74\x48\x58\xd0", -EILSEQ, "EVEX map 7"),
	L64("\x62\xf9\x74\x48\x58\xd0", -EILSEQ, "EVEX P0 bit 3 set"),
	L64("\x62\xf1\x70\x48\x58\xd0", -EILSEQ, "EVEX P1 bit 2 clear"),
	L64("\x8f\xeb\x78\x10\xc0", -EILSEQ, "XOP map 0Bh"),
	P32("\x66\xc5\xf8\x77", -EILSEQ, "66 before VEX (32-bit)"),
	R16("\xc5\xf8\x77", -EILSEQ, "VEX in real mode"),
	R16("\xc4\xe1\x78\x77", -EILSEQ, "VEX3 in real mode"),
	R16("\x62\xf1\x74\x48\x58\xd0", -EILSEQ, "EVEX in real mode"),
	R16("\x8f\xe8\x78\xc0\xc8\x03", -EILSEQ, "XOP in real mode"),
};

/* Decode from a heap copy of exactly n bytes, so ASan sees any over-read. */
static int decode_exact(const char *bytes, size_t n, enum cpu_mode mode,
			unsigned flags, struct x86_insn *in)
{
	uint8_t *buf = malloc(n ? n : 1);
	int r;

	assert_non_null(buf);
	memcpy(buf, bytes, n);
	r = x86_decode(buf, n, mode, flags, in);
	free(buf);
	return r;
}

static void test_known_lengths(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++) {
		const struct vec *v = &vectors[i];
		struct x86_insn in;
		int r = decode_exact(v->bytes, v->nbytes, v->mode, 0, &in);

		if (r != v->len)
			fail_msg("#%zu '%s': got %d, want %d", i, v->text, r, v->len);
		assert_int_equal(v->nbytes, (size_t)v->len);
		assert_int_equal(in.length, v->len);
	}
}

/* Trailing bytes must not change the length. */
static void test_trailing_bytes_ignored(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++) {
		const struct vec *v = &vectors[i];
		uint8_t buf[32];
		struct x86_insn in;

		memset(buf, 0xC4, sizeof(buf));
		memcpy(buf, v->bytes, v->nbytes);
		assert_int_equal(x86_decode(buf, sizeof(buf), v->mode, 0, &in), v->len);
	}
}

/* 16-bit encodings are the same in real mode. */
static void test_real_mode_like_prot16(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++) {
		const struct vec *v = &vectors[i];
		struct x86_insn in;

		if (v->mode != CPU_MODE_PROT16)
			continue;
		assert_int_equal(decode_exact(v->bytes, v->nbytes, CPU_MODE_REAL,
					      0, &in), v->len);
	}
}

/* Every proper prefix of an instruction asks for more bytes. */
static void test_truncated(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++) {
		const struct vec *v = &vectors[i];

		for (size_t k = 0; k < v->nbytes; k++) {
			struct x86_insn in;
			int r = decode_exact(v->bytes, k, v->mode, 0, &in);

			if (r != -EAGAIN)
				fail_msg("'%s' cut to %zu: got %d", v->text, k, r);
			assert_true(in.length > k);
			assert_true(in.length <= v->nbytes);
		}
	}
}

static void test_invalid(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(invalid) / sizeof(invalid[0]); i++) {
		const struct vec *v = &invalid[i];
		struct x86_insn in;
		int r = decode_exact(v->bytes, v->nbytes, v->mode, 0, &in);

		if (r != v->len)
			fail_msg("'%s': got %d, want %d", v->text, r, v->len);
	}
}

/* The same bytes are fine outside 64-bit mode. */
static void test_valid_outside_long_mode(void **state)
{
	static const char *const ok32[] = { "\x06", "\x27", "\x60", "\xce", "\xd6" };
	struct x86_insn in;

	(void)state;
	for (size_t i = 0; i < sizeof(ok32) / sizeof(ok32[0]); i++)
		assert_int_equal(x86_decode((const uint8_t *)ok32[i], 1,
					    CPU_MODE_PROT32, 0, &in), 1);
	/* 40-4F are INC/DEC, not REX. */
	assert_int_equal(x86_decode((const uint8_t *)"\x48\xb8\x01\x02\x03\x04",
				    6, CPU_MODE_PROT32, 0, &in), 1);
	assert_int_equal(in.opcode, 0x48);
	assert_int_equal(in.rex, 0);
}

static void test_amd_near_branches(void **state)
{
	static const struct { const char *b; size_t n; int intel, amd; } t[] = {
		{ "\x66\xe8\x01\x02\x03\x04", 6, 6, 4 },
		{ "\x66\xe9\x01\x02\x03\x04", 6, 6, 4 },
		{ "\x66\x0f\x85\x01\x02\x03\x04", 7, 7, 5 },
		{ "\x66\x48\xe8\x01\x02\x03\x04", 7, 7, 7 },	/* REX.W wins */
		{ "\xe8\x01\x02\x03\x04", 5, 5, 5 },
		{ "\x66\x68\x01\x02", 4, 4, 4 },		/* push imm16 */
	};
	struct x86_insn in;

	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		assert_int_equal(decode_exact(t[i].b, t[i].n, CPU_MODE_LONG64, 0,
					      &in), t[i].intel);
		assert_int_equal(decode_exact(t[i].b, t[i].n, CPU_MODE_LONG64,
					      X86_DF_AMD, &in), t[i].amd);
	}
	/* Outside 64-bit mode both vendors honour 66. */
	assert_int_equal(decode_exact("\x66\xe8\x01\x02", 4, CPU_MODE_PROT32, 0,
				      &in), 4);
}

static void test_length_limit(void **state)
{
	uint8_t buf[32];
	struct x86_insn in;

	(void)state;
	memset(buf, 0x66, sizeof(buf));
	/* 16 prefixes: refused whatever is available. */
	assert_int_equal(x86_decode(buf, 16, CPU_MODE_LONG64, 0, &in), -E2BIG);
	assert_int_equal(x86_decode(buf, 15, CPU_MODE_LONG64, 0, &in), -E2BIG);
	assert_int_equal(x86_decode(buf, 32, CPU_MODE_PROT16, 0, &in), -E2BIG);
	/* 14 prefixes + NOP = 15 bytes: fine. */
	buf[14] = 0x90;
	assert_int_equal(x86_decode(buf, 15, CPU_MODE_LONG64, 0, &in), 15);
	assert_int_equal(in.npfx, 14);
	/* 15 prefixes + NOP: 16 bytes. */
	buf[14] = 0x66;
	buf[15] = 0x90;
	assert_int_equal(x86_decode(buf, 16, CPU_MODE_LONG64, 0, &in), -E2BIG);
	/* Known to exceed 15 before the bytes are there: #GP, not "more". */
	memcpy(buf, "\x2e\x2e\x2e\x2e\x48\xc7\x84\x98\x78\x56\x34\x12\x78", 13);
	assert_int_equal(x86_decode(buf, 13, CPU_MODE_LONG64, 0, &in), -E2BIG);
	/* 6 prefixes + REX + B8 + imm64 = 16. */
	memcpy(buf, "\x2e\x2e\x2e\x2e\x2e\x2e\x48\xb8", 8);
	assert_int_equal(x86_decode(buf, 8, CPU_MODE_LONG64, 0, &in), -E2BIG);
	memcpy(buf, "\x2e\x2e\x2e\x2e\x48\xb8", 6);
	assert_int_equal(x86_decode(buf, 6, CPU_MODE_LONG64, 0, &in), -EAGAIN);
	assert_int_equal(in.length, 14);
}

static void test_need_count(void **state)
{
	struct x86_insn in;

	(void)state;
	assert_int_equal(x86_decode(NULL, 0, CPU_MODE_LONG64, 0, &in), -EAGAIN);
	assert_int_equal(in.length, 1);
	/* mov eax,[rax+disp32]: after the ModRM, 4 more are known needed. */
	assert_int_equal(x86_decode((const uint8_t *)"\x8b\x80", 2,
				    CPU_MODE_LONG64, 0, &in), -EAGAIN);
	assert_int_equal(in.length, 6);
	/* movabs: imm64 */
	assert_int_equal(x86_decode((const uint8_t *)"\x48\xb8\x00", 3,
				    CPU_MODE_LONG64, 0, &in), -EAGAIN);
	assert_int_equal(in.length, 10);
	assert_int_equal(x86_decode((const uint8_t *)"\x0f", 1,
				    CPU_MODE_LONG64, 0, &in), -EAGAIN);
	assert_int_equal(in.length, 2);
	assert_int_equal(x86_decode((const uint8_t *)"\x8b", 1, 4, 0, &in), -EINVAL);
}

static void decode_ok(const char *b, size_t n, enum cpu_mode mode,
		      struct x86_insn *in)
{
	assert_int_equal(decode_exact(b, n, mode, 0, in), (int)n);
}

static void expect_mem(const struct x86_insn *in, int base, int index,
		       int scale, int64_t disp)
{
	assert_true(in->has_mem);
	assert_int_equal(in->base, base);
	assert_int_equal(in->index, index);
	assert_int_equal(in->scale, scale);
	assert_int_equal(in->disp, disp);
}

static void expect_imm(const struct x86_insn *in, uint64_t imm, int size)
{
	assert_int_equal(in->imm, imm);
	assert_int_equal(in->imm_size, size);
}

static void test_fields_prefixes(void **state)
{
	struct x86_insn in;

	(void)state;
	decode_ok("\x64\xf0\x0f\xc1\x43\x10", 6, CPU_MODE_LONG64, &in);
	assert_int_equal(in.prefixes, X86_PFX_LOCK | X86_PFX_SEG);
	assert_int_equal(in.seg, X86_SEG_FS);
	assert_int_equal(in.npfx, 2);
	assert_int_equal(in.map, X86_MAP_0F);
	assert_int_equal(in.opcode, 0xC1);
	assert_int_equal(in.mod, 1);
	assert_int_equal(in.reg, X86_RAX);
	expect_mem(&in, X86_RBX, X86_REG_NONE, 1, 0x10);
	assert_int_equal(in.disp_size, 1);
	assert_int_equal(in.opsize, 4);
	assert_int_equal(in.addrsize, 8);

	decode_ok("\xf3\x48\xab", 3, CPU_MODE_LONG64, &in);
	assert_int_equal(in.rep, 0xF3);
	assert_int_equal(in.opsize, 8);
	assert_int_equal(in.rex, 0x48);
	assert_int_equal(in.rex_w, 1);

	decode_ok("\xf3\xf2\x0f\x10\x00", 5, CPU_MODE_LONG64, &in);
	assert_int_equal(in.rep, 0xF2);	/* the last one */
	assert_int_equal(in.prefixes, X86_PFX_REP | X86_PFX_REPNE);

	decode_ok("\x2e\x3e\x8b\x45\x00", 5, CPU_MODE_PROT32, &in);
	assert_int_equal(x86_insn_segment(&in), X86_SEG_DS);
	decode_ok("\x8b\x45\x00", 3, CPU_MODE_PROT32, &in);
	assert_int_equal(x86_insn_segment(&in), X86_SEG_SS);
	decode_ok("\x8b\x04\x24", 3, CPU_MODE_PROT32, &in);
	assert_int_equal(x86_insn_segment(&in), X86_SEG_SS);
	decode_ok("\x8b\x04\x6b", 3, CPU_MODE_PROT32, &in);	/* [ebx+ebp*2] */
	assert_int_equal(x86_insn_segment(&in), X86_SEG_DS);
}

static void test_fields_modrm_sib(void **state)
{
	struct x86_insn in;

	(void)state;
	decode_ok("\x43\x89\x84\xf5\x00\x10\x00\x00", 8, CPU_MODE_LONG64, &in);
	assert_true(in.rex_x && in.rex_b && in.has_sib);
	assert_int_equal(in.sib, 0xF5);
	expect_mem(&in, X86_R13, X86_R14, 8, 0x1000);
	assert_int_equal(in.disp_size, 4);
	decode_ok("\x89\x45\x80", 3, CPU_MODE_LONG64, &in);
	expect_mem(&in, X86_RBP, X86_REG_NONE, 1, -128);
	decode_ok("\x67\x89\x05\x10\x00\x00\x00", 7, CPU_MODE_LONG64, &in);
	expect_mem(&in, X86_RIP, X86_REG_NONE, 1, 0x10);
	assert_int_equal(in.addrsize, 4);
	decode_ok("\x89\x05\x10\x00\x00\x00", 6, CPU_MODE_PROT32, &in);
	expect_mem(&in, X86_REG_NONE, X86_REG_NONE, 1, 0x10);	/* not RIP */
	decode_ok("\x89\x82\x34\x12", 4, CPU_MODE_PROT16, &in);
	expect_mem(&in, X86_RBP, X86_RSI, 1, 0x1234);
	assert_int_equal(in.addrsize, 2);
	assert_int_equal(x86_insn_segment(&in), X86_SEG_SS);

	decode_ok("\x88\x20", 2, CPU_MODE_LONG64, &in);	/* mov [rax],ah */
	assert_int_equal(in.reg, 4);
	assert_int_equal(in.rex, 0);
	decode_ok("\x40\x88\x20", 3, CPU_MODE_LONG64, &in);	/* mov [rax],spl */
	assert_int_equal(in.reg, 4);
	assert_int_equal(in.rex, 0x40);
	decode_ok("\x0f\x20\x00", 3, CPU_MODE_LONG64, &in);	/* mov rax,cr0 */
	assert_int_equal(in.mod, 3);
	assert_false(in.has_mem);
	assert_int_equal(in.opsize, 8);
}

static void test_fields_immediates(void **state)
{
	struct x86_insn in;

	(void)state;
	decode_ok("\x48\xc7\x05\x08\x00\x00\x00\xff\xff\xff\x7f", 11,
		  CPU_MODE_LONG64, &in);
	expect_mem(&in, X86_RIP, X86_REG_NONE, 1, 8);
	expect_imm(&in, 0x7fffffff, 4);
	assert_int_equal(in.opsize, 8);
	decode_ok("\x48\xb8\xf0\xde\xbc\x9a\x78\x56\x34\x12", 10, CPU_MODE_LONG64, &in);
	expect_imm(&in, 0x123456789abcdef0ull, 8);
	decode_ok("\xa1\x88\x77\x66\x55\x44\x33\x22\x11", 9, CPU_MODE_LONG64, &in);
	assert_false(in.has_modrm);
	expect_mem(&in, X86_REG_NONE, X86_REG_NONE, 1, 0x1122334455667788ll);
	assert_int_equal(in.disp_size, 8);
	expect_imm(&in, 0, 0);
	decode_ok("\xc8\x00\x10\x03", 4, CPU_MODE_LONG64, &in);		/* enter */
	expect_imm(&in, 0x1000, 2);
	assert_int_equal(in.imm2, 3);
	assert_int_equal(in.imm2_size, 1);
	decode_ok("\x66\x0f\x78\xc0\x08\x04", 6, CPU_MODE_LONG64, &in);	/* extrq */
	expect_imm(&in, 8, 1);
	assert_int_equal(in.imm2, 4);
	decode_ok("\x9a\x78\x56\x34\x12\x10\x00", 7, CPU_MODE_PROT32, &in);
	expect_imm(&in, 0x12345678, 4);
	assert_int_equal(in.imm2, 0x10);
	assert_int_equal(in.imm2_size, 2);
	decode_ok("\x0f\x0f\xc8\x9e", 4, CPU_MODE_LONG64, &in);		/* pfadd */
	expect_imm(&in, 0x9e, 1);
	decode_ok("\xf6\x10", 2, CPU_MODE_LONG64, &in);			/* not */
	expect_imm(&in, 0, 0);
}

static void test_fields_opsize(void **state)
{
	static const struct { const char *b; size_t n; enum cpu_mode m; int os; } t[] = {
		{ "\x50", 1, CPU_MODE_LONG64, 8 },		/* push rax */
		{ "\x66\x50", 2, CPU_MODE_LONG64, 2 },
		{ "\xff\x75\x08", 3, CPU_MODE_LONG64, 8 },	/* push [rbp+8] */
		{ "\x66\xff\x75\x08", 4, CPU_MODE_LONG64, 2 },
		{ "\xff\xd0", 2, CPU_MODE_LONG64, 8 },		/* call rax */
		{ "\xff\x10", 2, CPU_MODE_LONG64, 8 },		/* call [rax] */
		{ "\xff\x00", 2, CPU_MODE_LONG64, 4 },		/* inc dword [rax] */
		{ "\x8b\x00", 2, CPU_MODE_LONG64, 4 },
		{ "\x66\x8b\x00", 3, CPU_MODE_LONG64, 2 },
		{ "\x48\x8b\x00", 3, CPU_MODE_LONG64, 8 },
		{ "\x8b\x00", 2, CPU_MODE_PROT32, 4 },
		{ "\x66\x8b\x00", 3, CPU_MODE_PROT32, 2 },
		{ "\x8b\x00", 2, CPU_MODE_PROT16, 2 },
		{ "\x66\x8b\x00", 3, CPU_MODE_PROT16, 4 },
		{ "\x8b\x00", 2, CPU_MODE_REAL, 2 },
		{ "\xc4\xe2\xe0\xf2\x08", 5, CPU_MODE_LONG64, 8 },	/* andn rcx,rbx,[rax] */
		{ "\xc4\xe2\x60\xf2\xc8", 5, CPU_MODE_LONG64, 4 },
	};
	struct x86_insn in;

	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		decode_ok(t[i].b, t[i].n, t[i].m, &in);
		if (in.opsize != t[i].os)
			fail_msg("#%zu: opsize %d, want %d", i, in.opsize, t[i].os);
	}
}

static void test_fields_vex(void **state)
{
	struct x86_insn in;

	(void)state;
	decode_ok("\xc4\x81\x74\x58\x54\x88\x10", 7, CPU_MODE_LONG64, &in);
	assert_int_equal(in.vex_kind, X86_VEX3);
	assert_int_equal(in.map, X86_MAP_0F);
	assert_int_equal(in.opcode, 0x58);
	assert_int_equal(in.vex_vvvv, 1);
	assert_int_equal(in.vex_l, 1);
	expect_mem(&in, X86_R8, X86_R9, 4, 0x10);
	decode_ok("\xc5\xf8\x77", 3, CPU_MODE_LONG64, &in);	/* vzeroupper */
	assert_int_equal(in.vex_kind, X86_VEX2);
	assert_false(in.has_modrm);
	decode_ok("\x62\xf1\x74\x49\x58\x10", 6, CPU_MODE_LONG64, &in);
	assert_int_equal(in.vex_kind, X86_EVEX);
	assert_int_equal(in.vex_l, 2);
	expect_mem(&in, X86_RAX, X86_REG_NONE, 1, 0);
	decode_ok("\x8f\xea\x78\x10\xd8\x34\x12\x00\x00", 9, CPU_MODE_LONG64, &in);
	assert_int_equal(in.vex_kind, X86_XOP);
	assert_int_equal(in.map, X86_MAP_XOPA);
	expect_imm(&in, 0x1234, 4);
	/* Outside 64-bit mode the inverted R/X/B bits do not extend registers. */
	decode_ok("\xc4\xc1\x74\x58\x10", 5, CPU_MODE_PROT32, &in);
	assert_int_equal(in.vex_kind, X86_VEX3);
	expect_mem(&in, X86_RAX, X86_REG_NONE, 1, 0);
	assert_int_equal(in.rex_b, 0);
}

static void test_cpu_mode(void **state)
{
	(void)state;
	assert_int_equal(x86_cpu_mode(false, false, false, false, false), CPU_MODE_REAL);
	assert_int_equal(x86_cpu_mode(true, true, false, false, false), CPU_MODE_REAL);
	assert_int_equal(x86_cpu_mode(true, false, false, false, false), CPU_MODE_PROT16);
	assert_int_equal(x86_cpu_mode(true, false, false, false, true), CPU_MODE_PROT32);
	assert_int_equal(x86_cpu_mode(true, false, true, false, true), CPU_MODE_PROT32);
	assert_int_equal(x86_cpu_mode(true, false, true, false, false), CPU_MODE_PROT16);
	assert_int_equal(x86_cpu_mode(true, false, true, true, false), CPU_MODE_LONG64);
}

/* The #UD intercepts of both back ends: only VMCALL and VMMCALL, in
 * every mode, are the hypercall; their neighbours in 0F 01 are not. */
static void test_hypercall_kind(void **state)
{
	static const struct {
		const char *bytes;
		size_t n;
		enum x86_hypercall kind;
		int len;
	} cases[] = {
		{ "\x0f\x01\xc1", 3, X86_HC_VMCALL, 3 },
		{ "\x0f\x01\xd9", 3, X86_HC_VMMCALL, 3 },
		{ "\x66\x0f\x01\xd9", 4, X86_HC_VMMCALL, 4 },	/* prefix: longer */
		{ "\xf0\x0f\x01\xc1", 4, X86_HC_NONE, 4 },		/* LOCK: #UD */
		{ "\x0f\x01\xd8", 3, X86_HC_NONE, 3 },		/* vmrun */
		{ "\x0f\x01\xc2", 3, X86_HC_NONE, 3 },		/* vmlaunch */
		{ "\x0f\x01\xc3", 3, X86_HC_NONE, 3 },		/* vmresume */
		{ "\x0f\x01\xc4", 3, X86_HC_NONE, 3 },		/* vmxoff */
		{ "\x0f\x01\xd4", 3, X86_HC_NONE, 3 },		/* vmfunc */
		{ "\x0f\x01\xd1", 3, X86_HC_NONE, 3 },		/* xsetbv */
		{ "\x0f\x01\x08", 3, X86_HC_NONE, 3 },		/* sidt (%eax): mod 0 */
		{ "\x0f\x01\x09", 3, X86_HC_NONE, 3 },		/* sidt (%ecx) */
		{ "\x0f\x0b", 2, X86_HC_NONE, 2 },			/* ud2 */
		{ "\x0f\xc1\xc1", 3, X86_HC_NONE, 3 },		/* xadd: 0F C1 */
		{ "\xc1\xc1\x01", 3, X86_HC_NONE, 3 },		/* rol $1,%ecx */
	};
	static const enum cpu_mode modes[] = {
		CPU_MODE_REAL, CPU_MODE_PROT16, CPU_MODE_PROT32, CPU_MODE_LONG64,
	};
	struct x86_insn in;

	(void)state;
	for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
		for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
			int len = x86_decode((const uint8_t *)cases[i].bytes, cases[i].n,
					     modes[m], 0, &in);
			assert_int_equal(len, cases[i].len);
			assert_int_equal(x86_insn_hypercall(&in), cases[i].kind);
		}
	}
	/* a VEX-encoded map-1 opcode 01 is not VMCALL */
	assert_int_equal(x86_decode((const uint8_t *)"\xc5\xf8\x01\xc1", 4, CPU_MODE_LONG64, 0,
				    &in), 4);
	assert_int_equal(x86_insn_hypercall(&in), X86_HC_NONE);
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t xorshift(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* Bytes that lead the decoder into its less common paths. */
static uint8_t random_byte(void)
{
	static const uint8_t hot[] = {
		0x0f, 0x38, 0x3a, 0x66, 0x67, 0xf0, 0xf2, 0xf3, 0x2e, 0x64,
		0x40, 0x48, 0x4f, 0xc4, 0xc5, 0x62, 0x8f, 0xc7, 0xf6, 0xf7,
		0xa1, 0xb8, 0xc8, 0x9a, 0x04, 0x05, 0x44, 0x84, 0x25, 0x0d,
		0x78, 0xe8, 0xff, 0xc0,
	};
	uint64_t x = xorshift();

	return (x & 1) ? hot[(x >> 8) % sizeof(hot)] : (uint8_t)(x >> 16);
}

static void check_random_one(unsigned avail, enum cpu_mode mode, unsigned flags)
{
	uint8_t *buf = malloc(avail ? avail : 1);
	struct x86_insn in, again;
	int r;

	for (unsigned i = 0; i < avail; i++)
		buf[i] = random_byte();
	r = x86_decode(buf, avail, mode, flags, &in);
	if (r > 0) {
		assert_true((unsigned)r <= avail && r <= X86_MAX_INSN_LEN);
		assert_int_equal(in.length, r);
		assert_int_equal(x86_decode(buf, (size_t)r, mode, flags, &again), r);
		assert_int_equal(x86_decode(buf, (size_t)r - 1, mode, flags,
					       &again), -EAGAIN);
	} else if (r == -EAGAIN) {
		assert_true(in.length > avail && in.length <= X86_MAX_INSN_LEN);
	} else if (r != -E2BIG && r != -EILSEQ) {
		fail_msg("unexpected %d", r);
	}
	free(buf);
}

static void test_random_bytes(void **state)
{
	(void)state;
	for (int i = 0; i < 200000; i++) {
		uint64_t x = xorshift();

		check_random_one((unsigned)(x % 20), (enum cpu_mode)((x >> 8) & 3),
				 (unsigned)(x >> 10) & 1);
	}
}

/* ---- MMIO emulator (arch/x86/emulate/mmio.c) ---- */

#define GPA 0xfee00300ull

/* A fake device: remembers the last access, answers reads with rval. */
struct fake_dev {
	uint64_t rval;		/* value returned by reads, unmasked */
	int fail;		/* return this from the callback when non-zero */
	int reads, writes;
	uint64_t gpa, wval;
	int size;
};

static int fake_mmio(void *ctx, uint64_t gpa, bool write, uint64_t *val,
		     int size)
{
	struct fake_dev *d = ctx;

	if (d->fail)
		return d->fail;
	d->gpa = gpa;
	d->size = size;
	if (write) {
		d->writes++;
		d->wval = *val;
	} else {
		d->reads++;
		*val = d->rval;
	}
	return 0;
}

static void expect_write(const struct fake_dev *d, int size, uint64_t val)
{
	assert_int_equal(d->size, size);
	assert_int_equal(d->wval, val);
	assert_int_equal(d->gpa, GPA);
}

static int emu(const char *b, size_t n, enum cpu_mode mode, uint64_t *regs,
	       struct fake_dev *d)
{
	struct x86_insn in;

	decode_ok(b, n, mode, &in);
	return x86_emulate_mmio(&in, regs, GPA, fake_mmio, d);
}

#define EMU64(b, regs, d) emu(b, sizeof(b) - 1, CPU_MODE_LONG64, regs, d)

static void test_mmio_store(void **state)
{
	static const struct {
		const char *b; size_t n; enum cpu_mode m; int size; uint64_t val;
	} t[] = {
		{ "\x88\x08", 2, CPU_MODE_LONG64, 1, 0xab },		/* mov [rax],cl */
		{ "\x88\x20", 2, CPU_MODE_LONG64, 1, 0x77 },		/* mov [rax],ah */
		{ "\x40\x88\x20", 3, CPU_MODE_LONG64, 1, 0x5a },	/* mov [rax],spl */
		{ "\x66\x89\x08", 3, CPU_MODE_LONG64, 2, 0xa7ab },
		{ "\x89\x08", 2, CPU_MODE_LONG64, 4, 0xa5a6a7ab },
		{ "\x4c\x89\x00", 3, CPU_MODE_LONG64, 8, 0x0123456789abcdefull },
		{ "\xa3\x00\x03\xe0\xfe\x00\x00\x00\x00", 9, CPU_MODE_LONG64, 4, 0x55667788 },
		{ "\x89\x07", 2, CPU_MODE_REAL, 2, 0x7788 },
		{ "\x66\x89\x07", 3, CPU_MODE_PROT16, 4, 0x55667788 },
		{ "\x89\x0f", 2, CPU_MODE_PROT32, 4, 0xa5a6a7ab },	/* mov [edi],ecx */
	};
	uint64_t r[X86_NR_REGS] = { 0 };
	struct fake_dev d = { 0 };

	(void)state;
	r[X86_RAX] = 0x1122334455667788ull;
	r[X86_RCX] = 0xa1a2a3a4a5a6a7abull;
	r[X86_RSP] = 0x5a5a;
	r[X86_R8] = 0x0123456789abcdefull;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		assert_int_equal(emu(t[i].b, t[i].n, t[i].m, r, &d), (int)t[i].n);
		expect_write(&d, t[i].size, t[i].val);
	}
	assert_int_equal(d.writes, 10);
	assert_int_equal(d.reads, 0);
}

static void test_mmio_store_imm(void **state)
{
	uint64_t r[X86_NR_REGS] = { 0 };
	struct fake_dev d = { 0 };

	(void)state;
	assert_int_equal(EMU64("\xc6\x00\x12", r, &d), 3);
	expect_write(&d, 1, 0x12);
	assert_int_equal(EMU64("\x66\xc7\x00\x34\x12", r, &d), 5);
	expect_write(&d, 2, 0x1234);
	assert_int_equal(EMU64("\xc7\x00\xf0\xff\xff\xff", r, &d), 6);
	expect_write(&d, 4, 0xfffffff0);
	/* imm32 sign-extends to 64 bits */
	assert_int_equal(EMU64("\x48\xc7\x00\xf0\xff\xff\xff", r, &d), 7);
	expect_write(&d, 8, 0xfffffffffffffff0ull);
	assert_int_equal(EMU64("\x48\xc7\x80\x00\x03\x00\x00\xff\xff\xff\x7f",
			       r, &d), 11);
	assert_int_equal(d.wval, 0x7fffffff);
}

static void test_mmio_load(void **state)
{
	uint64_t r[X86_NR_REGS] = { 0 };
	struct fake_dev d = { .rval = 0xdeadbeefcafef00dull };

	(void)state;
	r[X86_RCX] = 0x1111111111111111ull;
	assert_int_equal(EMU64("\x8a\x08", r, &d), 2);		/* mov cl,[rax] */
	assert_int_equal(d.size, 1);
	assert_int_equal(r[X86_RCX], 0x111111111111110dull);
	r[X86_RAX] = 0x2222222222222222ull;
	assert_int_equal(EMU64("\x8a\x20", r, &d), 2);		/* mov ah,[rax] */
	assert_int_equal(r[X86_RAX], 0x2222222222220d22ull);
	r[X86_RSP] = 0x3333333333333333ull;
	assert_int_equal(EMU64("\x40\x8a\x20", r, &d), 3);	/* mov spl,[rax] */
	assert_int_equal(r[X86_RSP], 0x333333333333330dull);
	assert_int_equal(EMU64("\x66\x8b\x08", r, &d), 3);	/* mov cx,[rax] */
	assert_int_equal(d.size, 2);
	assert_int_equal(r[X86_RCX], 0x111111111111f00dull);
	assert_int_equal(EMU64("\x8b\x08", r, &d), 2);		/* mov ecx: zero-extends */
	assert_int_equal(d.size, 4);
	assert_int_equal(r[X86_RCX], 0xcafef00dull);
	assert_int_equal(EMU64("\x4c\x8b\x38", r, &d), 3);	/* mov r15,[rax] */
	assert_int_equal(d.size, 8);
	assert_int_equal(r[X86_R15], 0xdeadbeefcafef00dull);
	assert_int_equal(EMU64("\x44\x8a\x00", r, &d), 3);	/* mov r8b,[rax] */
	assert_int_equal(r[X86_R8], 0x0d);
	r[X86_RAX] = 0x4444444444444444ull;
	assert_int_equal(EMU64("\xa0\x00\x03\xe0\xfe\x00\x00\x00\x00", r, &d), 9);
	assert_int_equal(r[X86_RAX], 0x444444444444440dull);
	assert_int_equal(emu("\xa1\x00\x03\xe0\xfe", 5, CPU_MODE_PROT32, r, &d), 5);
	assert_int_equal(r[X86_RAX], 0xcafef00dull);
	/* 32-bit code: a 16-bit load keeps the upper bits */
	r[X86_RDX] = 0x55555555;
	assert_int_equal(emu("\x66\x8b\x10", 3, CPU_MODE_PROT32, r, &d), 3);
	assert_int_equal(r[X86_RDX], 0x5555f00d);
}

static void test_mmio_extend(void **state)
{
	static const struct {
		const char *b; size_t n; uint64_t dev, before, after; int size;
	} t[] = {
		{ "\x0f\xb6\x08", 3, 0x80, ~0ull, 0x80, 1 },			/* movzx ecx,byte */
		{ "\x0f\xbe\x08", 3, 0x80, ~0ull, 0xffffff80, 1 },		/* movsx ecx,byte */
		{ "\x48\x0f\xbe\x08", 4, 0x80, 0, 0xffffffffffffff80ull, 1 },
		{ "\x66\x0f\xbe\x08", 4, 0x80, ~0ull, 0xffffffffffffff80ull, 1 },
		{ "\x66\x0f\xb6\x08", 4, 0x80, ~0ull, 0xffffffffffff0080ull, 1 },
		{ "\x0f\xb7\x08", 3, 0x8000, ~0ull, 0x8000, 2 },
		{ "\x0f\xbf\x08", 3, 0x8000, ~0ull, 0xffff8000, 2 },
		{ "\x48\x0f\xbf\x08", 4, 0x7fff, ~0ull, 0x7fff, 2 },
		{ "\x48\x63\x08", 3, 0x80000000, 0, 0xffffffff80000000ull, 4 },	/* movsxd */
		{ "\x63\x08", 2, 0x80000000, ~0ull, 0x80000000, 4 },
		{ "\x0f\xb6\x08", 3, 0xffffffffffffff01ull, 0, 0x01, 1 },	/* masked */
	};
	uint64_t r[X86_NR_REGS] = { 0 };

	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct fake_dev d = { .rval = t[i].dev };

		r[X86_RCX] = t[i].before;
		assert_int_equal(emu(t[i].b, t[i].n, CPU_MODE_LONG64, r, &d),
				 (int)t[i].n);
		assert_int_equal(d.size, t[i].size);
		if (r[X86_RCX] != t[i].after)
			fail_msg("#%zu: rcx %#llx", i, (unsigned long long)r[X86_RCX]);
	}
}

#define F_CF 0x1ull
#define F_PF 0x4ull
#define F_AF 0x10ull
#define F_ZF 0x40ull
#define F_SF 0x80ull
#define F_OF 0x800ull
#define F_DF 0x400ull

static void test_mmio_logic(void **state)
{
	uint64_t r[X86_NR_REGS] = { 0 };
	struct fake_dev d = { .rval = 0xf0f0 };

	(void)state;
	r[X86_RAX] = 0xff00;
	r[X86_RFLAGS] = 0x2 | F_CF | F_OF | F_ZF | F_AF;
	assert_int_equal(EMU64("\x21\x03", r, &d), 2);		/* and [rbx],eax */
	assert_int_equal(d.wval, 0xf000);
	assert_int_equal(d.size, 4);
	assert_int_equal(r[X86_RFLAGS], 0x2 | F_PF | F_AF);	/* AF untouched */
	assert_int_equal(EMU64("\x09\x03", r, &d), 2);		/* or [rbx],eax */
	assert_int_equal(d.wval, 0xfff0);
	d.rval = 0xff00;
	assert_int_equal(EMU64("\x31\x03", r, &d), 2);		/* xor [rbx],eax */
	assert_int_equal(d.wval, 0);
	assert_int_equal(r[X86_RFLAGS], 0x2 | F_PF | F_ZF | F_AF);
	/* and eax,[rbx]: register destination, zero-extended */
	r[X86_RAX] = 0xffffffff0000ff01ull;
	d.rval = 0x0101;
	assert_int_equal(EMU64("\x23\x03", r, &d), 2);
	assert_int_equal(r[X86_RAX], 0x0101);
	assert_int_equal(d.writes, 3);
	/* or byte [rdi+10h],80h: 83h has three bits set, PF clear */
	d.rval = 0x03;
	assert_int_equal(EMU64("\x80\x4f\x10\x80", r, &d), 4);
	expect_write(&d, 1, 0x83);
	assert_true(r[X86_RFLAGS] & F_SF);
	assert_false(r[X86_RFLAGS] & F_PF);
	/* and dword [rax],-16: imm8 sign-extended */
	d.rval = 0x12345678;
	assert_int_equal(EMU64("\x83\x20\xf0", r, &d), 3);
	assert_int_equal(d.wval, 0x12345670);
	/* and qword [rax],imm32 sign-extended to 64 */
	d.rval = ~0ull;
	assert_int_equal(EMU64("\x48\x81\x20\x00\x00\x00\x80", r, &d), 7);
	expect_write(&d, 8, 0xffffffff80000000ull);
	assert_true(r[X86_RFLAGS] & F_SF);
	/* or ax,[rbx] keeps the upper bits */
	r[X86_RAX] = 0xabcd000000000001ull;
	d.rval = 0x8000;
	assert_int_equal(EMU64("\x66\x0b\x03", r, &d), 3);
	assert_int_equal(r[X86_RAX], 0xabcd000000008001ull);
}

static void test_mmio_test_xchg(void **state)
{
	uint64_t r[X86_NR_REGS] = { 0 };
	struct fake_dev d = { .rval = 2 };

	(void)state;
	r[X86_RFLAGS] = 0x2 | F_CF;
	assert_int_equal(EMU64("\xf7\x00\x01\x00\x00\x00", r, &d), 6);
	assert_int_equal(d.writes, 0);
	assert_int_equal(r[X86_RFLAGS], 0x2 | F_ZF | F_PF);
	d.rval = 0x80;
	assert_int_equal(EMU64("\xf6\x00\x80", r, &d), 3);
	assert_int_equal(d.size, 1);
	assert_int_equal(r[X86_RFLAGS], 0x2 | F_SF);
	r[X86_RCX] = 0x8000;
	assert_int_equal(EMU64("\x66\x85\x08", r, &d), 3);	/* test [rax],cx */
	assert_int_equal(r[X86_RFLAGS], 0x2 | F_ZF | F_PF);
	assert_int_equal(d.writes, 0);
	/* xchg [rbx],eax */
	d.rval = 0x11;
	r[X86_RAX] = 0xffffffff00000022ull;
	assert_int_equal(EMU64("\x87\x03", r, &d), 2);
	assert_int_equal(d.wval, 0x22);
	assert_int_equal(r[X86_RAX], 0x11);
	assert_int_equal(d.reads, 4);
	assert_int_equal(d.writes, 1);
}

static void test_mmio_stos(void **state)
{
	uint64_t r[X86_NR_REGS] = { 0 };
	struct fake_dev d = { 0 };

	(void)state;
	r[X86_RAX] = 0x1122334455667788ull;
	r[X86_RDI] = 0x1000;
	r[X86_RFLAGS] = 0x2;
	assert_int_equal(EMU64("\xaa", r, &d), 1);
	assert_int_equal(d.wval, 0x88);
	assert_int_equal(r[X86_RDI], 0x1001);
	r[X86_RFLAGS] |= F_DF;
	assert_int_equal(EMU64("\xab", r, &d), 1);
	assert_int_equal(d.size, 4);
	assert_int_equal(r[X86_RDI], 0x0ffd);
	r[X86_RFLAGS] = 0x2;
	/* rep stosq, 3 iterations: re-executed twice, then done */
	r[X86_RCX] = 3;
	assert_int_equal(EMU64("\xf3\x48\xab", r, &d), 0);
	assert_int_equal(r[X86_RCX], 2);
	assert_int_equal(r[X86_RDI], 0x1005);
	assert_int_equal(d.wval, 0x1122334455667788ull);
	assert_int_equal(EMU64("\xf3\x48\xab", r, &d), 0);
	assert_int_equal(EMU64("\xf3\x48\xab", r, &d), 3);
	assert_int_equal(r[X86_RCX], 0);
	assert_int_equal(r[X86_RDI], 0x1015);
	assert_int_equal(d.writes, 5);
	/* rcx = 0: nothing happens */
	assert_int_equal(EMU64("\xf3\x48\xab", r, &d), 3);
	assert_int_equal(d.writes, 5);
	/* 67: ECX/EDI, written back zero-extended */
	r[X86_RCX] = 0xffffffff00000001ull;
	r[X86_RDI] = 0xffffffff00001000ull;
	assert_int_equal(EMU64("\x67\xf3\xab", r, &d), 3);
	assert_int_equal(r[X86_RCX], 0);
	assert_int_equal(r[X86_RDI], 0x1004);
	/* 16-bit: CX/DI only, upper bits kept, DI wraps */
	r[X86_RCX] = 0x10001;
	r[X86_RDI] = 0x2ffff;
	assert_int_equal(emu("\xf3\xab", 2, CPU_MODE_REAL, r, &d), 2);
	assert_int_equal(d.size, 2);
	assert_int_equal(r[X86_RCX], 0x10000);
	assert_int_equal(r[X86_RDI], 0x20001);
}

static void test_mmio_refused(void **state)
{
	static const struct { const char *b; size_t n; enum cpu_mode m; int err; } t[] = {
		{ "\xff\x00", 2, CPU_MODE_LONG64, -EOPNOTSUPP },		/* inc */
		{ "\xd1\x20", 2, CPU_MODE_LONG64, -EOPNOTSUPP },		/* shl */
		{ "\x0f\xc1\x00", 3, CPU_MODE_LONG64, -EOPNOTSUPP },		/* xadd */
		{ "\xf7\x18", 2, CPU_MODE_LONG64, -EOPNOTSUPP },		/* neg */
		{ "\x05\x01\x00\x00\x00", 5, CPU_MODE_LONG64, -EOPNOTSUPP },	/* add eax,1 */
		{ "\x01\xc3", 2, CPU_MODE_LONG64, -EINVAL },			/* add ebx,eax */
		{ "\xc7\xf8\x00\x00\x00\x00", 6, CPU_MODE_LONG64, -EOPNOTSUPP },	/* xbegin */
		{ "\xc5\xfe\x6f\x00", 4, CPU_MODE_LONG64, -EOPNOTSUPP },	/* vmovdqu */
		{ "\x0f\x10\x00", 3, CPU_MODE_LONG64, -EOPNOTSUPP },		/* movups */
		{ "\x63\x00", 2, CPU_MODE_PROT32, -EOPNOTSUPP },		/* arpl */
		{ "\xa4", 1, CPU_MODE_LONG64, -EOPNOTSUPP },			/* movsb */
		{ "\x0f\x38\xf0\x00", 4, CPU_MODE_LONG64, -EOPNOTSUPP },	/* movbe */
		{ "\x89\xc0", 2, CPU_MODE_LONG64, -EINVAL },			/* mov eax,eax */
		{ "\x0f\xb6\xc0", 3, CPU_MODE_LONG64, -EINVAL },
	};
	uint64_t r[X86_NR_REGS] = { 0 };

	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct fake_dev d = { 0 };

		assert_int_equal(emu(t[i].b, t[i].n, t[i].m, r, &d), t[i].err);
		assert_int_equal(d.reads + d.writes, 0);
	}
}

static void test_mmio_callback_error(void **state)
{
	uint64_t r[X86_NR_REGS] = { 0 }, before[X86_NR_REGS];
	struct fake_dev d = { .fail = -EIO };

	(void)state;
	for (int i = 0; i < X86_NR_REGS; i++)
		r[i] = 0x0101010101010101ull * (uint64_t)(i + 1);
	memcpy(before, r, sizeof(r));
	assert_int_equal(EMU64("\x8b\x08", r, &d), -EIO);
	assert_int_equal(EMU64("\x21\x03", r, &d), -EIO);
	assert_int_equal(EMU64("\xf3\x48\xab", r, &d), -EIO);
	assert_int_equal(EMU64("\x87\x03", r, &d), -EIO);
	assert_int_equal(EMU64("\x2b\x03", r, &d), -EIO);		/* sub eax,[rbx] */
	assert_int_equal(EMU64("\x83\x38\xff", r, &d), -EIO);		/* cmp dword [rax],-1 */
	assert_memory_equal(r, before, sizeof(r));
}

/* LOCK: #UD unless a read-modify-write of memory, and then no access. */
static void test_mmio_lock(void **state)
{
	static const struct { const char *b; size_t n; bool ud; } t[] = {
		{ "\xf0\x89\x08", 3, true },		/* lock mov [rax],ecx */
		{ "\xf0\x8b\x08", 3, true },		/* lock mov ecx,[rax] */
		{ "\xf0\xc7\x00\x01\x00\x00\x00", 7, true },	/* lock mov dword [rax],1 */
		{ "\xf0\xa1\x00\x03\xe0\xfe\x00\x00\x00\x00", 10, true },
		{ "\xf0\x0f\xb6\x08", 4, true },	/* lock movzx */
		{ "\xf0\x48\x63\x08", 4, true },	/* lock movsxd */
		{ "\xf0\xab", 2, true },		/* lock stos */
		{ "\xf0\x39\x03", 3, true },		/* lock cmp [rbx],eax */
		{ "\xf0\x83\x38\xff", 4, true },	/* lock cmp dword [rax],-1 */
		{ "\xf0\x85\x08", 3, true },		/* lock test */
		{ "\xf0\xf6\x00\x01", 4, true },	/* lock test byte imm */
		{ "\xf0\x2b\x03", 3, true },		/* lock sub eax,[rbx] */
		{ "\x66\xf0\x23\x03", 4, true },	/* lock and ax,[rbx] */
		{ "\xf0\x01\x03", 3, false },		/* lock add [rbx],eax */
		{ "\xf0\x66\x83\x28\x01", 5, false },	/* lock sub word [rax],1 */
		{ "\xf0\x80\x10\x01", 4, false },	/* lock adc byte [rax],1 */
		{ "\xf0\x09\x03", 3, false },		/* lock or [rbx],eax */
		{ "\xf0\x87\x03", 3, false },		/* lock xchg [rbx],eax */
	};
	uint64_t r[X86_NR_REGS], before[X86_NR_REGS];

	(void)state;
	for (int i = 0; i < X86_NR_REGS; i++)
		r[i] = 0x0101010101010101ull * (uint64_t)(i + 1);
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct fake_dev d = { .rval = 5 };
		int e;

		memcpy(before, r, sizeof(r));
		e = emu(t[i].b, t[i].n, CPU_MODE_LONG64, r, &d);
		if (t[i].ud) {
			if (e != -EILSEQ || d.reads + d.writes)
				fail_msg("#%zu: %d, %d accesses", i, e, d.reads + d.writes);
			assert_memory_equal(r, before, sizeof(r));
		} else if (e != (int)t[i].n || d.writes != 1) {
			fail_msg("#%zu: %d, %d writes", i, e, d.writes);
		}
	}
}

/* ---- ADD, ADC, SUB, SBB, CMP against the host CPU ----
 *
 * Each form (r/m,reg and reg,r/m of the 00-3B rows, group 1's 80/81/83
 * and 82 in 32-bit code) at each size, on edge values (0, 1, the sign
 * boundaries, all ones) and random ones, with CF clear and set.  The
 * host runs the same operation in inline asm on a memory or register
 * operand of the same width and direction; the emulator's memory write,
 * destination register (all 64 bits) and the six arithmetic flags must
 * equal what the CPU gives.  x86-64 hosts only.
 */

#define ARITH_FLAGS (F_OF | F_SF | F_ZF | F_AF | F_PF | F_CF)

static uint64_t mask_of(unsigned size)
{
	return size >= 8 ? ~0ull : (1ull << (8 * size)) - 1;
}

/*
 * The host's answer: *mem OP *reg (memory destination, `op %reg, (mem)`)
 * or *reg OP *mem (register destination, `op (mem), %reg`), flags in and
 * out.  Only the arithmetic flags are loaded (no DF, TF or AC); the 128
 * bytes under RSP are skipped so that PUSHF does not hit the red zone.
 */
typedef void (*host_fn)(uint64_t *mem, uint64_t *reg, uint64_t *flags);

#define HOST_FN(name, insn)						\
static void name(uint64_t *mem, uint64_t *reg, uint64_t *flags)	\
{									\
	uint64_t r = *reg, f = *flags & ARITH_FLAGS, out;		\
									\
	asm volatile("lea -128(%%rsp), %%rsp\n\t"			\
		     "push %[f]\n\tpopf\n\t"				\
		     insn "\n\t"					\
		     "pushf\n\tpop %[out]\n\t"				\
		     "lea 128(%%rsp), %%rsp"				\
		     : [out] "=&r"(out), [r] "+r"(r)			\
		     : [f] "r"(f), [p] "r"(mem)				\
		     : "cc", "memory");					\
	*reg = r;							\
	*flags = out;							\
}

#define HOST_SIZE(op, sfx, mod)						\
	HOST_FN(host_##op##sfx##_m, #op #sfx " %" #mod "[r], (%[p])")	\
	HOST_FN(host_##op##sfx##_r, #op #sfx " (%[p]), %" #mod "[r]")
#define HOST_OP(op)							\
	HOST_SIZE(op, b, b) HOST_SIZE(op, w, w)				\
	HOST_SIZE(op, l, k) HOST_SIZE(op, q, q)

HOST_OP(add) HOST_OP(adc) HOST_OP(sbb) HOST_OP(sub) HOST_OP(cmp)

#define FNS(op, d) { host_##op##b_##d, host_##op##w_##d, host_##op##l_##d, host_##op##q_##d }

/* Each operation: its group 1 / row number and the host's versions by size. */
static const struct host_op {
	const char *name;
	uint8_t num;		/* ModRM.reg of group 1 = opcode bits 5:3 */
	host_fn mem_dst[4], reg_dst[4];
} ops[] = {
	{ "add", 0, FNS(add, m), FNS(add, r) },
	{ "adc", 2, FNS(adc, m), FNS(adc, r) },
	{ "sbb", 3, FNS(sbb, m), FNS(sbb, r) },
	{ "sub", 5, FNS(sub, m), FNS(sub, r) },
	{ "cmp", 7, FNS(cmp, m), FNS(cmp, r) },
};
#define NOPS (sizeof(ops) / sizeof(ops[0]))

static unsigned size_index(unsigned size)
{
	return size == 1 ? 0 : size == 2 ? 1 : size == 4 ? 2 : 3;
}

/* Values worth trying at every size: carries and sign changes happen there. */
static const uint64_t edges[] = {
	0, 1, 2, 0xf, 0x10, 0x7e, 0x7f, 0x80, 0x81, 0xfe, 0xff, 0x100,
	0x7fff, 0x8000, 0xffff, 0x7fffffff, 0x80000000, 0xffffffff,
	0x7fffffffffffffffull, 0x8000000000000000ull, 0xfffffffffffffffeull,
	~0ull,
};
#define NEDGES (sizeof(edges) / sizeof(edges[0]))
#define NRANDOM 300

/* One instruction under test, as bytes, and where its operands are. */
struct form {
	uint8_t b[16];
	size_t n;
	enum cpu_mode mode;
	unsigned size;
	const struct host_op *op;
	bool reg_dst;		/* d bit: the register is destination and first operand */
	bool imm;		/* group 1: the source is the immediate */
	uint64_t imm_val;	/* the source it stands for, sign-extended */
	unsigned reg;		/* the register operand (not for imm) */
	bool rex;
};

static void put(struct form *f, uint8_t b)
{
	f->b[f->n++] = b;
}

/* 64-bit code, 66 for a 16-bit operand. */
static void form_start(struct form *f, const struct host_op *op, unsigned size)
{
	*f = (struct form){ .mode = CPU_MODE_LONG64, .size = size, .op = op };
	if (size == 2)
		put(f, 0x66);
}

/*
 * Encode op at size between [rbx] (ModRM 00 reg 011) and register reg (a
 * number 0-15, in 64-bit mode) with the d bit if reg_dst.
 */
static void encode_rm(struct form *f, const struct host_op *op, unsigned size,
		      bool reg_dst, unsigned reg, bool force_rex)
{
	uint8_t rex = (uint8_t)(0x40 | (size == 8) << 3 | (reg >> 3) << 2);

	form_start(f, op, size);
	f->reg_dst = reg_dst;
	f->reg = reg;
	if (rex != 0x40 || force_rex) {
		put(f, rex);
		f->rex = true;
	}
	put(f, (uint8_t)(op->num << 3 | (reg_dst ? 2 : 0) | (size > 1)));
	put(f, (uint8_t)((reg & 7) << 3 | 3));
}

/* Group 1: 80 (imm8), 81 (imm16/32), 83 (imm8 sign-extended) against [rbx]. */
static void encode_imm(struct form *f, const struct host_op *op, unsigned size,
		       uint8_t opcode, uint64_t imm)
{
	unsigned isize = opcode == 0x81 ? (size == 2 ? 2 : 4) : 1;
	unsigned shift = 64 - 8 * isize;
	uint64_t sx = (uint64_t)((int64_t)(imm << shift) >> shift);

	form_start(f, op, size);
	f->imm = true;
	f->imm_val = sx & mask_of(size);
	if (size == 8)
		put(f, 0x48);
	put(f, opcode);
	put(f, (uint8_t)(op->num << 3 | 3));
	for (unsigned i = 0; i < isize; i++)
		put(f, (uint8_t)(imm >> (8 * i)));
}

/* The register operand as the instruction sees it (AH..BH without REX). */
static uint64_t *reg_slot(uint64_t *regs, const struct form *f, unsigned *shift)
{
	bool high = f->size == 1 && !f->rex && f->reg >= 4 && f->reg < 8;

	*shift = high ? 8 : 0;
	return &regs[high ? f->reg - 4 : f->reg];
}

static void fail_case(const struct form *f, uint64_t a, uint64_t b, uint64_t fl,
		      const char *what, uint64_t got, uint64_t want)
{
	char hex[3 * 16 + 1] = "";

	for (size_t i = 0; i < f->n; i++)
		snprintf(hex + 3 * i, 4, "%02x ", f->b[i]);
	fail_msg("%s%s size %u (%s): a %#llx b %#llx flags %#llx: %s %#llx, cpu %#llx",
		 f->op->name, f->reg_dst ? " reg,mem" : f->imm ? " mem,imm" : " mem,reg",
		 f->size, hex, (unsigned long long)a, (unsigned long long)b,
		 (unsigned long long)fl, what, (unsigned long long)got,
		 (unsigned long long)want);
}

/*
 * Run f with destination a and source b (for imm forms, b is ignored:
 * the immediate is the source) and incoming flags fl; compare with the
 * host CPU.  The register's other bits and every other register hold
 * random values, which must come out as the CPU leaves them.
 */
static void check_one(const struct form *f, uint64_t a, uint64_t b, uint64_t fl)
{
	uint64_t regs[X86_NR_REGS], before[X86_NR_REGS];
	uint64_t mem, hreg, hflags, m = mask_of(f->size), *slot = NULL;
	struct x86_insn in;
	struct fake_dev d = { 0 };
	unsigned shift = 0;
	host_fn host;
	int r;

	if (f->imm)
		b = f->imm_val;
	a &= m;
	b &= m;
	for (int i = 0; i < X86_NR_REGS; i++)
		regs[i] = xorshift();
	regs[X86_RFLAGS] = (xorshift() & ~ARITH_FLAGS & 0x3f7fd7ull) | 0x2 | fl;
	if (!f->imm) {
		slot = reg_slot(regs, f, &shift);
		*slot = (*slot & ~(m << shift)) | (f->reg_dst ? a : b) << shift;
	}
	memcpy(before, regs, sizeof(regs));

	/* the CPU: the same register (its other bits too) and memory */
	mem = (xorshift() & ~m) | (f->reg_dst ? b : a);
	hreg = f->imm ? b : *slot >> shift;
	if (f->imm || f->size == 1)
		hreg = (xorshift() & ~m) | (hreg & m);
	hflags = fl;
	host = (f->reg_dst ? f->op->reg_dst : f->op->mem_dst)[size_index(f->size)];
	host(&mem, &hreg, &hflags);

	d.rval = f->reg_dst ? b : a;
	assert_int_equal(x86_decode(f->b, f->n, f->mode, 0, &in), (int)f->n);
	r = x86_emulate_mmio(&in, regs, GPA, fake_mmio, &d);
	if (r != (int)f->n)
		fail_case(f, a, b, fl, "returned", (uint64_t)r, f->n);
	assert_int_equal(d.gpa, GPA);
	assert_int_equal(d.reads, 1);
	assert_int_equal(d.size, f->size);
	if ((regs[X86_RFLAGS] & ARITH_FLAGS) != (hflags & ARITH_FLAGS))
		fail_case(f, a, b, fl, "flags", regs[X86_RFLAGS] & ARITH_FLAGS,
			  hflags & ARITH_FLAGS);
	if ((regs[X86_RFLAGS] & ~ARITH_FLAGS) != (before[X86_RFLAGS] & ~ARITH_FLAGS))
		fail_case(f, a, b, fl, "other flags", regs[X86_RFLAGS], before[X86_RFLAGS]);
	if (f->reg_dst || f->op->num == 7) {
		if (d.writes)
			fail_case(f, a, b, fl, "memory written", d.wval, 0);
	} else if (d.writes != 1 || d.wval != (mem & m)) {
		fail_case(f, a, b, fl, "memory", d.writes ? d.wval : ~0ull, mem & m);
	}
	if (f->reg_dst && f->size == 1) {
		/* a byte register: the CPU's byte in place, the rest as was */
		uint64_t *want = &before[slot - regs];

		*want = (*want & ~(0xffull << shift)) | (hreg & 0xff) << shift;
	} else if (f->reg_dst) {
		before[slot - regs] = hreg;	/* 32-bit results zero-extend */
	}
	regs[X86_RFLAGS] = before[X86_RFLAGS];
	for (int i = 0; i < X86_NR_REGS; i++)
		if (regs[i] != before[i])
			fail_case(f, a, b, fl, "register", regs[i], before[i]);
}

/* Every edge pair and NRANDOM random pairs, each with CF clear and set. */
static void check_form(const struct form *f)
{
	for (unsigned cf = 0; cf < 2; cf++) {
		uint64_t fl = (xorshift() & ARITH_FLAGS & ~F_CF) | cf;

		for (size_t i = 0; i < NEDGES; i++)
			for (size_t j = 0; j < NEDGES; j++)
				check_one(f, edges[i], edges[j], fl);
		for (int k = 0; k < NRANDOM; k++) {
			uint64_t a = xorshift(), b = xorshift();

			/* small values too, where the low-byte flags differ */
			if (k & 1)
				a >>= xorshift() & 63;
			if (k & 2)
				b >>= xorshift() & 63;
			check_one(f, a, b, (xorshift() & ARITH_FLAGS & ~F_CF) | cf);
		}
	}
}

static const unsigned sizes[] = { 1, 2, 4, 8 };

/* 00-03, 10-13, 18-1B, 28-2B, 38-3B, both directions, every size. */
static void test_arith_rm_reg(void **state)
{
	struct form f;

	(void)state;
	for (size_t o = 0; o < NOPS; o++)
		for (size_t s = 0; s < 4; s++)
			for (int dir = 0; dir < 2; dir++) {
				encode_rm(&f, &ops[o], sizes[s], dir, 1, false);	/* rCX */
				check_form(&f);
				encode_rm(&f, &ops[o], sizes[s], dir, 10, false);	/* r10 */
				check_form(&f);
			}
}

/* Byte registers 4-7: AH..BH without REX, SPL..DIL with it. */
static void test_arith_byte_registers(void **state)
{
	struct form f;

	(void)state;
	for (unsigned i = 0; i < NOPS * 2 * 8; i++) {
		encode_rm(&f, &ops[i / 16], 1, i & 1, 4 + (i >> 1 & 3), i & 8);
		check_form(&f);
	}
}

/* 80, 81, 83 with immediates at the edges and random ones. */
static void test_arith_group1_imm(void **state)
{
	static const uint64_t imms[] = { 0, 1, 0x7f, 0x80, 0xff, 0x7fff, 0x8000,
					 0xffff, 0x7fffffff, 0x80000000, 0xffffffff };
	struct form f;

	(void)state;
	for (size_t o = 0; o < NOPS; o++)
		for (size_t i = 0; i < sizeof(imms) / sizeof(imms[0]) + 8; i++) {
			uint64_t imm = i < sizeof(imms) / sizeof(imms[0]) ? imms[i] : xorshift();

			encode_imm(&f, &ops[o], 1, 0x80, imm & 0xff);
			check_form(&f);
			for (size_t s = 1; s < 4; s++) {
				encode_imm(&f, &ops[o], sizes[s], 0x81,
					   imm & (sizes[s] == 2 ? 0xffff : 0xffffffff));
				check_form(&f);
				encode_imm(&f, &ops[o], sizes[s], 0x83, imm & 0xff);
				check_form(&f);
			}
		}
}

/* 82: 80's alias in 32-bit code; #UD in 64-bit mode, refused untouched. */
static void test_arith_82(void **state)
{
	struct form f;
	struct x86_insn in;
	uint64_t regs[X86_NR_REGS] = { 0 };
	struct fake_dev d = { 0 };

	(void)state;
	for (size_t o = 0; o < NOPS; o++) {
		encode_imm(&f, &ops[o], 1, 0x80, 0x81);
		f.b[0] = 0x82;
		f.mode = CPU_MODE_PROT32;
		check_form(&f);
		f.mode = CPU_MODE_REAL;		/* ModRM 03 is [bp+di] there: no matter */
		check_form(&f);
	}
	/* The decoder refuses it in 64-bit mode; the emulator does too. */
	assert_int_equal(x86_decode((const uint8_t *)"\x82\x03\x01", 3, CPU_MODE_LONG64, 0, &in),
			 -EILSEQ);
	assert_int_equal(x86_decode((const uint8_t *)"\x82\x03\x01", 3, CPU_MODE_PROT32, 0, &in), 3);
	in.mode = CPU_MODE_LONG64;
	assert_int_equal(x86_emulate_mmio(&in, regs, GPA, fake_mmio, &d), -EILSEQ);
	assert_int_equal(d.reads + d.writes, 0);
}

/* 16- and 32-bit code: the operand size comes from the mode and 66. */
static void test_arith_other_modes(void **state)
{
	static const struct { unsigned enc; enum cpu_mode mode; unsigned size; } t[] = {
		{ 4, CPU_MODE_REAL, 2 }, { 2, CPU_MODE_REAL, 4 },	/* 2: with 66 */
		{ 4, CPU_MODE_PROT32, 4 }, { 2, CPU_MODE_PROT32, 2 },
	};
	struct form f;

	(void)state;
	for (size_t o = 0; o < NOPS; o++)
		for (unsigned i = 0; i < 2 * 4; i++) {
			/* ModRM 0B: [bp+di] in 16-bit addressing, [ebx] in 32-bit */
			encode_rm(&f, &ops[o], t[i / 2].enc, i & 1, 1, false);
			f.mode = t[i / 2].mode;
			f.size = t[i / 2].size;
			check_form(&f);
		}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_known_lengths),
		cmocka_unit_test(test_trailing_bytes_ignored),
		cmocka_unit_test(test_real_mode_like_prot16),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_invalid),
		cmocka_unit_test(test_valid_outside_long_mode),
		cmocka_unit_test(test_amd_near_branches),
		cmocka_unit_test(test_length_limit),
		cmocka_unit_test(test_need_count),
		cmocka_unit_test(test_fields_prefixes),
		cmocka_unit_test(test_fields_modrm_sib),
		cmocka_unit_test(test_fields_immediates),
		cmocka_unit_test(test_fields_opsize),
		cmocka_unit_test(test_fields_vex),
		cmocka_unit_test(test_cpu_mode),
		cmocka_unit_test(test_hypercall_kind),
		cmocka_unit_test(test_random_bytes),
		cmocka_unit_test(test_mmio_store),
		cmocka_unit_test(test_mmio_store_imm),
		cmocka_unit_test(test_mmio_load),
		cmocka_unit_test(test_mmio_extend),
		cmocka_unit_test(test_mmio_logic),
		cmocka_unit_test(test_mmio_test_xchg),
		cmocka_unit_test(test_mmio_stos),
		cmocka_unit_test(test_mmio_refused),
		cmocka_unit_test(test_mmio_callback_error),
		cmocka_unit_test(test_mmio_lock),
		cmocka_unit_test(test_arith_rm_reg),
		cmocka_unit_test(test_arith_byte_registers),
		cmocka_unit_test(test_arith_group1_imm),
		cmocka_unit_test(test_arith_82),
		cmocka_unit_test(test_arith_other_modes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
