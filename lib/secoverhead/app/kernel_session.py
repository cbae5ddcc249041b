"""How a study's notebook kernel runs under the pipeline: on Unix sockets in a private folder (IPC transport,
so nothing listens on TCP and the kernel has nothing to warn about), stopped when the run ends, its output in
run.log without the text stand-ins of displayed objects."""

from __future__ import annotations

import contextlib
import logging
import os
import re
import signal
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

_REPR = re.compile(r"^<[\w.]+(?: object| at 0x[0-9a-f]+|[^>]*\bsize \d)[^>]*>$|^\[figure: ")


def no_object_reprs(record: logging.LogRecord) -> bool:
    """run.log keeps what cells print, not the text stand-ins of what they display (`<... object>`)."""
    return not _REPR.match(str(record.getMessage()).strip())


def _not_zmq_teardown(record: logging.LogRecord) -> bool:
    """nbclient closes the channels of a kernel client only when it made the kernel manager itself; ours are
    closed when the client is collected, which jupyter_client says in a warning naming the object."""
    return not str(record.msg).startswith("Could not destroy zmq context")


logging.getLogger("traitlets").addFilter(_not_zmq_teardown)


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
        except BaseException:
            # A run ending early (a signal, an error) interrupts the running cell at once, with SIGINT straight to the
            # kernel's process: its `with` blocks unwind (servers stop, a user's settings are restored) and no run
            # starts after the run was ended. Through the kernel manager, the interrupt (like the shutdown below)
            # waited behind the notebook client's poll for the cell's reply, so the cell measured on to its end:
            # 50 s of runs after a SIGTERM once.
            _interrupt(km)
            raise
        finally:  # papermill stops only a kernel manager it made itself; this one is ours to stop
            with contextlib.suppress(Exception):
                if km.has_kernel:
                    km.shutdown_kernel(now=False)
            with contextlib.suppress(Exception):
                km.cleanup_resources()


def _interrupt(km: Any) -> None:
    pid = getattr(getattr(getattr(km, "provisioner", None), "process", None), "pid", None)
    if pid:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGINT)
