"""Memory estimated before a large allocation, refused in one line.

Every command bounds its pairs by a pair budget (``--max-pairs``), counted
before any pair is built; this module bounds that budget, and the arrays
sized by the corpus (signatures, band keys), by the memory the process may
use: the least of the machine's RAM, a cgroup limit and ``RLIMIT_AS``, or
``CALIB_MAX_MEMORY`` (bytes, or with a K/M/G/T suffix) when set. The costs
per pair are the measured ones (``bench/scale/memory_bounds.py``, README
"Reliability"), rounded up.
"""

from __future__ import annotations

import os
import resource

ENV = "CALIB_MAX_MEMORY"
BYTES_PER_PAIR = {"apply": 130, "sweep": 200, "draw": 48}  # per document pair a command holds (measured, rounded up)
BAND_BYTES = 32  # per document and band while banding: keys, sort order, sorted keys, transposed keys (8 bytes each)
_UNITS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


class MemoryBudgetError(ValueError):
    """A step that would need more memory than the process may use (one readable line)."""


def parse_size(text: str) -> int:
    """``8G``, ``512M``, ``1073741824`` -> bytes."""
    t = str(text).strip().upper().removesuffix("B").removesuffix("I")
    unit = t[-1:] if t[-1:] in _UNITS and t[-1:] else ""
    try:
        value = float(t[:len(t) - len(unit)])
    except ValueError:
        value = float("nan")
    if not 0 < value < 2**63 / _UNITS[unit]:
        raise MemoryBudgetError(f"{ENV}={text!r}: expected a size such as 8G, 512M or a number of bytes")
    return int(value * _UNITS[unit])


def _cgroup_limit() -> int | None:
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            with open(path) as fh:
                text = fh.read().strip()
        except OSError:
            continue
        if text.isdigit() and int(text) < 2**60:
            return int(text)
    return None


def memory_limit() -> int:
    """Bytes this process may use: ``CALIB_MAX_MEMORY``, else the least of RAM, cgroup and RLIMIT_AS."""
    if os.environ.get(ENV, "").strip():
        return parse_size(os.environ[ENV])
    limits = [os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")]
    soft = resource.getrlimit(resource.RLIMIT_AS)[0]
    if soft != resource.RLIM_INFINITY:
        limits.append(soft)
    if (cg := _cgroup_limit()) is not None:
        limits.append(cg)
    return min(limits)


def gib(n: float) -> str:
    return f"{n / 2**30:,.1f} GiB"


def check_memory(need: int, what: str, fix: str) -> None:
    """Refuse ``what`` (needing ``need`` bytes) when it exceeds :func:`memory_limit`;
    ``fix`` says which option lowers the need."""
    limit = memory_limit()
    if need > limit:
        raise MemoryBudgetError(f"{what} needs ~{gib(need)}, more than the {gib(limit)} this process may use: {fix} "
                                f"(or set {ENV} if the machine has more)")


def check_pair_budget(max_pairs: int | None, command: str, option: str = "--max-pairs",
                      most_pairs: int | None = None) -> None:
    """A pair budget whose pairs would not fit in memory is refused before any work.
    ``most_pairs``: the most pairs the input can have (n(n-1)/2), when known."""
    if max_pairs is None:
        return
    pairs = max_pairs if most_pairs is None else min(max_pairs, most_pairs)
    per = BYTES_PER_PAIR[command]
    limit = memory_limit()
    check_memory(pairs * per, f"{option} {max_pairs:,} (~{per} bytes a pair)",
                 f"lower {option} to at most {limit // per:,}")


def affordable_pairs(command: str) -> int:
    """The most pairs ``command`` can hold in :func:`memory_limit`."""
    return memory_limit() // BYTES_PER_PAIR[command]


def check_banding(n: int, num_perm: int, b: int, what: str) -> None:
    """Signatures (4 bytes a hash) and the band arrays of ``n`` documents, before they are built."""
    check_memory(n * (4 * num_perm + BAND_BYTES * b), f"{what}: {n:,} documents x num_perm {num_perm} x b {b}",
                 "a configuration with fewer hashes and bands, or a smaller corpus")
