/* SPDX-License-Identifier: MIT */
/*
 * to-can.h - a trace sent onto a CAN interface (`railmon replay --to-can`):
 * whether the interface is virtual, the two devices, and the loop that
 * copies the trace's frames onto the bus at the trace's pace.  Nothing
 * here prints; cli/replay-cmd.c says what happened.
 */
#pragma once

#include <signal.h>
#include <stdint.h>

#include "bus.h"

/* 1: a virtual CAN interface (vcan, vxcan: under /sys/devices/virtual),
   0: a real CAN device, -ENODEV: no such interface, -ENOTTY: not CAN. */
int bus_can_iface_virtual(const char *ifname);

/* The configurations of the trace source (trace, paced at speed: 0 as
   fast as the interface takes the frames) and of the SocketCAN output on
   ifname (CAN FD, normal mode: the caller has checked that railmon may
   transmit there, bus_can_iface_virtual() or the user's --force). */
void bus_to_can_cfgs(const char *trace, const char *ifname, double speed, struct bus_cfg *ret_in,
                     struct bus_cfg *ret_out);

/*
 * Send every CAN frame src gives onto dst until src ends or *stop is set
 * (a signal handler's flag; read, never written).  A full TX queue is
 * back-pressure: the frame is tried again.  Not RT: it sleeps.  0, or the
 * -errno of src's recv or dst's send; *sent is added the frames sent,
 * also when it fails.
 */
int bus_can_forward(bus_dev_t *src, bus_dev_t *dst, const volatile sig_atomic_t *stop, uint64_t *sent);
