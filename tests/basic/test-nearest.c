/* SPDX-License-Identifier: MIT */
/* test-nearest.c - basic_nearest_names (basic/nearest.h): one-letter typos
   of the whole name, of its message part and of its signal part are found;
   a swap of two neighbours is one typo; far names are not offered; the
   bound keeps the nearest first in a dictionary of 20,000 names. */
#include <assert.h>
#include <stdio.h>
#include <string.h>

#include "basic/nearest.h"

/* want's suggestions begin with first (nearest first) */
static int starts(const char *s, const char *first)
{
	return !strncmp(s, first, strlen(first));
}

static const char *near(const char *want, const char *const *names, size_t n)
{
	static char buf[512];

	basic_nearest_names(want, names, n, buf, sizeof(buf));
	return buf;
}

int main(void)
{
	static const char *const names[] = { "VehicleSpeed.Speed", "Brake.Pressure", "Doors.Open", "Eng.Temp" };
	static char big[20000][32];
	static const char *bigp[20000];
	const size_t n = sizeof(names) / sizeof(names[0]);

	/* the message part with one letter missing (before: "none near") */
	assert(!strcmp(near("VehicleSped", names, n), "VehicleSpeed.Speed"));
	/* the signal part, one letter wrong, and case folded */
	assert(!strcmp(near("presure", names, n), "Brake.Pressure"));
	assert(starts(near("Opne", names, n), "Doors.Open"));
	/* the whole name with a swap of two neighbours: one typo */
	assert(!strcmp(near("Eng.Tmep", names, n), "Eng.Temp"));
	assert(!strcmp(near("VehicleSpeed.Sepeed", names, n), "VehicleSpeed.Speed"));
	/* nothing near: nothing offered */
	assert(!strcmp(near("Catenary", names, n), ""));
	/* an exact signal part is nearest, before a farther whole name */
	{
		static const char *const two[] = { "Eng.Temps", "Cab.Temp" };

		assert(!strcmp(near("Temp", two, 2), "Cab.Temp, Eng.Temps"));
	}
	/* 20,000 names: the five nearest, nearest first, the bound tightening
	   as they are found must not drop a nearer one that comes late */
	for (size_t i = 0; i < 20000; i++) {
		snprintf(big[i], sizeof(big[i]), "Msg%zu.Signal%zu", i / 8, i);
		bigp[i] = big[i];
	}
	strcpy(big[19999], "Late.Signal12345");
	assert(!strcmp(near("Signal12345", bigp, 20000), "Msg1543.Signal12345, Late.Signal12345, Msg154.Signal1234, "
	                                                 "Msg154.Signal1235, Msg155.Signal1245"));
	/* a tiny buffer is cut, still terminated */
	{
		char small[8];

		basic_nearest_names("VehicleSped", names, n, small, sizeof(small));
		assert(strlen(small) == 7);
	}
	puts("nearest: ok");
	return 0;
}
