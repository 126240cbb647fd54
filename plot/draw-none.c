/* SPDX-License-Identifier: MIT */
/*
 * draw-none.c - a build without cairo (a vehicle's cross build): PNG and
 * SVG are not there; plot_write says so with -ENOTSUP.
 */
#include <errno.h>

#include "plot/plot-private.h"

int plot_draw_cairo(const plot_t *p, const char *path, enum plot_format f)
{
	(void)p;
	(void)path;
	(void)f;
	return -ENOTSUP;
}
