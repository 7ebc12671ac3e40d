# SPDX-License-Identifier: BSD-2-Clause
# Test guests: freestanding 32-bit multiboot1 kernels.  Included by the top
# Makefile (which sets BUILD) or used alone from the repository root:
#   make -f guest/guest.mk BUILD=build
# Defines $(BUILD)/guest/testguest.elf and the phony target "guest".

# Keep the includer's default goal; alone, "guest" is the default.
GUEST_SAVED_GOAL := $(.DEFAULT_GOAL)
GUEST_STANDALONE := $(if $(filter-out $(lastword $(MAKEFILE_LIST)),$(MAKEFILE_LIST)),,1)

BUILD ?= build
GUEST_CC ?= gcc
GUEST_DIR := $(patsubst %/,%,$(dir $(lastword $(MAKEFILE_LIST))))
GUEST_ROOT := $(patsubst %/,%,$(dir $(GUEST_DIR)))
GUEST_CFLAGS := -m32 -std=gnu11 -ffreestanding -fno-pic -fno-pie \
	-fno-stack-protector -fno-asynchronous-unwind-tables \
	-fno-tree-loop-distribute-patterns -mgeneral-regs-only -nostdlib -O2 \
	-Wall -Wextra -Werror -Wmissing-prototypes -Wshadow -fno-common \
	-I$(GUEST_ROOT) -MMD -MP
GUEST_LDFLAGS := -m32 -static -nostdlib -no-pie -Wl,--build-id=none \
	-Wl,-z,max-page-size=0x1000 -Wl,-T,$(GUEST_DIR)/testguest/linker.ld

TESTGUEST_SRCS := $(addprefix $(GUEST_DIR)/testguest/, entry.S main.c lib.c \
	console.c trap.c timer.c mode_hello.c mode_memtest.c \
	mode_heartbeat.c mode_fpu.c mode_bench.c mode_hostile.c \
	hostile_mem.c mode_vq.c mode_dirty.c mode_ipi.c mode_smp.c smp_tramp.S)
TESTGUEST_OBJS := $(patsubst $(GUEST_DIR)/testguest/%,$(BUILD)/guest/testguest/%.o,$(TESTGUEST_SRCS))

.PHONY: guest guest-clean
guest: $(BUILD)/guest/testguest.elf

$(BUILD)/guest/testguest.elf: $(TESTGUEST_OBJS) $(GUEST_DIR)/testguest/linker.ld
	$(GUEST_CC) $(GUEST_LDFLAGS) -o $@ $(TESTGUEST_OBJS)

# Static pattern rules: they win over any generic %.o rule of the includer.
$(filter %.c.o,$(TESTGUEST_OBJS)): $(BUILD)/guest/testguest/%.c.o: $(GUEST_DIR)/testguest/%.c
	@mkdir -p $(dir $@)
	$(GUEST_CC) $(GUEST_CFLAGS) -c $< -o $@

$(filter %.S.o,$(TESTGUEST_OBJS)): $(BUILD)/guest/testguest/%.S.o: $(GUEST_DIR)/testguest/%.S
	@mkdir -p $(dir $@)
	$(GUEST_CC) $(GUEST_CFLAGS) -c $< -o $@

guest-clean:
	rm -rf $(BUILD)/guest

-include $(TESTGUEST_OBJS:.o=.d)

ifeq ($(GUEST_STANDALONE),1)
.DEFAULT_GOAL := guest
else
.DEFAULT_GOAL := $(GUEST_SAVED_GOAL)
endif
