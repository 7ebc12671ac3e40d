/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rtcwait: wait for the CMOS clock's interrupts the way hwclock does, in the
 * Linux test guest's initramfs (tools/mkinitramfs.sh builds it, static, with
 * the host's C library).
 *
 *   rtcwait [N]   turn on update interrupts of /dev/rtc0 (RTC_UIE_ON, which
 *                 rtc-cmos serves with its alarm at the next second), wait
 *                 for N of them (default 2), 5 s at most each, and print
 *                 "rtcwait: N interrupts, M ms" (the time from the first to
 *                 the last) or why not, exiting 1.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/rtc.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 2, fd;
	long long first = 0, last = 0;
	unsigned long data;

	if (n < 1 || n > 60) {
		fprintf(stderr, "rtcwait: N is 1 to 60\n");
		return 2;
	}
	fd = open("/dev/rtc0", O_RDONLY);
	if (fd < 0 || ioctl(fd, RTC_UIE_ON, 0) < 0) {
		printf("rtcwait: /dev/rtc0: %s\n", strerror(errno));
		return 1;
	}
	for (int i = 0; i < n; i++) {
		struct pollfd p = { .fd = fd, .events = POLLIN };

		if (poll(&p, 1, 5000) != 1 || read(fd, &data, sizeof(data)) != sizeof(data)) {
			printf("rtcwait: no interrupt in 5 s after %d\n", i);
			return 1;
		}
		last = now_ms();
		if (i == 0)
			first = last;
	}
	ioctl(fd, RTC_UIE_OFF, 0);
	printf("rtcwait: %d interrupts, %lld ms\n", n, last - first);
	return 0;
}
