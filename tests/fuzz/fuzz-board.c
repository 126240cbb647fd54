/* SPDX-License-Identifier: MIT */
/* fuzz-board.c - the board-file parser on arbitrary bytes. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "board/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1), err[BOARD_ERR_MAX];
	struct board_cfg *cfg;

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = 0;
	/* Either a config or an error message naming the line; never a crash.
	   Relative paths resolve against the name's directory. */
	if (board_cfg_parse("/fuzz/board.ini", text, &cfg, err, sizeof(err)) == 0)
		board_cfg_free(cfg);
	else if (strncmp(err, "/fuzz/board.ini:", 16))
		abort();
	free(text);
	return 0;
}
