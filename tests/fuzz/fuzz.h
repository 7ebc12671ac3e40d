/* SPDX-License-Identifier: BSD-2-Clause */
/* What every libFuzzer target here shares (see README.md). */
#ifndef FERRY_TESTS_FUZZ_FUZZ_H
#define FERRY_TESTS_FUZZ_FUZZ_H

#include <stdio.h>
#include <stdlib.h>

/* An invariant: its failure is a finding, reported like a crash. */
#define CHECK(c) do { if (!(c)) { fprintf(stderr, "invariant failed: %s (%s:%d)\n", \
	#c, __FILE__, __LINE__); abort(); } } while (0)

/* FERRY_FUZZ_MKSEEDS=DIR: the target writes its seed inputs into DIR with
 * mkseeds(DIR) and exits, instead of fuzzing. */
#define FUZZ_SEEDS_FROM(mkseeds)						\
	int LLVMFuzzerInitialize(int *argc, char ***argv);			\
	int LLVMFuzzerInitialize(int *argc, char ***argv)			\
	{									\
		const char *dir = getenv("FERRY_FUZZ_MKSEEDS");			\
										\
		(void)argc; (void)argv;						\
		if (dir)							\
			mkseeds(dir);						\
		return 0;							\
	}

#endif
