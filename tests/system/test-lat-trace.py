#!/usr/bin/python3
"""test-lat-trace.py LAT_TRACE - lat-trace.py's analysis on a trace written
here in ftrace's text format (no tracefs needed): a poll thread, its
Modbus server and cyclictest at a 1 ms period, with one late period of
each kind the analysis names.  Checks the late periods found and what
each is put down to:
  - the poll thread's timer expiring 2.5 ms late on an idle vCPU: the host;
  - the server woken behind a normal task on its CPU for 1.8 ms, no timer
    late there: the task kept it (no preemption point);
  - the same wait with a tick on that CPU 1.5 ms late: the vCPU stalled;
  - cyclictest's timer 1.3 ms late while a task ran: a busy vCPU;
  - a reply timeout's timer (armed by the poll thread at an expiry off the
    period's grid) is not taken for a period;
  - a trace whose buffer overflowed is refused, not analysed.
"""
import subprocess
import sys
import tempfile

LAT_TRACE = sys.argv[1]
MS, US = 1_000_000, 1_000
T0 = 1000 * 1_000_000_000  # the trace's first period's deadline, ns


def ts(t):
    return f"{t // 1_000_000_000}.{(t % 1_000_000_000) // 1000:06d}"


class Trace:
    def __init__(self):
        self.lines = []
        self.timer = 0

    def ev(self, t, comm, pid, cpu, name, text):
        self.lines.append((t, f"{comm:>16}-{pid:<7} [{cpu:03d}] d..2. {ts(t)}: {name}: {text}"))

    def arm(self, t, comm, pid, cpu, expires, function="hrtimer_wakeup"):
        self.timer += 1
        h = f"{self.timer:016x}"
        self.ev(t, comm, pid, cpu, "hrtimer_start",
                f"hrtimer={h} function={function} expires={expires} softexpires={expires} mode=ABS was_armed=0")
        return h

    def expire(self, t, cpu, h, running=("<idle>", 0)):
        self.ev(t, running[0], running[1], cpu, "hrtimer_expire_entry", f"hrtimer={h} function=x now={t}")

    def waking(self, t, by, cpu, comm, pid, prio, target):
        self.ev(t, by[0], by[1], cpu, "sched_waking", f"comm={comm} pid={pid} prio={prio} target_cpu={target:03d}")

    def switch(self, t, cpu, prev, nxt, state="S"):
        self.ev(t, prev[0], prev[1], cpu, "sched_switch",
                f"prev_comm={prev[0]} prev_pid={prev[1]} prev_prio={prev[2]} prev_state={state} ==> "
                f"next_comm={nxt[0]} next_pid={nxt[1]} next_prio={nxt[2]}")

    def text(self, overflow=False):
        n = len(self.lines)
        head = f"# tracer: nop\n#\n# entries-in-buffer/entries-written: {n}/{n + 5 if overflow else n}   #P:2\n#\n"
        return head + "\n".join(line for _, line in sorted(self.lines, key=lambda x: x[0])) + "\n"


IDLE = ("swapper/0", 0, 120)
IDLE1 = ("swapper/1", 0, 120)
POLL = ("rx-m", 100, 19)
SRV = ("mb-fault-server", 200, 29)
CYC = ("cyclictest", 300, 18)
BUSY = ("busy-task", 400, 120)

tr = Trace()
PERIODS = 40
poll_timer = tr.arm(T0 - 500 * US, "rx-m", 100, 0, T0)
cyc_timer = tr.arm(T0 - 500 * US, "cyclictest", 300, 0, T0 + 300 * US)
k = 0
while k < PERIODS:
    e = T0 + k * MS
    skip = 0
    timer_late = 2500 * US if k == 12 else 10 * US
    srv_wait = 1800 * US if k in (20, 30) else 10 * US
    tr.expire(e + timer_late, 0, poll_timer)
    t = e + timer_late + 2 * US
    tr.waking(t, ("<idle>", 0), 0, *POLL[:3], 0)
    tr.switch(t + 3 * US, 0, IDLE, POLL, "R")
    t += 5 * US
    tr.waking(t, ("rx-m", 100), 0, *SRV[:3], 1)          # the request reaches the server
    tr.arm(t + 1 * US, "rx-m", 100, 0, t + 100 * MS + 777)  # the reply's timeout: off the grid
    tr.switch(t + 2 * US, 0, POLL, IDLE)
    if srv_wait > 10 * US:
        tr.switch(t - 50 * US, 1, IDLE1, BUSY, "R")       # a normal task holds CPU 1
        if k == 30:                                        # ... while the vCPU itself stalls
            tick = tr.arm(t - 40 * US, "busy-task", 400, 1, t + 200 * US, "tick_nohz_handler")
            tr.expire(t + 1700 * US, 1, tick, ("busy-task", 400))
        tr.switch(t + srv_wait, 1, BUSY, SRV, "R")
    else:
        tr.switch(t + srv_wait, 1, IDLE1, SRV, "R")
    t += srv_wait + 5 * US
    tr.waking(t, ("mb-fault-server", 200), 1, *POLL[:3], 0)
    tr.switch(t + 1 * US, 1, SRV, IDLE1)
    tr.switch(t + 3 * US, 0, IDLE, POLL, "R")
    # the poll thread's next deadline: the first one ahead (it skips, as railmon does)
    done = t + 6 * US
    k_next = k + 1
    while T0 + k_next * MS < done:
        k_next += 1
    poll_timer = tr.arm(done, "rx-m", 100, 0, T0 + k_next * MS)
    tr.switch(done + 2 * US, 0, POLL, IDLE)
    k = k_next

# cyclictest on CPU 1, 300 us into each period; one 1.3 ms late while
# busy-task runs (the timer's event names the task it interrupted); the
# deadline it then missed is skipped, as cyclictest does
k = 0
while k < PERIODS + 5:
    e = T0 + k * MS + 300 * US
    late = 1300 * US if k == 25 else 8 * US
    running = ("busy-task", 400) if k == 25 else ("<idle>", 0)
    tr.expire(e + late, 1, cyc_timer, running)
    tr.waking(e + late + 1 * US, running, 1, *CYC[:3], 1)
    tr.switch(e + late + 2 * US, 1, BUSY if k == 25 else IDLE1, CYC, "R")
    k_next = k + 1
    while T0 + k_next * MS + 300 * US < e + late + 4 * US:
        k_next += 1
    cyc_timer = tr.arm(e + late + 4 * US, "cyclictest", 300, 1, T0 + k_next * MS + 300 * US)
    tr.switch(e + late + 5 * US, 1, CYC, BUSY if k == 25 else IDLE1)
    k = k_next


def analyse(text):
    with tempfile.NamedTemporaryFile("w", suffix=".trace") as f:
        f.write(text)
        f.flush()
        return subprocess.run([sys.executable, LAT_TRACE, "analyse", f.name], capture_output=True, text=True)


out = analyse(tr.text())
print(out.stdout, out.stderr)
assert out.returncode == 0, out.returncode
poll = out.stdout.split("railmon's poll thread")[1].split("cyclictest's timer thread")[0]
cyc = out.stdout.split("cyclictest's timer thread")[1]
# the slow wakeups (>= 300 us after the deadline): only the poll thread's
# late timer and cyclictest's; the server's waits delay no wakeup
poll_slow, poll = poll.split("what took the longest in a late period")
cyc_slow, cyc_late = cyc.split("what took the longest in a late period")
assert "what made a wakeup 300 us or more late" in poll_slow, poll_slow
# 40 deadlines, 5 skipped after the three late periods (2 + 1 + 1, and the
# timer's 2.5 ms took 2 more ... as the thread skips): each late period once
assert "late (work past the next deadline): 3;" in poll_slow, poll_slow


def row(section, words):
    hits = [line for line in section.splitlines() if words in line]
    assert len(hits) == 1, (words, section)
    return hits[0].split()


r = row(poll, "timer interrupt late on an idle vCPU (the host)")
assert r[-3] == "1" and int(r[-1]) in range(2490, 2511), r
r = row(poll, "server woken, waiting for its CPU behind busy-task")
assert r[-4] == "point)", r  # a normal task kept it: no preemption point
assert r[-3] == "1" and int(r[-1]) in range(1780, 1811), r
r = row(poll, "server woken, waiting for its CPU: the vCPU stalled (a timer there fired >= 1.5 ms late: the host)")
assert r[-3] == "1", r
# nothing else is named: the reply timeouts' timers are not periods
assert len([line for line in poll.splitlines() if line.startswith("  ") and line.split()[-3].isdigit()]) == 3, poll
assert "late (ran >= 1000 us after its expiry): 1;" in cyc_slow, cyc_slow
r = row(cyc_late, "timer interrupt late on a busy vCPU (the host, or interrupts off)")
assert r[-3] == "1" and int(r[-1]) in range(1290, 1311), r
r = row(poll_slow, "timer interrupt late on an idle vCPU (the host)")
assert r[-2] == "1" and int(r[-1]) in range(2500, 2511), r
named = [line for line in poll_slow.splitlines() if line.startswith("  ") and len(line.split()) > 2 and
         line.split()[-2].isdigit()]
assert len(named) == 1, poll_slow
r = row(cyc_slow, "timer interrupt late on a busy vCPU (the host, or interrupts off)")
assert r[-2] == "1" and int(r[-1]) in range(1300, 1311), r

bad = analyse(tr.text(overflow=True))
assert bad.returncode != 0 and "overflowed" in bad.stderr, (bad.returncode, bad.stderr)
print("test-lat-trace: ok")
