/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The host's CMOS real-time clock (MC146818: ports 0x70/0x71), read once at
 * boot for the wall-clock time that guests' RTCs start from.  Registers:
 * 0 seconds, 2 minutes, 4 hours, 7 day, 8 month, 9 year, the century
 * where the FADT names its register (else 20xx), A bit 7 update in progress,
 * B bit 2 binary (else BCD), bit 1 24-hour (else 12-hour, bit 7 of the
 * hour is PM).
 */
#include "arch/x86/cpu.h"
#include "drivers/rtc.h"
#include "hv/lib/time.h"

static uint64_t boot_epoch_s, boot_ns;

static uint8_t cmos(uint8_t reg)
{
	outb(0x70, reg);
	return inb(0x71);
}

static unsigned int from_bcd(uint8_t v, bool binary)
{
	return binary ? v : (v >> 4) * 10 + (v & 0xf);
}

/* Days from 1970-01-01 to y-m-d (proleptic Gregorian). */
static uint64_t days_from_civil(unsigned int y, unsigned int m, unsigned int d)
{
	y -= m <= 2;
	unsigned int era = y / 400, yoe = y - era * 400;
	unsigned int doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	unsigned int doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;

	return (uint64_t)era * 146097 + doe - 719468;
}

static bool read_once(uint8_t r[7], uint8_t century_reg)
{
	const uint8_t regs[7] = { 0, 2, 4, 7, 8, 9, century_reg };

	for (int i = 0; i < 1000 && (cmos(0x0a) & 0x80); i++)
		udelay(10);			/* an update is in progress */
	for (int i = 0; i < 7; i++)
		r[i] = i < 6 || century_reg ? cmos(regs[i]) : 0;
	return !(cmos(0x0a) & 0x80);
}

int host_rtc_init(uint8_t century_reg)
{
	uint8_t a[7], b[7];
	int tries = 0;

	do {
		if (++tries > 5)
			return -1;
	} while (!read_once(a, century_reg) || !read_once(b, century_reg) ||
		 __builtin_memcmp(a, b, 7));
	uint8_t fmt = cmos(0x0b);
	bool bin = fmt & 4, h24 = fmt & 2;
	unsigned int hour = from_bcd(a[2] & 0x7f, bin);

	if (!h24)
		hour = hour % 12 + ((a[2] & 0x80) ? 12 : 0);
	unsigned int century = a[6] ? from_bcd(a[6], bin) : 20;
	unsigned int year = from_bcd(a[5], bin) + 100 * (century >= 20 && century <= 21 ? century : 20);
	unsigned int mon = from_bcd(a[4], bin), day = from_bcd(a[3], bin);

	if (mon < 1 || mon > 12 || day < 1 || day > 31 || hour > 23 || year < 2000)
		return -1;
	boot_epoch_s = days_from_civil(year, mon, day) * 86400 + hour * 3600 +
		       from_bcd(a[1], bin) * 60 + from_bcd(a[0], bin);
	boot_ns = time_now_ns();
	return 0;
}

uint64_t host_rtc_epoch_now(void)
{
	return boot_epoch_s ? boot_epoch_s + (time_now_ns() - boot_ns) / 1000000000ull : 0;
}
