/* SPDX-License-Identifier: MIT */
/* bus-private.h - shared between bus/ backends only. */
#pragma once

#include "bus.h"

/* One ops table per backend; bus.c picks one from the cfg. */
extern const struct bus_ops bus_can_socket_ops;
extern const struct bus_ops bus_can_slcan_ops;
extern const struct bus_ops bus_can_trace_ops;
extern const struct bus_ops bus_modbus_ops;
