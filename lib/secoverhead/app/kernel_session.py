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

from secoverhead.app.kernel import PARENT_ENV
from secoverhead.core import owners
from secoverhead.core.errors import KernelDied
from secoverhead.host.rundirs import RUN_DIR_PREFIX

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
def kernel_manager(kernel: str, log: Path | None = None) -> Iterator[Any]:
    """The kernel on Unix sockets in a private folder (IPC transport): nothing listens on a TCP port, and the
    kernel has no reason to warn that its traffic is unencrypted. The kernel process's own output (its
    logging, a traceback of its message loop when a signal ends the run) goes to `log` (run.log), not to the
    terminal: what cells print reaches run.log through papermill either way."""
    # deferred: loaded when a run starts, not for bad input
    from jupyter_client.manager import AsyncKernelManager
    from jupyter_core.utils import run_sync

    class Manager(AsyncKernelManager):
        async def _async_launch_kernel(self, kernel_cmd: list[str], **kw: Any) -> None:
            if out is not None:
                kw.setdefault("stdout", out)
                kw.setdefault("stderr", out)
            await super()._async_launch_kernel(kernel_cmd, **kw)

    # named for its owner like every private folder: a crashed run's (its key inside) is swept at the next start
    with (
        tempfile.TemporaryDirectory(prefix=f"{RUN_DIR_PREFIX}{owners.me()}-kernel-") as d,
        open(log, "a") if log is not None else contextlib.nullcontext() as out,
    ):
        os.chmod(d, 0o700)
        # async: nbclient then polls the kernel's life beside its wait for a reply, and a kernel that died (any
        # signal) ends the run in about a second; the blocking client waited for the reply forever, deaf even to
        # SIGTERM. The connection file (the kernel's HMAC key) in the private folder, removed with it.
        os.environ[PARENT_ENV] = str(os.getpid())  # read by the kernel: see kernel._expected_parent
        km = Manager(
            kernel_name=kernel, transport="ipc", ip=str(Path(d) / "k"), connection_file=str(Path(d) / "kernel.json")
        )
        try:
            yield km
        except BaseException as exc:
            # A run ending early (a signal, an error) interrupts the running cell at once, with SIGINT straight to the
            # kernel's process: its `with` blocks unwind (servers stop, a user's settings are restored) and no run
            # starts after the run was ended. Through the kernel manager, the interrupt (like the shutdown below)
            # waited behind the notebook client's poll for the cell's reply, so the cell measured on to its end:
            # 50 s of runs after a SIGTERM once.
            _interrupt(km)
            died = _death(km, exc)
            if died:
                raise KernelDied(died + (f" (its own output: {log.name})" if log is not None else "")) from None
            raise
        finally:  # papermill stops only a kernel manager it made itself; this one is ours to stop
            with contextlib.suppress(Exception):
                if km.has_kernel:
                    run_sync(km.shutdown_kernel)(now=False)
            with contextlib.suppress(Exception):
                run_sync(km.cleanup_resources)()
            os.environ.pop(PARENT_ENV, None)


def _death(km: Any, exc: BaseException) -> str:
    """How the kernel ended, when nbclient gave up on it as dead; else ""."""
    if type(exc).__name__ != "DeadKernelError":
        return ""
    process = getattr(getattr(km, "provisioner", None), "process", None)
    code = process.poll() if process is not None else None
    if code is None:
        return "the notebook's kernel stopped answering"
    if code < 0:
        with contextlib.suppress(ValueError):
            return f"the notebook's kernel was killed by {signal.Signals(-code).name}"
    return f"the notebook's kernel exited with code {code}"


def _interrupt(km: Any) -> None:
    pid = getattr(getattr(getattr(km, "provisioner", None), "process", None), "pid", None)
    if pid:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGINT)
