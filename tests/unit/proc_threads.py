"""Reads this process's threads from /proc: names, affinity, CPU time."""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Dict, List


@dataclass
class ThreadInfo:
    tid: int
    name: str
    cpus_allowed: List[int]
    cpu_ticks: int  # utime + stime, in clock ticks


def _parse_cpu_list(text: str) -> List[int]:
    cpus: List[int] = []
    for part in text.strip().split(","):
        if not part:
            continue
        if "-" in part:
            lo, hi = part.split("-")
            cpus.extend(range(int(lo), int(hi) + 1))
        else:
            cpus.append(int(part))
    return cpus


def threads() -> Dict[int, ThreadInfo]:
    out: Dict[int, ThreadInfo] = {}
    base = f"/proc/{os.getpid()}/task"
    for tid in os.listdir(base):
        try:
            with open(f"{base}/{tid}/comm") as f:
                name = f.read().strip()
            with open(f"{base}/{tid}/status") as f:
                status = f.read()
            with open(f"{base}/{tid}/stat") as f:
                stat = f.read()
        except OSError:
            continue  # thread exited meanwhile
        allowed = next(line.split(":", 1)[1] for line in status.splitlines()
                       if line.startswith("Cpus_allowed_list"))
        fields = stat[stat.rindex(")") + 2:].split()
        ticks = int(fields[11]) + int(fields[12])  # utime, stime
        out[int(tid)] = ThreadInfo(int(tid), name, _parse_cpu_list(allowed), ticks)
    return out


def graphi_threads() -> Dict[str, ThreadInfo]:
    return {t.name: t for t in threads().values() if t.name.startswith("graphi-e")}
