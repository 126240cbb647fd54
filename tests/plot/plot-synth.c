/* SPDX-License-Identifier: MIT */
/*
 * plot-synth.c OUT [--local] - a known picture for test-plot-picture.py:
 * 10 minutes of a 10 Hz speed (km/h, a sine of amplitude 100) with one
 * sample of 250 at t0 + 300 s and no samples from t0 + 450 s to t0 + 500 s,
 * a 1 Hz brake pressure (bar) on a second panel, and two events.  What the
 * picture must show is the test's to check, from the pixels.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "plot/plot.h"

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	const int64_t S = 1000000000, t0 = 1764748800LL * S; /* 2025-12-03 08:00:00Z */
	struct plot_opts o = { .from_ns = INT64_MIN, .to_ns = INT64_MAX, .title = "synthetic </script> run",
	                       .local_time = argc > 2 && !strcmp(argv[2], "--local") };
	plot_t *p;
	if (plot_create(&p, &o))
		return 1;
	int sp = plot_add_series(p, "VehicleSpeed.Speed", "km/h");
	int br = plot_add_series(p, "BrakePressure.BrakePipePressure", "bar");
	for (int i = 0; i < 6000; i++) {
		int64_t t = t0 + (int64_t)i * (S / 10);
		if (t >= t0 + 450 * S && t < t0 + 500 * S)
			continue;
		plot_add_point(p, sp, t, t == t0 + 300 * S ? 250 : 100 * sin(i / 200.0));
	}
	for (int i = 0; i < 600; i++)
		plot_add_point(p, br, t0 + (int64_t)i * S, 5 - 0.001 * i);
	plot_add_event(p, t0 + 60 * S, "START");
	plot_add_event(p, t0 + 400 * S, "DOOR_OPEN");
	enum plot_format f;
	if (plot_format_of(argv[1], &f))
		return 2;
	int r = plot_write(p, argv[1], f);
	plot_free(p);
	if (r) {
		fprintf(stderr, "plot-synth: %s: %s\n", argv[1], strerror(-r));
		return 1;
	}
	return 0;
}
