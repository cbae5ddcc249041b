"""An ending signal whose exception Python swallows (raised inside a weakref callback, where no exception can
propagate) is sent again, and ends the work in the main thread as any other signal does."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import textwrap

import pytest

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


def test_an_exception_raised_while_unwinding_from_a_signal_is_the_signals(monkeypatch, capsys):
    """A signal that lands where a lock is half-taken makes the way out raise something else (the lock's
    release); the CLI ends as interrupted, one line and 128 + the signal, not with that exception's traceback."""
    from secoverhead.app import cli

    def lock_released_twice(argv):
        try:
            raise signals.Terminated(signal.SIGINT)
        finally:
            raise RuntimeError("cannot release un-acquired lock")

    monkeypatch.setattr(cli, "_main", lock_released_twice)
    assert cli.main(["list"]) == 130
    assert capsys.readouterr().err.strip() == "interrupted (by SIGINT)"

    def a_fault(argv):
        raise RuntimeError("a fault of its own")

    monkeypatch.setattr(cli, "_main", a_fault)
    with pytest.raises(RuntimeError, match="of its own"):
        cli.main(["list"])
    assert signals.behind(ValueError()) is None
    looped = ValueError("a")
    looped.__context__ = ValueError("b")
    looped.__context__.__context__ = looped  # a cycle ends the walk
    assert signals.behind(looped) is None


def test_a_signal_taken_while_handlers_are_put_back_is_sent_again_to_the_handler_put_back(monkeypatch):
    """The kernel holds the signals only from the thread restoring; one another thread took runs the Python
    handler half-way through: it is remembered, and sent again once the previous handlers are back."""
    sent, real = [], signal.signal
    old = signals.install()

    def swap(signum, handler):
        if signum == signal.SIGTERM:
            signals._handler(signal.SIGINT, None)  # as if another thread had taken a Ctrl-C just now
        return real(signum, handler)

    monkeypatch.setattr(signals.signal, "signal", swap)
    monkeypatch.setattr(signals.os, "kill", lambda pid, signum: sent.append(signum))
    signals.restore(old)  # does not raise half-way
    assert sent == [signal.SIGINT] and signals._pending == []
    assert real(signal.SIGINT, signal.getsignal(signal.SIGINT)) is not signals._handler  # the previous one is back


def test_a_signal_whose_exception_c_code_replaced_still_ends_the_cli_as_that_signal(monkeypatch, capsys):
    """A Ctrl-C landing in an import that PyCapsule_Import makes became 'ImportError: PyCapsule_Import could not
    import module "_socket"', with no trace of the KeyboardInterrupt (the early-Ctrl-C flake, seen at last)."""
    from secoverhead.app import cli

    def capsule_import(argv):
        with contextlib.suppress(KeyboardInterrupt):  # what PyErr_Format does to it
            signals._handler(signal.SIGINT, None)
        raise ImportError('PyCapsule_Import could not import module "_socket"')

    monkeypatch.setattr(cli, "_main", capsule_import)
    assert cli.main(["list"]) == 130
    assert capsys.readouterr().err.strip() == "interrupted (by SIGINT)"
    old = signals.install()  # a new CLI run: an earlier run's signal is not this one's
    signals.restore(old)
    assert signals.behind(ImportError("a real one")) is None


QUIET_END = textwrap.dedent(
    """
    import asyncio, logging, signal, sys, threading
    from secoverhead.app import cli
    from secoverhead.core import signals

    logging.basicConfig()
    logging.getLogger("asyncio").addFilter(cli._SignalEcho())
    signals.install()
    signals._raised.append(signal.SIGHUP)  # as the handler records it
    # a notebook client's task the signal cut short, collected while the run unwinds: dropped, not 222 lines
    cut = (RuntimeError, RuntimeError("x"), None)
    logging.getLogger("asyncio").error("Task exception was never retrieved", exc_info=cut)
    logging.getLogger("asyncio").error("some other asyncio error")  # anything else is still said
    code = cli._interrupted(signals.Terminated(signal.SIGHUP))
    # and after the outcome line, whatever the shutdown prints goes nowhere
    logging.getLogger("x").error("late log line")
    print("late print", file=sys.stderr)
    threading.Thread(target=lambda: 1 / 0).start()
    sys.exit(code)
    """
)


def test_the_outcome_line_is_the_last_word_whatever_follows_it():
    res = subprocess.run([sys.executable, "-c", QUIET_END], capture_output=True, text=True, timeout=60)
    assert res.returncode == 128 + signal.SIGHUP
    lines = res.stderr.strip().splitlines()
    assert lines == ["ERROR:asyncio:some other asyncio error", "interrupted (by SIGHUP)"], res.stderr
