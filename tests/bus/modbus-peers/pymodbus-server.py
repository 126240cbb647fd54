#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""pymodbus (Debian python3-pymodbus 3.0) test peer for railmon's Modbus driver.

    pymodbus-server.py --tcp PORT            (0 = any free port)
    pymodbus-server.py --rtu DEVICE [--baud B]

Serves units 1..3.  Register (unit, addr) holds (unit * 1000 + addr) & 0xffff
in holding and input tables, coils/discrete inputs hold the same bit hash as
tests/bus/modbus-peers/mb-fault-server.c, for addresses 0..1999 (zero_mode, so
protocol address = list index).  Prints "READY <port>" (TCP) or "READY" (RTU)
once serving and exits when stdin reaches EOF.
"""
import asyncio
import logging
import sys

from pymodbus.datastore import (ModbusSequentialDataBlock, ModbusServerContext,
                                ModbusSlaveContext)
from pymodbus.framer.rtu_framer import ModbusRtuFramer
from pymodbus.server import StartAsyncSerialServer, StartAsyncTcpServer

UNITS = (1, 2, 3)
SIZE = 2000


def mb_bit(unit, addr):
    h = ((unit * 2654435761) ^ (addr * 40503)) & 0xffffffff
    return (h >> 13) & 1


def context():
    slaves = {}
    for u in UNITS:
        regs = [(u * 1000 + a) & 0xffff for a in range(SIZE)]
        bits = [bool(mb_bit(u, a)) for a in range(SIZE)]
        slaves[u] = ModbusSlaveContext(
            di=ModbusSequentialDataBlock(0, bits),
            co=ModbusSequentialDataBlock(0, list(bits)),
            hr=ModbusSequentialDataBlock(0, regs),
            ir=ModbusSequentialDataBlock(0, list(regs)),
            zero_mode=True)
    return ModbusServerContext(slaves=slaves, single=False)


async def wait_stdin_eof():
    loop = asyncio.get_running_loop()
    eof = loop.create_future()

    def readable():
        if not sys.stdin.buffer.raw.read(4096):
            loop.remove_reader(sys.stdin.fileno())
            if not eof.done():
                eof.set_result(True)

    loop.add_reader(sys.stdin.fileno(), readable)
    await eof


async def main(argv):
    logging.disable(logging.CRITICAL)
    if len(argv) >= 3 and argv[1] == "--tcp":
        server = await StartAsyncTcpServer(context=context(), address=("127.0.0.1", int(argv[2])),
                                           defer_start=True, allow_reuse_address=True)
        task = asyncio.create_task(server.serve_forever())
        await server.serving
        port = server.server.sockets[0].getsockname()[1]
        print(f"READY {port}", flush=True)
    elif len(argv) >= 3 and argv[1] == "--rtu":
        baud = int(argv[4]) if len(argv) >= 5 and argv[3] == "--baud" else 115200
        server = await StartAsyncSerialServer(context=context(), framer=ModbusRtuFramer, port=argv[2],
                                              baudrate=baud, defer_start=True)
        await server.start()
        if server.transport is None:
            print(f"pymodbus-server: cannot open {argv[2]}", file=sys.stderr)
            return 1
        task = None
        print("READY", flush=True)
    else:
        print(__doc__, file=sys.stderr)
        return 2
    await wait_stdin_eof()
    await server.shutdown()
    if task:
        task.cancel()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv)))
