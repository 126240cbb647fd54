#!/usr/bin/python3
"""lat-trace.py - why a realtime thread was late: the kernel's scheduler
and timer events (ftrace, /sys/kernel/tracing) around every period of
railmon's Modbus poll thread and of cyclictest, and the phase that took
the time in each late one (issue 30's "causes found and named").

  lat-trace.py start             events on (trace clock mono), buffer cleared
  lat-trace.py stop OUT          tracing off, the trace saved to OUT
  lat-trace.py analyse OUT [--poll rx-m] [--server mb-fault-server]
                               [--period-us 1000] [--railmon-prio 80]
                               [--cyclictest-prio 81] [--from-s S]

A period of the poll thread runs from its deadline (the expiry of the
timer it slept on) to its next sleep (the next hrtimer_start).  It is late
when that is more than a period: the next deadline passed before the
thread was back (two periods or more: railmon skipped and counted them as
overruns).  Its time is split into phases:
  timer late     the timer's interrupt came after its expiry (the kernel's
                 own hrtimer_expire_entry 'now' minus 'expires'): nothing in
                 the guest runs before it; on an idle vCPU, the host woke it
                 late
  wait for CPU   woken (sched_waking) or preempted, not running: the tasks
                 that ran meanwhile on its CPU are named; only the idle
                 task means the vCPU itself came late (the host)
  running        on the CPU: its own work, and any time the host took the
                 vCPU away (the guest cannot see that, except as a gap with
                 no interrupt)
  server ...     the same phases of the Modbus server thread while the poll
                 thread waited for its reply
  reply path     the rest of the wait for the reply (loopback, softirqs)
A cyclictest period is late when its thread ran 1000 us or more after the
timer's expiry (the bench's "missed"): timer late + wait for CPU.

Page faults: exceptions:page_fault_user of the realtime threads after
their first period (mlockall and the prefaulted stack should leave none).
"""
import argparse
import bisect
import collections
import itertools
import os
import re
import statistics
import sys

TRACING = "/sys/kernel/tracing"
SLOW_NS = 300_000  # a wakeup this late is in the tail the goals are about (p99.9)
EVENTS = ("sched/sched_switch", "sched/sched_waking", "timer/hrtimer_start", "timer/hrtimer_expire_entry",
          "exceptions/page_fault_user")
LINE = re.compile(r"^\s*(.+?)-(\d+)\s+\[(\d+)\]\s+\S+\s+(\d+)\.(\d+):\s+(\w+):\s+(.*)$")
FIELD = re.compile(r"(\w+)=(\S+)")
SWITCH = re.compile(r"prev_comm=(.*?) prev_pid=(\d+) prev_prio=(\d+) prev_state=(\S+) ==> "
                    r"next_comm=(.*?) next_pid=(\d+) next_prio=(\d+)")


def put(rel, text):
    with open(os.path.join(TRACING, rel), "w") as f:
        f.write(text)


def steal_mark():
    """Each CPU's steal time (/proc/stat, USER_HZ ticks) into the trace: the
    time the host ran something else while this guest's vCPU had work."""
    ticks = [line.split()[8] for line in open("/proc/stat") if re.match(r"cpu\d", line)]
    put("trace_marker", "lat-trace steal " + " ".join(ticks))


def start():
    put("tracing_on", "0")
    put("trace_clock", "mono")  # hrtimer expiries are CLOCK_MONOTONIC ns
    put("buffer_size_kb", "262144")  # per CPU: 30 s under stress-ng
    put("current_tracer", "nop")
    put("set_event", "")
    for e in EVENTS:
        put(f"events/{e}/enable", "1")
    # a stressor faults all the time: only the realtime side's faults count
    put("events/exceptions/page_fault_user/filter",
        'comm == "rx-m" || comm == "cyclictest" || comm == "mb-fault-server"')
    put("trace", "")
    put("tracing_on", "1")
    steal_mark()


def stop(out):
    steal_mark()
    put("tracing_on", "0")
    with open(os.path.join(TRACING, "trace")) as src, open(out, "w") as dst:
        for line in src:
            dst.write(line)
    put("set_event", "")
    put("events/exceptions/page_fault_user/filter", "0")
    put("trace", "")
    put("buffer_size_kb", "1408")


def parse(path):
    """Events as (t_ns, cpu, comm, pid, name, text), in time order."""
    ev = []
    with open(path, errors="replace") as f:
        for line in f:
            lost = re.match(r"# entries-in-buffer/entries-written: (\d+)/(\d+)", line)
            if lost and lost.group(1) != lost.group(2):
                sys.exit(f"lat-trace: {path}: the trace buffer overflowed ({lost.group(1)} of {lost.group(2)} "
                         "events kept): trace a shorter run")
            m = LINE.match(line)
            if m:
                t = int(m.group(4)) * 1_000_000_000 + int(m.group(5).ljust(9, "0")[:9])
                ev.append((t, int(m.group(3)), m.group(1).strip(), int(m.group(2)), m.group(6), m.group(7)))
    ev.sort(key=lambda e: e[0])
    return ev


class Thread:
    def __init__(self, tid, comm):
        self.tid, self.comm = tid, comm
        self.arms = []          # (t, expires, hrtimer)
        self.expiry = {}        # expires -> (now, cpu, running pid, comm)
        self.trans = []         # (t, kind, cpu, detail): waking / in / out
        self.faults = []        # t
        self._times = None

    def times(self):
        if self._times is None or len(self._times) != len(self.trans):
            self._times = [t for t, _, _, _ in self.trans]
        return self._times

    def first_in(self, t0, default):
        """The thread's first switch in at or after t0."""
        times = self.times()
        for i in range(bisect.bisect_left(times, t0), len(times)):
            if self.trans[i][1] == "in":
                return self.trans[i][0]
        return default


def analyse(a):
    ev = parse(a.trace)
    if not ev:
        sys.exit(f"lat-trace: no events in {a.trace}")
    t0 = ev[0][0]
    kprio = {99 - a.railmon_prio: "poll", 99 - a.cyclictest_prio: "cyclictest"}
    threads, armed_by, any_timer = {}, {}, {}
    cpu_late = collections.defaultdict(list)   # cpu -> [(t, ns a timer fired late)]
    cpu_runs = collections.defaultdict(list)   # cpu -> [(t, pid, comm)] switches in
    steal = []                                 # the markers' per-CPU steal, ticks

    def who(pid, comm, prio=None):
        """The thread if it is one of ours (poll, server, cyclictest's timer thread)."""
        if pid in threads:
            return threads[pid]
        role = None
        if comm == a.poll:
            role = "poll"
        elif comm == a.server[:15]:
            role = "server"
        elif comm == "cyclictest" and prio is not None and kprio.get(prio) == "cyclictest":
            role = "cyclictest"
        if role:
            threads[pid] = Thread(pid, comm)
            threads[pid].role = role
            return threads[pid]
        return None

    for t, cpu, comm, pid, name, text in ev:
        if name == "tracing_mark_write" and "lat-trace steal" in text:
            steal.append([int(x) for x in text.split("steal")[1].split()])  # the first is at the start
            continue
        if t - t0 < a.from_s * 1e9:
            continue
        if name == "sched_switch":
            m = SWITCH.match(text)
            if not m:
                continue
            pc, pp, ppr, ps, nc, np_, npr = m.groups()
            pp, np_ = int(pp), int(np_)
            th = who(pp, pc, int(ppr))
            if th:
                th.trans.append((t, "out", cpu, ps))
            th = who(np_, nc, int(npr))
            if th:
                th.trans.append((t, "in", cpu, ""))
            cpu_runs[cpu].append((t, np_, nc + (" (rt)" if int(npr) < 100 else "")))
        elif name == "sched_waking":
            f = dict(FIELD.findall(text))
            th = who(int(f.get("pid", -1)), re.sub(r" pid=.*", "", text[5:]), int(f.get("prio", -1)))
            if th:
                th.trans.append((t, "waking", int(f.get("target_cpu", "-1")), comm))
        elif name == "hrtimer_start":
            f = dict(FIELD.findall(text))
            exp = int(f.get("expires", 0))
            any_timer[f.get("hrtimer")] = exp
            if f.get("function") != "hrtimer_wakeup" or pid not in threads:
                continue
            threads[pid].arms.append((t, exp, f["hrtimer"]))
            armed_by[f["hrtimer"]] = (pid, exp)
        elif name == "hrtimer_expire_entry":
            f = dict(FIELD.findall(text))
            exp = any_timer.pop(f.get("hrtimer"), None)
            if exp is not None:
                # every timer's lateness on this CPU: the tick's too, so a
                # vCPU that did not run (the host) shows whatever ran on it
                cpu_late[cpu].append((t, int(f["now"]) - exp))
            if f.get("hrtimer") in armed_by:
                pid_ev = pid
                pid, exp = armed_by.pop(f["hrtimer"])
                # the event's own task is the one the interrupt found on the CPU
                threads[pid].expiry[exp] = (int(f["now"]), cpu, (pid_ev, comm))

        elif name == "page_fault_user" and pid in threads:
            threads[pid].faults.append(t)

    span_s = (ev[-1][0] - ev[0][0]) / 1e9
    print(f"lat-trace: {len(ev)} events over {span_s:.1f} s "
          f"({a.trace}; trace clock mono, ns of CLOCK_MONOTONIC as the timers' expiries)")
    if len(steal) >= 2:
        hz = os.sysconf("SC_CLK_TCK")
        print("steal time (the host ran something else while a vCPU had work), per CPU: " +
              ", ".join(f"cpu{i} {(b - a_) * 1000 // hz} ms" for i, (a_, b) in enumerate(zip(steal[0], steal[-1]))))
    late_all = [late for lst in cpu_late.values() for _, late in lst]
    print(f"timer interrupts: {len(late_all)}, fired >= 300 us late: {sum(1 for x in late_all if x >= 300_000)}, "
          f">= 1 ms late: {sum(1 for x in late_all if x >= 1_000_000)}, latest {max(late_all, default=0) // 1000} us")
    period = a.period_us * 1000
    by_role = collections.defaultdict(list)
    for th in threads.values():
        by_role[th.role].append(th)
    for role in ("poll", "cyclictest"):
        for th in by_role.get(role, []):
            if len(th.arms) > 10:
                report(th, period, by_role.get("server", []), cpu_runs, cpu_late)


def ran_between(cpu_runs, cpu, t1, t2):
    """Names of the tasks that ran on cpu in [t1, t2) (the one running at t1 too)."""
    runs = cpu_runs.get(cpu, [])
    names = collections.Counter()
    lo, hi = 0, len(runs)
    while lo < hi:  # last switch at or before t1
        mid = (lo + hi) // 2
        if runs[mid][0] <= t1:
            lo = mid + 1
        else:
            hi = mid
    i = max(lo - 1, 0)
    while i < len(runs) and runs[i][0] < t2:
        end = runs[i + 1][0] if i + 1 < len(runs) else t2
        s, e = max(runs[i][0], t1), min(end, t2)
        if e > s:
            names["idle" if runs[i][1] == 0 else runs[i][2]] += e - s
        i += 1
    return names


def stalled(cpu_late, cpu, t1, t2):
    """The latest any timer fired on cpu within [t1, t2 + 100 us): a
    timer interrupt that came late there means the vCPU itself did not run
    (the host) or had interrupts off, whatever task the guest had on it."""
    lst = cpu_late.get(cpu, [])
    i = bisect.bisect_left(lst, (t1, -1))
    best = 0
    while i < len(lst) and lst[i][0] < t2 + 100_000:
        best = max(best, lst[i][1])
        i += 1
    return best


def phases(th, t1, t2, cpu_runs, cpu_late, prefix=""):
    """Split th's time in [t1, t2) into running / wait for CPU (with who ran
    and the latest timer there) / blocked."""
    out = collections.Counter()
    behind = collections.Counter()
    stall = [0]
    times = th.times()

    def waited(cpu, a, b, wait):
        if wait:
            behind.update(ran_between(cpu_runs, cpu, a, b))
        stall[0] = max(stall[0], stalled(cpu_late, cpu, a, b))

    def step(state, cpu, kind, c, detail):
        """The thread's state after one transition (and the CPU it is on or
        was woken to)."""
        if kind == "in":
            return "run", c
        if kind == "out":
            return ("wait" if detail.startswith("R") else "blocked"), cpu
        return "wait", c  # waking

    def account(state, cpu, a, b):
        if state:
            out[prefix + state] += b - a
            if state in ("wait", "run") and cpu is not None:
                waited(cpu, a, b, state == "wait")

    state, since, cpu = None, t1, None
    # the state at t1 follows from the transitions just before it
    lo = max(bisect.bisect_left(times, t1) - 4, 0)
    for t, kind, c, detail in itertools.islice(th.trans, lo, None):
        if t >= t2:
            break
        if t >= t1:
            account(state, cpu, since, t)
            since = t
        state, cpu = step(state, cpu, kind, c, detail)
    account(state, cpu, since, t2)
    if stall[0]:
        out[prefix + "stall"] = stall[0]
    return out, behind


def words(phase, behind, idle_timer, stall):
    if phase == "timer late":
        return "timer interrupt late" + (" on an idle vCPU (the host)" if idle_timer else
                                         " on a busy vCPU (the host, or interrupts off)")
    if phase.endswith("wait"):
        who = ("server " if phase.startswith("server") else "") + "woken, waiting for its CPU"
        others = {k: v for k, v in behind.items() if k != "idle"}
        if stall >= 300_000:
            return who + f": the vCPU stalled (a timer there fired >= {stall // 100_000 / 10:.1f} ms late: the host)"
        if not others:
            return who + ", its vCPU idle (the host woke it late)"
        top = [k for k, _ in collections.Counter(others).most_common(2)]
        if all(k.endswith("(rt)") for k in top):
            return who + " behind " + ", ".join(top)
        return who + " behind " + ", ".join(top) + " (a normal task kept it: no preemption point)"
    if phase.endswith("run"):
        who = ("server " if phase.startswith("server") else "") + "running"
        if stall >= 300_000:
            return who + f": the vCPU stalled (a timer there fired >= {stall // 100_000 / 10:.1f} ms late: the host)"
        return who
    return "reply path (blocked, server not running or waiting)"


def report(th, period, servers, cpu_runs, cpu_late):
    # The period's sleeps are the timers whose expiries are a whole number
    # of periods apart (an absolute schedule); others the thread arms (the
    # poll thread's wait for a reply, bounded by its response timeout)
    # are not periods.
    residue = collections.Counter(exp % period for _, exp, _ in th.arms).most_common(1)[0][0]
    arms = [arm for arm in th.arms if arm[1] % period == residue]
    late, causes, spans = 0, collections.defaultdict(list), []
    slow = collections.defaultdict(list)  # wakeups >= SLOW_NS after the deadline, by cause
    first = arms[0][0]
    for i in range(len(arms) - 1):
        exp = arms[i][1]
        end = arms[i + 1][0]
        # the wakeup: from the deadline to the thread's first run after it,
        # its switch in, or its next sleep's hrtimer_start when it never
        # left the CPU (a wakeup while it was still going to sleep has no
        # switch)
        timer = th.expiry.get(exp)
        t_in = th.first_in(exp, end)
        wake = min(t_in, end) - exp
        if timer and wake >= SLOW_NS:
            w_timer = max(timer[0] - exp, 0)
            own, behind = phases(th, timer[0], exp + wake, cpu_runs, cpu_late)
            phase = "timer late" if w_timer >= wake - w_timer else "wait"
            slow[words(phase, behind, timer[2][0] == 0, own["stall"])].append(wake)
        if th.role == "cyclictest":
            span = wake
            is_late = span >= period
        else:
            span = end - exp
            is_late = span > period
        spans.append(span)
        if not is_late:
            continue
        late += 1
        cnt = collections.Counter()
        idle_timer = False
        if timer:
            cnt["timer late"] = max(timer[0] - exp, 0)
            idle_timer = timer[2][0] == 0
        start = timer[0] if timer else exp
        own, behind = phases(th, start, exp + span if th.role == "cyclictest" else end, cpu_runs, cpu_late)
        stall = own["stall"]
        cnt["wait"] += own["wait"]
        cnt["run"] += own["run"]
        blocked = own["blocked"]
        for sv in servers:
            sp, sb = phases(sv, start, end, cpu_runs, cpu_late, "server ")
            stall = max(stall, sp["server stall"])
            cnt["server wait"] += min(sp["server wait"], blocked)
            cnt["server run"] += min(sp["server run"], blocked)
            behind.update(sb)
            blocked = max(blocked - sp["server wait"] - sp["server run"], 0)
        cnt["reply"] += blocked
        phase, longest = max(cnt.items(), key=lambda kv: kv[1])
        causes[words(phase, behind, idle_timer, stall)].append((span, longest))
    faults = [t for t in th.faults if t > first + 1_000_000_000]
    name = "railmon's poll thread" if th.role == "poll" else "cyclictest's timer thread"
    rule = "work past the next deadline" if th.role == "poll" else "ran >= 1000 us after its expiry"
    spans.sort()
    p999 = spans[int(len(spans) * 0.999)] // 1000 if spans else 0
    print(f"\n{name} {th.comm} (tid {th.tid}): {len(spans)} periods, late ({rule}): {late}; "
          f"period span p99.9 {p999} us, max {spans[-1] // 1000 if spans else 0} us; "
          f"page faults after its first second: {len(faults)}")
    if slow:
        print(f"  {f'what made a wakeup {SLOW_NS // 1000} us or more late':<78}{'wakeups':>8}{'max us':>12}")
        for what, v in sorted(slow.items(), key=lambda kv: -len(kv[1])):
            print(f"  {what:<78}{len(v):>8}{max(v) // 1000:>12}")
    if not causes:
        return
    print(f"  {'what took the longest in a late period':<78}{'periods':>8}{'span max us':>12}{'its part max us':>16}")
    for what, v in sorted(causes.items(), key=lambda kv: -len(kv[1])):
        print(f"  {what:<78}{len(v):>8}{max(s for s, _ in v) // 1000:>12}{max(p for _, p in v) // 1000:>16}")


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("start")
    s = sub.add_parser("stop")
    s.add_argument("out")
    an = sub.add_parser("analyse")
    an.add_argument("trace")
    an.add_argument("--poll", default="rx-m")
    an.add_argument("--server", default="mb-fault-server")
    an.add_argument("--period-us", type=int, default=1000)
    an.add_argument("--railmon-prio", type=int, default=80)
    an.add_argument("--cyclictest-prio", type=int, default=81)
    an.add_argument("--from-s", type=float, default=0.0)
    a = p.parse_args()
    if a.cmd == "start":
        start()
    elif a.cmd == "stop":
        stop(a.out)
    else:
        analyse(a)


if __name__ == "__main__":
    main()
