"""How much more memory this process may allocate, and a clear refusal when a fit
would need more.

A batch fit whose arrays do not fit would otherwise fail deep inside a kernel with a
bare ``MemoryError`` (or be killed by the kernel's out-of-memory handler, or, under
an address-space limit, fail on whichever allocation crosses it).  The estimators
compute the size of the arrays a pass allocates before allocating them and call
:func:`check_allocation`.

The room left is the smallest of: the address-space limit (``RLIMIT_AS``) less the
address space in use (``VmSize``), the memory the system reports available
(``MemAvailable``), and the cgroup's limit less its usage.  Each is read where the
platform has it; none known means no check.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["available_memory", "check_allocation", "format_bytes"]


def _proc_kb(path, key):
    try:
        for line in Path(path).read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _address_space_room():
    try:
        import resource
    except ImportError:  # not on this platform
        return None
    soft = resource.getrlimit(resource.RLIMIT_AS)[0]
    if soft == resource.RLIM_INFINITY:
        return None
    used = _proc_kb("/proc/self/status", "VmSize")
    return None if used is None else max(0, soft - used)


def _cgroup_room():
    try:
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
        if limit == "max":
            return None
        usage = int(Path("/sys/fs/cgroup/memory.current").read_text().strip())
        return max(0, int(limit) - usage)
    except (OSError, ValueError):
        return None


def available_memory():
    """``(bytes, what limits it)`` that this process may still allocate, or
    ``(None, None)`` when the platform tells nothing."""
    rooms = [(_address_space_room(), "the process's address-space limit (RLIMIT_AS)"),
             (_proc_kb("/proc/meminfo", "MemAvailable"), "the memory available on the system"),
             (_cgroup_room(), "the memory limit of the process's cgroup")]
    rooms = [(room, what) for room, what in rooms if room is not None]
    if not rooms:
        return None, None
    return min(rooms, key=lambda r: r[0])


def format_bytes(n):
    """``n`` bytes in the largest unit that keeps the number at least 1 (1024 based)."""
    n = float(n)
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if n < 1024.0 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024.0
    return f"{n:.1f} TiB"  # pragma: no cover


def check_allocation(needed, what, advice):
    """Raise ``MemoryError`` naming ``what`` (the arrays that need ``needed`` bytes)
    and ``advice`` (what to do instead) when this process cannot allocate ``needed``
    more bytes (see :func:`available_memory`)."""
    room, limit = available_memory()
    if room is None or needed <= room:
        return
    raise MemoryError(f"{what} need about {format_bytes(needed)}, but this process can "
                      f"allocate about {format_bytes(room)} more ({limit}). {advice}")
