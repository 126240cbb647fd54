/* SPDX-License-Identifier: MIT */
/*
 * uplot-none.c - a build without uPlot (no npm at build time, or a cross
 * build): no HTML page; plot_write says so with -ENOTSUP.
 */
#include <stddef.h>

#include "plot/plot-private.h"

const char *const plot_uplot_js = NULL;
const char *const plot_uplot_css = NULL;
