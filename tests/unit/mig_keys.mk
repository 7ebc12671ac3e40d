UNIT_TESTS += mig_keys
unit_mig_keys_SRCS := tests/unit/test_mig_keys.c hv/crypto/keyfile.c hv/crypto/noise.c \
	hv/crypto/random.c hv/migrate/trust.c
unit_mig_keys_LIBS := -lbearssl
unit_mig_keys_CFLAGS := -DKEYGEN_DIR='"$(BUILD)/unit/gen/keygen"'
# A key file from the real tool: the parser must read what ferry-keygen writes.
$(BUILD)/unit/gen/keygen/ferry.key: tools/ferry-keygen
	@rm -rf $(dir $@)
	$(Q)$(PYTHON) tools/ferry-keygen $(dir $@) > /dev/null 2>&1
$(BUILD)/unit/mig_keys: $(BUILD)/unit/gen/keygen/ferry.key
