/* SPDX-License-Identifier: MIT */
#pragma once

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>


struct demo_opts {
	const char *board;     /* demo board file; NULL: conf_demo_board_path() */
	const char *data_dir;  /* log directory */
	double duration_s;     /* <= 0: until *stop */
	bool live;             /* redraw the table while running */
	bool ansi;             /* clear the screen between redraws (a tty) */
};

/* Run the demo until duration_s or *stop; prints the table and a summary.
   Returns 0 or -errno (messages already printed). */
int cli_demo_run(const struct demo_opts *opts, volatile sig_atomic_t *stop);
