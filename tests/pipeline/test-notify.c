/* SPDX-License-Identifier: MIT */
/*
 * test-notify.c - pipeline/notify.c against a real datagram socket, as a
 * service manager listens: what pl_notify sends, where (a path, the
 * abstract namespace), and the watchdog period it reads from the
 * environment.  (The hardware watchdog needs a device: the VM's
 * watchdog-vm test drives it through `railmon run`.)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "pipeline/notify.h"
#include "tlib.h"

static int listener(const char *path, socklen_t *ret_len, struct sockaddr_un *sa)
{
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	CHECK(fd >= 0);
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	strcpy(sa->sun_path, path);
	*ret_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(path));
	if (path[0] == '@')
		sa->sun_path[0] = 0;
	CHECK(bind(fd, (struct sockaddr *)sa, *ret_len) == 0, "%s: %s", path, strerror(errno));
	return fd;
}

static void expect(int fd, const char *want)
{
	char got[256];
	ssize_t n = recv(fd, got, sizeof(got) - 1, MSG_DONTWAIT);

	CHECK(n >= 0, "nothing received for %s", want);
	got[n] = 0;
	CHECK_STR(got, want);
}

int main(void)
{
	char dir[] = "/tmp/test-notify-XXXXXX", path[64], abstract[64], pid[32];
	struct sockaddr_un sa;
	socklen_t len;
	int fd, afd;

	CHECK(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/notify.sock", dir);
	snprintf(abstract, sizeof(abstract), "@railmon-test-notify-%d", (int)getpid());
	fd = listener(path, &len, &sa);
	afd = listener(abstract, &len, &sa);

	unsetenv("NOTIFY_SOCKET");
	CHECK(pl_notify("READY=1") == 0); /* no service manager: nothing to tell */
	setenv("NOTIFY_SOCKET", path, 1);
	CHECK(pl_notify(NULL) == -EINVAL);
	CHECK(pl_notify("READY=1") == 1);
	expect(fd, "READY=1");
	CHECK(pl_notify("STATUS=recording 3 buses") == 1);
	expect(fd, "STATUS=recording 3 buses");
	setenv("NOTIFY_SOCKET", abstract, 1);
	CHECK(pl_notify("WATCHDOG=1") == 1);
	expect(afd, "WATCHDOG=1");
	setenv("NOTIFY_SOCKET", "relative.sock", 1);
	CHECK(pl_notify("READY=1") == -EINVAL);
	snprintf(path + strlen(path), sizeof(path) - strlen(path), ".gone");
	setenv("NOTIFY_SOCKET", path, 1);
	CHECK(pl_notify("READY=1") == -ENOENT);

	unsetenv("WATCHDOG_USEC");
	unsetenv("WATCHDOG_PID");
	CHECK(pl_notify_watchdog_usec() == 0);
	setenv("WATCHDOG_USEC", "2000000", 1);
	CHECK(pl_notify_watchdog_usec() == 2000000);
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	setenv("WATCHDOG_PID", pid, 1);
	CHECK(pl_notify_watchdog_usec() == 2000000);
	snprintf(pid, sizeof(pid), "%d", (int)getpid() + 1);
	setenv("WATCHDOG_PID", pid, 1); /* another process's watchdog */
	CHECK(pl_notify_watchdog_usec() == 0);
	unsetenv("WATCHDOG_PID");
	setenv("WATCHDOG_USEC", "20s", 1);
	CHECK(pl_notify_watchdog_usec() == 0);

	close(fd);
	close(afd);
	snprintf(path, sizeof(path), "%s/notify.sock", dir);
	unlink(path);
	rmdir(dir);
	return 0;
}
