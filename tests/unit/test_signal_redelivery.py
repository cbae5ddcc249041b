"""An ending signal whose exception Python swallows (raised inside a weakref callback, where no exception can
propagate) is sent again, and ends the work in the main thread as any other signal does."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap

from secoverhead.core import signals

SCRIPT = textwrap.dedent(
    """
    import gc, os, signal, sys, time, weakref
    from secoverhead.core import signals

    class Thing:
        pass

    old = signals.install()
    try:
        t = Thing()
        # the signal arrives while a weakref callback runs: its exception cannot leave the callback
        ref = weakref.ref(t, lambda _r: (os.kill(os.getpid(), signal.SIGTERM), time.sleep(0.2)))
        del t
        gc.collect()
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:  # the work goes on; the signal must still end it
            time.sleep(0.01)
        print("not interrupted")
        sys.exit(0)
    except KeyboardInterrupt as exc:
        print("interrupted by", signals.as_terminated(exc).name)
        sys.exit(signals.as_terminated(exc).exit_code)
    finally:
        signals.restore(old)
    """
)


def test_a_signal_swallowed_by_a_weakref_callback_is_sent_again():
    res = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=30)
    assert res.returncode == 128 + signal.SIGTERM, (res.stdout, res.stderr)
    assert "interrupted by SIGTERM" in res.stdout
    assert "Exception ignored" not in res.stderr  # the swallowed one is handled, not printed


def test_other_unraisable_exceptions_still_reach_the_previous_hook(monkeypatch):
    seen = []
    monkeypatch.setattr(sys, "unraisablehook", seen.append)
    old = signals.install()
    try:

        class Info:
            exc_value = ValueError("boom")

        sys.unraisablehook(Info)
    finally:
        signals.restore(old)
    assert seen == [Info] and sys.unraisablehook == seen.append  # passed on, and the hook put back
