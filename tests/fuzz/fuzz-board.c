/* SPDX-License-Identifier: MIT */
/* fuzz-board.c - the board-file parser on arbitrary bytes. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "conf/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1), err[CONF_ERR_MAX];
	struct conf_board *cfg;

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = 0;
	/* Either a config or an error message naming the line; never a crash.
	   Relative paths resolve against the name's directory. */
	if (conf_parse("/fuzz/board.ini", text, &cfg, err, sizeof(err)) == 0)
		conf_free(cfg);
	else if (strncmp(err, "/fuzz/board.ini:", 16))
		abort();
	free(text);
	return 0;
}
