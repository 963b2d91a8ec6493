"""The peers' peak_host_mem_bytes, measured as trainbench measures its own (the twins of
harness/devices.cpp's reset_peak_rss and peak_rss_bytes, same names): Linux's VmHWM, reset
as each configuration starts, so a row's peak is its configuration's, not the largest of
the process's earlier configurations or of importing torch (getrusage's ru_maxrss, which
the peers wrote before, cannot be reset). No torch here: tested without it.
"""

import resource
import sys


def reset_peak_rss():
    """Starts a new peak at what is resident now (writes 5 to /proc/self/clear_refs, Linux
    4.0+), as trainbench does before each configuration. False where the kernel refuses it
    (not Linux, /proc absent or read-only): the peak read next is then the process's so far."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
            f.write("5")  # 5: reset the peak resident set to the current one (proc(5))
    except OSError:  # refused at open, or at close when the buffered write reaches the kernel
        return False
    return True


def peak_rss_bytes():
    """Peak resident set of this process in bytes since the last reset_peak_rss() (VmHWM of
    /proc/self/status), or since the process started where there is no VmHWM (getrusage)."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024  # "VmHWM:	  123456 kB"
    except (OSError, ValueError, IndexError):
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024  # macOS reports bytes, Linux KiB
