/* SPDX-License-Identifier: MIT */
/* notify.h - service manager notifications and the hardware watchdog. */
#pragma once

#include <stdint.h>

/* Send state ("READY=1", "WATCHDOG=1", ...) to $NOTIFY_SOCKET.  Returns 1
   if sent, 0 when there is no service manager, or -errno. */
int pl_notify(const char *state);

/* The service manager's watchdog period in us (WATCHDOG_USEC for this
   process), 0 if none: ping at half of it. */
uint64_t pl_notify_watchdog_usec(void);

/* Open a watchdog device (/dev/watchdog) and set its timeout (0 = keep the
   driver's).  From then on it must be kicked, or the machine resets. */
int pl_hwdog_open(const char *path, int timeout_s, int *ret_fd);
int pl_hwdog_kick(int fd);
/* Close; disarm (magic 'V') on a clean stop only. */
int pl_hwdog_close(int fd, int disarm);
