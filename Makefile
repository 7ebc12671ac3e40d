# SPDX-License-Identifier: BSD-2-Clause
# ferry: build the hypervisor image, the boot ISO, the test guests, and run
# the tests.  `make help` lists the targets.

BUILD   ?= build
CC      := gcc
LD      := ld
PYTHON  ?= /usr/bin/python3
V       ?= 0
JOBS    ?= $(shell nproc 2>/dev/null || echo 2)
Q       := $(if $(filter 1,$(V)),,@)
NEWLIB  := $(BUILD)/newlib
BEARSSL := $(BUILD)/bearssl
VERSION := 0.1.0
GITREV  := $(shell git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)$(shell git diff --quiet HEAD 2>/dev/null || echo -dirty)
GCCINC  := $(shell $(CC) -print-file-name=include)
LIBGCC  := $(shell $(CC) -print-libgcc-file-name)

WARN    := -Wall -Wextra -Werror -Wmissing-prototypes -Wshadow -fno-common
# ferry's own code never uses FPU/SSE/AVX registers (-mgeneral-regs-only);
# tools/check-fpu.sh verifies the linked image.  See docs/ARCHITECTURE.md.
HV_CFLAGS := -std=gnu11 -O2 -g -ffreestanding -fno-pic -fno-pie -mno-red-zone \
	-mcmodel=kernel -mgeneral-regs-only -fno-stack-protector \
	-fno-omit-frame-pointer -fno-strict-aliasing $(WARN) -MMD -MP -I. \
	-nostdinc -isystem $(NEWLIB)/include -isystem $(BEARSSL)/include -isystem $(GCCINC) \
	-DFERRY_VERSION='"$(VERSION)"' -DFERRY_GITREV='"$(GITREV)"'
HV_ASFLAGS := -I. -I$(BUILD) -D__ASSEMBLY__ -MMD -MP

# The hypervisor, layer by layer, bottom first (docs/ARCHITECTURE.md).
# Each layer is an archive, linked top first, so that a layer can only call
# what lies below it: a call upwards finds nothing to link against.
# tools/check-layers.py checks the includes the same way.
CRYPTO_SRCS  := hv/crypto/selftest.c hv/crypto/noise.c hv/crypto/keyfile.c hv/crypto/random.c
LIB_SRCS     := hv/lib/log.c hv/lib/panic.c hv/lib/ring.c hv/lib/crc32.c hv/lib/time.c \
	hv/lib/heap.c hv/lib/errtext.c hv/lib/tscscale.c \
	hv/lib/namelist.c
BOOT_SRCS    := boot/mb2info.c
ARCH_SRCS    := arch/x86/desc.c arch/x86/trap.c arch/x86/apic.c arch/x86/time.c \
	arch/x86/smp.c arch/x86/setup.c arch/x86/paging.c \
	arch/x86/paging_host.c arch/x86/fpu.c arch/x86/acpi.c arch/x86/msr_pass.c \
	arch/x86/emulate/decode.c arch/x86/emulate/mmio.c \
	arch/x86/emulate/gwalk.c arch/x86/emulate/fetch.c arch/x86/task.c arch/x86/task_switch.S
MM_SRCS      := hv/mm/frame.c hv/mm/memory.c hv/mm/dirty.c hv/mm/gpmap.c
DRIVER_SRCS  := drivers/serial.c drivers/rtc.c drivers/pci.c drivers/nic.c drivers/nicsel.c \
	drivers/e1000.c drivers/e1000e.c drivers/virtq.c drivers/virtio_pci.c drivers/virtio_net.c \
	drivers/vnet_hdr.c
VDEV_SRCS    := hv/vdev/snap.c hv/vdev/pic.c hv/vdev/pit.c hv/vdev/uart.c hv/vdev/rtc.c \
	hv/vdev/devices.c hv/vdev/lapic.c hv/vdev/ioapic.c hv/vdev/apicbus.c hv/vdev/pvclock.c \
	hv/vdev/vpci.c hv/vdev/virtqueue.c hv/vdev/virtio_pci.c hv/vdev/virtio_net.c hv/vdev/vnic.c \
	hv/vdev/pvpanic.c
LOADER_SRCS  := hv/loader/mb1elf.c hv/loader/bzimage.c hv/loader/e820.c \
	hv/loader/mptable.c hv/loader/probe.c hv/loader/pvh.c
NET_SRCS     := hv/net/net.c hv/net/arp.c hv/net/ip.c hv/net/icmp.c hv/net/cksum.c \
	hv/net/tcp.c hv/net/tcp_in.c hv/net/tcp_out.c hv/net/tcp_timer.c \
	hv/net/tcp_sack.c hv/net/nettest.c hv/net/switch.c hv/net/gso.c hv/net/gro.c
VMM_SRCS     := arch/x86/virt.c arch/x86/vmx/caps.c arch/x86/vmx/ept.c arch/x86/vmx/ctl.c \
	arch/x86/vmx/names.c arch/x86/vmx/state.c arch/x86/vmx/exit.c arch/x86/vmx/cr.c arch/x86/vmx/pml.c \
	arch/x86/vmx/hw.c arch/x86/vmx/vmx.c arch/x86/vmx/entry.S \
	arch/x86/svm/caps.c arch/x86/svm/npt.c arch/x86/svm/svm.c \
	arch/x86/svm/entry.S arch/x86/svm/vmcb.c arch/x86/svm/state.c \
	arch/x86/svm/exit.c arch/x86/svm/asid.c
CORE_SRCS    := hv/sched/balance.c hv/conwatch.c hv/console.c hv/version.c hv/modules.c hv/power.c hv/vmm.c hv/vm.c hv/vm_arrival.c \
	hv/vcpu.c hv/exit.c hv/sched.c hv/cpuid.c hv/msr.c hv/vm_devices.c hv/vmstate.c \
	hv/netif.c hv/gnet.c hv/sched/credit.c hv/kvmclock.c hv/tsc.c
MIGRATE_SRCS := hv/migrate/stream.c hv/migrate/statecheck.c hv/migrate/sparse.c hv/migrate/policy.c hv/migrate/chan.c \
	hv/migrate/send.c hv/migrate/recv.c hv/migrate/history.c hv/migrate/doubt.c \
	hv/migrate/trust.c hv/migrate/identity.c
SHELL_SRCS   := hv/shell/lineedit.c hv/shell/parse.c hv/shell/shell.c \
	hv/shell/script.c hv/shell/repl.c hv/shell/commands.c hv/shell/cmd_vm.c \
	hv/shell/cmd_net.c hv/shell/cmd_migrate.c hv/shell/cmd_top.c hv/shell/cmd_sched.c \
	hv/shell/cmd_dirtylog.c hv/shell/attach.c
# Not in any archive: the entry points and kmain, which reach every layer.
TOP_SRCS     := boot/boot.S arch/x86/entry.S arch/x86/trampoline.S hv/main.c

LAYERS  := shell migrate core vmm net loader vdev drivers mm arch boot crypto lib
shell_SRCS   := $(SHELL_SRCS)
migrate_SRCS := $(MIGRATE_SRCS)
core_SRCS    := $(CORE_SRCS)
vmm_SRCS     := $(VMM_SRCS)
net_SRCS     := $(NET_SRCS)
loader_SRCS  := $(LOADER_SRCS)
vdev_SRCS    := $(VDEV_SRCS)
drivers_SRCS := $(DRIVER_SRCS)
mm_SRCS      := $(MM_SRCS)
arch_SRCS    := $(ARCH_SRCS)
boot_SRCS    := $(BOOT_SRCS)
crypto_SRCS  := $(CRYPTO_SRCS)
lib_SRCS     := $(LIB_SRCS)
objs_of  = $(patsubst %,$(BUILD)/obj/%.o,$(1))
TOP_OBJS   := $(call objs_of,$(TOP_SRCS))
LAYER_LIBS := $(foreach l,$(LAYERS),$(BUILD)/layers/lib$(l).a)
HV_SRCS := $(TOP_SRCS) $(foreach l,$(LAYERS),$($(l)_SRCS))
HV_OBJS := $(call objs_of,$(HV_SRCS))

.PHONY: all iso run run-uefi run-bochs test unit integration bench bench-tools deps clean help fuzz fuzz-build
all: $(BUILD)/ferry.elf

help:
	@echo "make            build $(BUILD)/ferry.elf"
	@echo "make iso        build $(BUILD)/ferry.iso (GUESTS=\"a.elf b.elf\" SCRIPT=ferry.rc"
	@echo "                KEY=dir/ferry.key CMDLINE=\"loglevel=debug\" ISO=other.iso)"
	@echo "make run        boot ferry in QEMU (AMD SVM), shell on this terminal"
	@echo "make run-uefi   the same ISO under UEFI firmware (OVMF) in QEMU"
	@echo "make run-bochs  boot ferry in Bochs (Intel VMX)"
	@echo "make test       install what is missing, run every test (unit, 1 min of"
	@echo "                fuzzing, integration)"
	@echo "make unit       host unit tests only (cmocka, ASan, UBSan)"
	@echo "make fuzz       build and run the libFuzzer targets (FUZZ_SECONDS=20 each)"
	@echo "make bench      benchmarks (figures, not pass/fail)"
	@echo "make deps       install the Debian packages the build needs"

deps:
	@tools/deps.sh

# newlib, from Debian's source with ferry's flags; the script rebuilds it
# only when its flags changed (tools/build-newlib.sh).
$(NEWLIB)/lib/libc.a: tools/build-newlib.sh
	tools/build-newlib.sh $(NEWLIB)

# BearSSL, from Debian's source with ferry's flags (docs/migration.md).
$(BEARSSL)/lib/libbearssl.a: tools/build-bearssl.sh $(NEWLIB)/lib/libc.a
	tools/build-bearssl.sh $(BEARSSL) $(NEWLIB)

$(BUILD)/obj/%.c.o: %.c $(NEWLIB)/lib/libc.a $(BEARSSL)/lib/libbearssl.a
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	$(Q)$(CC) $(HV_CFLAGS) -c $< -o $@

# A missing dependency file (a tree built before the .S files had them)
# counts as changed, so the object is rebuilt once and gets one.
HV_SDEPS := $(patsubst %.o,%.d,$(filter %.S.o,$(HV_OBJS)))
$(HV_SDEPS) $(BUILD)/asm-offsets.d: ;
$(BUILD)/obj/%.S.o: %.S $(BUILD)/asm-offsets.h $(BUILD)/obj/%.S.d
	@mkdir -p $(dir $@)
	@echo "  AS      $<"
	$(Q)$(CC) $(HV_ASFLAGS) -c $< -o $@

# Offsets into C structures for the .S files, generated from the C
# definitions (arch/x86/asm-offsets.c): compile to assembly, keep the
# "-> NAME value" markers as #defines.  Its dependency file names the
# header, not the .s, so that an edit to a structure regenerates it.
$(BUILD)/asm-offsets.h: arch/x86/asm-offsets.c $(NEWLIB)/lib/libc.a $(BUILD)/asm-offsets.d
	@mkdir -p $(BUILD)/obj/arch/x86
	@echo "  GEN     $@"
	$(Q)$(CC) $(HV_CFLAGS) -MT $@ -MF $(BUILD)/asm-offsets.d -S $< -o $(BUILD)/obj/arch/x86/asm-offsets.s
	$(Q){ echo '/* Generated from arch/x86/asm-offsets.c: do not edit. */'; \
	  sed -n 's/^.*-> \([A-Za-z0-9_]*\) \$$\{0,1\}\(-\{0,1\}[0-9]*\).*$$/#define \1 \2/p' \
	  $(BUILD)/obj/arch/x86/asm-offsets.s; } > $@.tmp && mv $@.tmp $@

# Rebuild version.c's object whenever the git revision changes.
$(BUILD)/gitrev: FORCE
	@mkdir -p $(BUILD); echo '$(GITREV)' | cmp -s - $@ || echo '$(GITREV)' > $@
$(BUILD)/obj/hv/version.c.o: $(BUILD)/gitrev
FORCE:

define layer_rule
$(BUILD)/layers/lib$(1).a: $$(call objs_of,$$($(1)_SRCS))
	@mkdir -p $$(dir $$@)
	@echo "  AR      $$@"
	$(Q)rm -f $$@ && ar rcs $$@ $$^
endef
$(foreach l,$(LAYERS),$(eval $(call layer_rule,$(l))))

# Includes that point up a layer fail the build (tools/check-layers.py).
$(BUILD)/layers.ok: tools/check-layers.py $(HV_SRCS) $(wildcard $(addsuffix /*.h,$(sort $(dir $(HV_SRCS)))))
	@mkdir -p $(BUILD)
	@echo "  LAYERS  includes point downwards"
	$(Q)$(PYTHON) tools/check-layers.py . && touch $@

# Link to a side file and rename it only once check-fpu passes, so that a
# failed check fails the next `make` too instead of leaving the image.
# The layers' archives are searched top first and only once each.
$(BUILD)/ferry.elf: $(TOP_OBJS) $(LAYER_LIBS) $(BEARSSL)/lib/libbearssl.a $(BUILD)/layers.ok boot/linker.ld tools/check-fpu.sh
	@echo "  LD      $@"
	$(Q)$(LD) -n -nostdlib -z max-page-size=4096 -z noexecstack --no-warn-rwx-segments -T boot/linker.ld -o $@.tmp $(TOP_OBJS) \
		$(LAYER_LIBS) $(BEARSSL)/lib/libbearssl.a $(NEWLIB)/lib/libc.a $(LIBGCC)
	$(Q)tools/check-fpu.sh $@.tmp || { rm -f $@.tmp; exit 1; }
	$(Q)mv -f $@.tmp $@

# ---- test guests -------------------------------------------------------
-include guest/guest.mk
GUEST_ELFS := $(if $(wildcard guest/guest.mk),$(BUILD)/guest/testguest.elf)

# ---- boot ISO ----------------------------------------------------------
# ISO= builds elsewhere (the tests make their own ISOs this way).
ISO     ?= $(BUILD)/ferry.iso
GUESTS  ?=
SCRIPT  ?=
CMDLINE ?=
KEY     ?=
$(ISO): $(BUILD)/ferry.elf $(GUEST_ELFS) $(GUESTS) $(SCRIPT) $(KEY) tools/mkiso.sh FORCE
	tools/mkiso.sh $@ $(BUILD)/ferry.elf "$(GUEST_ELFS) $(GUESTS)" "$(SCRIPT)" "$(CMDLINE)" "$(KEY)"
iso: $(ISO)

QEMU_CPUS ?= 2
QEMU_MEM  ?= 512
run: deps
	$(MAKE) -j$(JOBS) iso
	qemu-system-x86_64 -accel tcg -cpu qemu64,+svm,+npt,+rdrand -smp $(QEMU_CPUS) \
		-m $(QEMU_MEM) -cdrom $(ISO) -display none -no-reboot \
		-serial mon:stdio -device isa-debug-exit,iobase=0xf4,iosize=0x04 || true

# UEFI: OVMF's code read-only, a private writable copy of its variables.
OVMF_CODE ?= /usr/share/OVMF/OVMF_CODE.fd
OVMF_VARS ?= /usr/share/OVMF/OVMF_VARS.fd
run-uefi: deps
	$(MAKE) iso
	cp $(OVMF_VARS) $(BUILD)/OVMF_VARS.fd
	qemu-system-x86_64 -accel tcg -cpu qemu64,+svm,+npt,+rdrand -smp $(QEMU_CPUS) \
		-m $(QEMU_MEM) -machine q35 \
		-drive if=pflash,format=raw,readonly=on,file=$(OVMF_CODE) \
		-drive if=pflash,format=raw,file=$(BUILD)/OVMF_VARS.fd \
		-cdrom $(ISO) -display none -no-reboot \
		-serial mon:stdio -device isa-debug-exit,iobase=0xf4,iosize=0x04 || true

run-bochs: deps
	$(MAKE) iso
	tools/run-bochs.sh $(ISO)

# ---- tests -------------------------------------------------------------
UNIT_TESTS :=
-include $(wildcard tests/unit/*.mk)
UNIT_CFLAGS := -std=gnu11 -g -O1 -fsanitize=address,undefined \
	-fno-sanitize-recover=all -fno-omit-frame-pointer -Wall -Wextra -Werror -Wshadow -I.
UNIT_BINS := $(addprefix $(BUILD)/unit/,$(UNIT_TESTS))

# Each binary's headers go to BIN.d (-MM: one pass over all its sources;
# -MMD in the compile would keep only the last source's).  A missing .d
# counts as changed, so a binary built before it had one is rebuilt once.
define unit_rule
$(BUILD)/unit/$(1).d: ;
$(BUILD)/unit/$(1): $$(unit_$(1)_SRCS) $$(wildcard $$(patsubst %.c,%.h,$$(unit_$(1)_SRCS))) $(BUILD)/unit/$(1).d
	@mkdir -p $$(dir $$@)
	@echo "  CC      $$@ (unit test)"
	$(Q)$$(CC) $$(UNIT_CFLAGS) $$(unit_$(1)_CFLAGS) -MM -MP -MT $$@ $$(unit_$(1)_SRCS) > $$@.d
	$(Q)$$(CC) $$(UNIT_CFLAGS) $$(unit_$(1)_CFLAGS) $$(unit_$(1)_SRCS) -lcmocka $$(unit_$(1)_LIBS) -o $$@
endef
$(foreach t,$(UNIT_TESTS),$(eval $(call unit_rule,$(t))))
-include $(UNIT_BINS:=.d)
-include tests/fuzz/fuzz.mk

unit: $(UNIT_BINS)
	@tools/run-unit.sh $(UNIT_BINS)
	@tests/tools/check-fpu-test.sh
	@tests/tools/check-layers-test.sh
	@PYTHON=$(PYTHON) tests/tools/ferry-keygen-test.sh
	@$(PYTHON) tests/tools/vmlinux-from-bzimage-test.py

# Two workers, a module each at a time (module-scoped hosts stay in one
# worker), the longest modules first (tests/integration/conftest.py): the
# suite alone keeps a 2-core machine about half idle, its emulators
# waiting on timers and on each other.  ITEST_JOBS=1 runs it serially.
ITEST_JOBS ?= 2
integration: iso
	tools/fetch-linux.sh
	$(PYTHON) -m pytest -v -n $(ITEST_JOBS) --dist loadfile --durations=40 \
		tests/integration $(PYTEST_ARGS)

# Debian's kernel first (cached under build/linux; the Linux tests need it
# too): test_linux_boot.c probes the real image and skips without it
# (the builds in parallel: the unit tests' alone took 4 minutes on one core)
test: deps
	tools/fetch-linux.sh
	$(MAKE) -j$(JOBS) unit
	$(MAKE) -j$(JOBS) fuzz FUZZ_SECONDS=10
	$(MAKE) -j$(JOBS) iso
	$(MAKE) integration

# host tools the benchmarks run beside the emulators (their own CPU's figures)
BENCH_TOOLS := $(BUILD)/bench/seal_native
$(BUILD)/bench/seal_native: tests/bench/seal_native.c hv/crypto/noise.c $(wildcard hv/crypto/*.h)
	@mkdir -p $(dir $@)
	@echo "  CC      $@ (host)"
	$(Q)$(CC) -std=gnu11 -O2 -Wall -Wextra -Werror -I. $(filter %.c,$^) -lbearssl -o $@
bench-tools: $(BENCH_TOOLS)

bench: deps iso bench-tools
	$(PYTHON) tests/bench/run.py

clean:
	rm -rf $(BUILD)/obj $(BUILD)/unit $(BUILD)/guest $(BUILD)/iso $(BUILD)/*.elf $(BUILD)/*.iso \
		$(BUILD)/asm-offsets.h $(BUILD)/asm-offsets.d

-include $(HV_OBJS:.o=.d) $(BUILD)/asm-offsets.d
