/* SPDX-License-Identifier: BSD-2-Clause */
/* Version, git revision and build date, shown by `version` and at boot. */
#include "hv/version.h"

const char ferry_version[] = FERRY_VERSION;
const char ferry_gitrev[] = FERRY_GITREV;
const char ferry_build_date[] = __DATE__ " " __TIME__;
