"""This process's memory as Linux reports it, for the benchmarks that run in one process.

(``bench_dask.py`` keeps its own copy: its functions run inside Dask workers through ``client.run``,
which pickles them by value only when they live in the script itself.)
"""

from __future__ import annotations

import resource


def status_kib(field_name: str) -> int | None:
    """A ``/proc/self/status`` field (``VmRSS``, ``VmHWM``) in KiB; None off Linux."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith(field_name + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def peak_rss_mib() -> float:
    """This process's peak RSS (``VmHWM``; ``ru_maxrss`` where /proc is missing), in MiB."""
    kib = status_kib("VmHWM")
    if kib is None:
        kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    return kib / 1024
