"""The delegate's compiled-program cache as seen from Python: where it lives by default, and checking entries.

libteflon.so writes and reads the cache itself (delegate/cache.c; docs/architecture.md, "Program cache"); this
module reads the same entry format for tools and tests:

    teflon.cache.default_dir()          # $XDG_CACHE_HOME/teflon/programs or ~/.cache/teflon/programs
    teflon.cache.verify(path)           # [] when every entry under path is whole, else one line per problem

Kept free of numpy and the compiler: the CLI imports it before loading the delegate.
"""

from __future__ import annotations

import os
import re
import struct
from pathlib import Path

MAGIC = b"TFLC"
FORMAT = 2
HEADER = struct.Struct("<4sI32sQ32s")  # magic, format, key, payload length, payload checksum: 80 bytes
ENTRY_NAME = re.compile(r"^[sp]-([0-9a-f]{64})\.tfc$")


def default_dir() -> Path:
    """The per-user program cache ($XDG_CACHE_HOME, else ~/.cache, + teflon/programs)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "teflon" / "programs"


def entry_problem(path: Path) -> str | None:
    """None when `path` is a whole entry for the key its name carries, else what is wrong (as the delegate says)."""
    match = ENTRY_NAME.match(path.name)
    if match is None:
        return "not an entry name"
    data = path.read_bytes()
    if len(data) < HEADER.size:
        return "shorter than the header"
    magic, fmt, key, length, digest = HEADER.unpack_from(data)
    payload = data[HEADER.size :]
    problems = [
        (magic != MAGIC, "bad magic"),
        (fmt != FORMAT, "unknown format version"),
        (key.hex() != match.group(1), "key mismatch"),
        (length > len(payload), "truncated"),
        (length < len(payload), "longer than its payload"),
        (payload_sum(payload) != digest, "checksum mismatch"),
    ]
    return next((why for bad, why in problems if bad), None)


def payload_sum(payload: bytes) -> bytes:
    """The delegate's payload checksum (delegate/cache.c payload_sum): Fletcher's sums s1 = sum(w), s2 = sum of
    the running s1, over little-endian 64-bit words (tail zero-padded), mod 2^64; s1, s2 and 16 zero bytes."""
    import numpy as np

    words = np.frombuffer(payload + bytes(-len(payload) % 8), dtype="<u8")
    weights = np.arange(len(words), 0, -1, dtype=np.uint64)  # word i is in n - i of the running sums
    with np.errstate(over="ignore"):
        s1 = int(words.sum(dtype=np.uint64))
        s2 = int((words * weights).sum(dtype=np.uint64))
    return struct.pack("<QQ", s1, s2) + bytes(16)


def entries(path: Path) -> list[Path]:
    """The entry files in a cache directory (temporary files of writers in progress are not entries)."""
    return sorted(p for p in Path(path).iterdir() if ENTRY_NAME.match(p.name))


def verify(path: str | os.PathLike[str]) -> list[str]:
    """One line per damaged entry in the cache directory `path`; [] when all are whole."""
    return [f"{p}: {why}" for p in entries(Path(path)) if (why := entry_problem(p)) is not None]
