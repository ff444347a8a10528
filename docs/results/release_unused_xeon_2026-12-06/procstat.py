"""CPU time from /proc, for the probes here (aba.py, auto_probe.py)."""
import os
from typing import Dict, Iterator, Tuple

TICK_MS = 1000.0 / os.sysconf("SC_CLK_TCK")


def _stats(folder: str) -> Iterator[Tuple[str, str, float]]:
    """(entry, comm, CPU ms = utime + stime) of each numeric entry of folder that has a stat file."""
    for entry in os.listdir(folder):
        if not entry.isdigit():
            continue
        try:
            with open(f"{folder}/{entry}/stat") as f:
                st = f.read()
        except OSError:
            continue
        fields = st[st.rindex(")") + 2:].split()
        yield entry, st[st.index("(") + 1:st.rindex(")")], (int(fields[11]) + int(fields[12])) * TICK_MS


def thread_cpu() -> Dict[str, float]:
    """Thread name (numbers stripped) -> CPU ms summed over this process's threads of that name."""
    out: Dict[str, float] = {}
    for _, comm, ms in _stats("/proc/self/task"):
        name = comm.rstrip("0123456789").rstrip("-_ ") or comm
        out[name] = out.get(name, 0.0) + ms
    return out


def procs_cpu() -> Dict[str, float]:
    """"pid:comm" -> CPU ms of every process on the machine."""
    return {f"{pid}:{comm}": ms for pid, comm, ms in _stats("/proc")}


def system_cpu() -> Dict[str, float]:
    """The machine's CPU ms by kind, from /proc/stat's first line."""
    with open("/proc/stat") as f:
        values = f.readline().split()[1:]
    names = ["user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal"]
    return {n: int(v) * TICK_MS for n, v in zip(names, values)}
