/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef FERRY_HV_VERSION_H
#define FERRY_HV_VERSION_H

extern const char ferry_version[];
extern const char ferry_gitrev[];
extern const char ferry_build_date[];

#endif
