/* SPDX-License-Identifier: MIT */
#include <stdio.h>

int main(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	puts("railmon");
	return 0;
}
