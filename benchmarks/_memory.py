"""Peak resident memory of the current process."""

import resource


def peak_rss_mib():
    """Peak resident memory of this process in MiB (``VmHWM``).

    ``ru_maxrss`` survives fork+exec on Linux, so a benchmark child started by a large parent would report the
    parent's peak; ``VmHWM`` belongs to the process's own address space.
    """
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
