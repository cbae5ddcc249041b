"""How a study's notebook kernel runs under the pipeline: on Unix sockets in a private folder (IPC transport,
so nothing listens on TCP and the kernel has nothing to warn about), stopped when the run ends, its output in
run.log without the text stand-ins of displayed objects."""

from __future__ import annotations

import contextlib
import logging
import os
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

_REPR = re.compile(r"^<[\w.]+(?: object| at 0x[0-9a-f]+|[^>]*\bsize \d)[^>]*>$|^\[figure: ")


def no_object_reprs(record: logging.LogRecord) -> bool:
    """run.log keeps what cells print, not the text stand-ins of what they display (`<... object>`)."""
    return not _REPR.match(str(record.getMessage()).strip())


@contextlib.contextmanager
def kernel_manager(kernel: str) -> Iterator[Any]:
    """The kernel on Unix sockets in a private folder (IPC transport): nothing listens on a TCP port, and the
    kernel has no reason to warn that its traffic is unencrypted."""
    from jupyter_client.manager import KernelManager  # deferred: loaded when a run starts, not for bad input

    with tempfile.TemporaryDirectory(prefix="secoverhead-kernel-") as d:
        os.chmod(d, 0o700)
        km = KernelManager(kernel_name=kernel, transport="ipc", ip=str(Path(d) / "k"))
        try:
            yield km
        finally:  # papermill stops only a kernel manager it made itself; this one is ours to stop
            with contextlib.suppress(Exception):
                if km.has_kernel:
                    km.shutdown_kernel(now=False)
            with contextlib.suppress(Exception):
                km.cleanup_resources()
