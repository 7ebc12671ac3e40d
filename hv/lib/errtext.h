/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef FERRY_HV_LIB_ERRTEXT_H
#define FERRY_HV_LIB_ERRTEXT_H

/* Text for a negative errno ("invalid argument", ...); "failed" if unknown. */
const char *errtext(int err);

#endif
