/* SPDX-License-Identifier: BSD-2-Clause */
/* Short words for the errno values ferry returns, for messages to the
 * operator (newlib's strerror() texts are long and libc-flavoured). */
#include <errno.h>
#include <stddef.h>
#include "hv/lib/errtext.h"

static const struct {
	int err;
	const char *text;
} err_text[] = {
	{ EPERM, "not permitted" },
	{ ENOENT, "no such object" },
	{ EINTR, "interrupted" },
	{ EIO, "I/O error" },
	{ E2BIG, "too many arguments" },
	{ EAGAIN, "try again" },
	{ ENOMEM, "out of memory" },
	{ EBUSY, "busy" },
	{ EEXIST, "already exists" },
	{ ENODEV, "no such device" },
	{ EINVAL, "invalid argument" },
	{ ENOSPC, "no space left" },
	{ ERANGE, "out of range" },
	{ ENOSYS, "not implemented" },
	{ ENOTSUP, "not supported" },
	{ ECONNREFUSED, "connection refused" },
	{ ECONNRESET, "connection reset" },
	{ ETIMEDOUT, "timed out" },
	{ EHOSTUNREACH, "host unreachable" },
	{ ECANCELED, "cancelled" },
};

const char *errtext(int err)
{
	size_t i;

	for (i = 0; i < sizeof(err_text) / sizeof(err_text[0]); i++)
		if (err_text[i].err == -err)
			return err_text[i].text;
	return "failed";
}
