"""The Jupyter kernel reports run in: ipykernel, made to end with whoever started it.

A kernel outlives a killed papermill or pytest and goes on running the notebook, with its servers. So this
launcher asks the kernel (Linux PR_SET_PDEATHSIG) for SIGTERM when its parent dies, and turns SIGTERM into an
interrupt: the running cell stops as with Ctrl-C, its `with` blocks stop their servers and undo what they
changed on a user's server, and the kernel exits shortly after whatever it was doing.

    python -m secoverhead.app.kernel -f CONNECTION_FILE        (what kernel.json runs)
    python -m secoverhead.app.kernel --install-spec PATH       (point a kernel.json at this launcher)
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import sys
import threading
from pathlib import Path

GRACE_S = 20  # time the interrupted cell gets to stop its servers before the kernel exits anyway


def _on_term(signum: int, frame: object) -> None:
    threading.Timer(GRACE_S, lambda: os._exit(128 + signum)).start()
    raise KeyboardInterrupt


PARENT_ENV = "SECOVERHEAD_KERNEL_PARENT"


def _expected_parent() -> int:
    """The PID that started this kernel (the pipeline says it; a kernel JupyterLab starts has its server as
    parent). An orphan is re-parented to init (1) or a subreaper, so a parent that is not the one expected means
    it died; a pipeline that is itself PID 1 (a container's entrypoint) is expected, not an orphan's parent."""
    said = os.environ.get(PARENT_ENV, "")
    return int(said) if said.isdigit() else (os.getppid() if os.getppid() != 1 else -1)


def main(argv: list[str]) -> None:
    if argv[:1] == ["--install-spec"]:
        spec = Path(argv[1])
        data = json.loads(spec.read_text())
        data["argv"] = [sys.executable, "-m", "secoverhead.app.kernel", "-f", "{connection_file}"]
        spec.write_text(json.dumps(data, indent=1))
        return
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    if os.getppid() != _expected_parent():  # the parent died before the line above: nobody will read this kernel
        sys.exit(1)
    signal.signal(signal.SIGTERM, _on_term)
    signal.signal(signal.SIGHUP, _on_term)  # a closed terminal reaches the kernel too: stop as for SIGTERM
    from secoverhead.core.environ import settle_platform

    settle_platform()  # before anything the kernel loads can ask the platform module with our environment
    from ipykernel import kernelapp  # deferred: the death signal and handlers are set before the kernel loads

    kernelapp.launch_new_instance(argv=argv)


if __name__ == "__main__":
    main(sys.argv[1:])
