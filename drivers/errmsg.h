/* Formatting an error message into a caller's buffer: the one helper every C layer uses. */
#ifndef TEFLON_ERRMSG_H
#define TEFLON_ERRMSG_H

#include <stddef.h>

/* printf into err[errlen]; does nothing when err is NULL or errlen is 0. */
void teflon_errf(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
