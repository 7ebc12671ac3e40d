UNIT_TESTS += noise
unit_noise_SRCS := tests/unit/test_noise.c hv/crypto/noise.c
unit_noise_LIBS := -lbearssl
unit_noise_CFLAGS := -I$(BUILD)/unit/gen
# The transcript of a second implementation (Python's cryptography package).
$(BUILD)/unit/gen/noise_kk_vectors.h: tests/tools/noise_kk.py tests/tools/noise_kk_cacophony.json
	@mkdir -p $(dir $@)
	$(Q)$(PYTHON) tests/tools/noise_kk.py > $@.tmp && mv -f $@.tmp $@
$(BUILD)/unit/noise: $(BUILD)/unit/gen/noise_kk_vectors.h
