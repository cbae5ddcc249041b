"""A storage device's read and flush latency under a server's data files (tools/iodelay, preloaded into the server).

Why: a RAM-backed disk answers a read in microseconds, so an emulated instance's few-thread cells were bound by
nothing but the IOPS cap, never by the wait for each read that the original's local SSD imposed. The library
makes every pread of a file on the data device return no sooner than the latency after it was issued, in the
calling thread, so reads in different threads wait at once and the IOPS cap still bounds how many complete. The
latency lives in a control file the library maps, so it can be lifted while data is loaded and set per instance
while the server runs.
"""

from __future__ import annotations

import contextlib
import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from secoverhead.core.paths import ROOT, built_tool

SOURCE = ROOT / "tools" / "iodelay" / "iodelay.c"
HOW = (
    "iodelay (preloaded into the server): each pread of a data file returns no sooner than the latency after it "
    "was issued, reads in different threads waiting at once; each fsync of a file on the device no sooner than "
    "the flush latency"
)


def library() -> Path:
    """The library `make setup` builds, named by its source's hash (a changed source is another library)."""
    return built_tool(SOURCE, "libiodelay.so")


def missing() -> str | None:
    """Why no latency can be added here, or None when it can."""
    return None if library().is_file() else "iodelay is not built (make setup; it needs a C compiler)"


@dataclass
class ReadLatency:
    """The latency of reads from the device a data directory lives on, and of its flushes (fsync, fdatasync), for
    one server's processes."""

    device: str  # "major:minor"
    control: Path
    log: Path
    latency_us: float = 0.0
    flush_us: float = 0.0

    @classmethod
    def create(cls, data_dir: Path, run_dir: Path, latency_us: float, flush_us: float = 0.0) -> ReadLatency:
        st = os.stat(data_dir)
        found = cls(f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}", run_dir / "iodelay.ctl", run_dir / "iodelay.log")
        found.control.write_bytes(bytes(16))  # both latencies, mapped whole by the library: written before it starts
        found.set(latency_us, flush_us)
        return found

    def env(self) -> dict[str, str]:
        """What the server's processes need in their environment (nothing secret)."""
        return {
            "LD_PRELOAD": str(library()),
            "IODELAY_DEV": self.device,
            "IODELAY_CTL": str(self.control),
            "IODELAY_LOG": str(self.log),
        }

    def set(self, latency_us: float, flush_us: float | None = None) -> None:
        """The read latency (and the flush latency, when given) from the next call on (written in place: the
        library maps the file)."""
        self.latency_us = float(latency_us)
        self.flush_us = self.flush_us if flush_us is None else float(flush_us)
        data = struct.pack("<qq", round(self.latency_us * 1000), round(self.flush_us * 1000))
        if not self.control.is_file():
            self.control.write_bytes(bytes(16))
        with self.control.open("r+b") as f:
            f.write(data)

    @contextlib.contextmanager
    def lifted(self) -> Iterator[None]:
        """No latency for a while (a data load, a write-back), then the one set before."""
        kept = self.latency_us, self.flush_us
        self.set(0, 0)
        try:
            yield
        finally:
            self.set(*kept)

    def totals(self) -> dict[str, float]:
        """Reads delayed and their mean time from issue to return (ms), as the processes wrote them at exit."""
        count = {"reads": [0, 0], "flushes": [0, 0]}
        with contextlib.suppress(OSError):
            for line in self.log.read_text().splitlines():
                parts = line.split()
                if len(parts) == 4 and parts[0] in count:
                    count[parts[0]][0] += int(parts[1])
                    count[parts[0]][1] += int(parts[3])
        (reads, waited), (flushes, flush_waited) = count["reads"], count["flushes"]
        return {
            "reads": reads,
            "mean_ms": waited / reads / 1e6 if reads else float("nan"),
            "flushes": flushes,
            "flush_mean_ms": flush_waited / flushes / 1e6 if flushes else float("nan"),
        }

    def describe(self) -> dict[str, Any]:
        return {"read_latency_us": self.latency_us, "flush_latency_us": self.flush_us, "read_latency_method": HOW}
