/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * CRC-32 as used by zlib, Ethernet and PNG (reflected polynomial 0xEDB88320,
 * initial value and final XOR 0xFFFFFFFF): crc32_update(0, "123456789", 9)
 * is 0xCBF43926.  Chain calls by passing the previous result.
 */
#ifndef FERRY_HV_NET_CRC32_H
#define FERRY_HV_NET_CRC32_H

#include <stddef.h>
#include <stdint.h>

uint32_t crc32_update(uint32_t crc, const void *buf, size_t len);

#endif
