"""What the terminal (or a log) shows while papermill executes a study: each experiment's progress.json (see
measurement/progress.py), as a tqdm bar per experiment on a terminal, and in a log one line every 30 s and one
when an experiment ends. Totals come from the experiment and only ever shrink; the ETA is bounded by its
budget; what runs is said in words."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from typing import Any

from tqdm import tqdm

from secoverhead.app.stderr import say
from secoverhead.core.files import read_json
from secoverhead.measurement.progress import shortened

LOG_EVERY_S = 30.0
SETTING_UP = "setting up: servers, data, calibration"
BETWEEN = "between parts: reporting, or setting up the next"


def line(study: str, s: dict[str, Any]) -> str:
    """One status line in words: 'tde: tde-4c16g 40/96 runs, ETA at most 3m10s; running encryption on · ...'."""
    done, total = s.get("done", 0), s.get("planned", 0)
    if s.get("final"):
        return f"{study}: {s.get('experiment')} {s.get('status')} after {done} runs" + (
            f" ({s.get('current')})" if s.get("current") else ""
        )
    eta = s.get("eta_s")
    eta_txt = f", ETA at most {int(eta // 60)}m{int(eta % 60):02d}s" if isinstance(eta, int | float) else ""
    now = f"; running {s.get('current')}" if s.get("current") else ""
    return f"{study}: {s.get('experiment')} {done}/{total} runs{eta_txt}{now}"


def _ended(s: dict[str, Any]) -> tuple[Any, ...]:
    """An experiment's final state as its progress.json says it (which a later attempt's differs from)."""
    return s.get("experiment"), s.get("status"), s.get("done"), s.get("updated")


class Watch(threading.Thread):
    def __init__(self, results: Path, study: str, *, tty: bool | None = None) -> None:
        super().__init__(daemon=True)
        self.results, self.study, self.stop_event = Path(results), study, threading.Event()
        self.tty = sys.stderr.isatty() if tty is None else tty
        self.bars: dict[str, tqdm] = {}
        self.closed: set[str] = set()  # experiments whose bar ended
        self.waiting: tqdm | None = None  # the line shown while no experiment runs
        self.reported: set[str] = set()  # experiments whose final line a log already has
        # what an earlier attempt left (a resumed run): not said again as if it had just ended
        self.earlier = {_ended(s) for s in self.states() if s.get("final")}

    def states(self) -> list[dict[str, Any]]:
        found = [read_json(p) for p in sorted(self.results.glob("*/progress.json"))]
        return [s for s in found if isinstance(s, dict) and s.get("experiment")]

    def run(self) -> None:
        last = 0.0
        while not self.stop_event.wait(0.5 if self.tty else 2.0):
            states = self.states()
            if self.tty:
                self._draw(states)
            else:
                last = self._log(states, last)
        self._finish()

    def _draw(self, states: list[dict[str, Any]]) -> None:
        running = any(not s.get("final") for s in states)
        if running:
            self._end_waiting()  # the waiting line is cleared before a bar takes its place, never drawn over one
        for s in states:
            name = s["experiment"]
            if name in self.closed or _ended(s) in self.earlier:  # a finished bar is left as it ended
                continue
            bar = self.bars.get(name)
            if bar is None:  # a resumed part starts from the runs it has: its rate counts only the new ones
                done = s.get("done", 0)
                bar = tqdm(desc=name, total=s.get("planned", 0), initial=done, unit="run", file=sys.stderr)
                self.bars[name] = bar
            bar.total = s.get("planned", 0)
            bar.n = s.get("done", 0)
            eta = s.get("eta_s")
            if s.get("final"):  # why it ended is said whole, as the experiment's own bar says it
                bar.set_description(f"{name} {s.get('status')}")
                bar.set_postfix_str(str(s.get("current") or ""), refresh=True)
                bar.close()
                self.closed.add(name)
                continue
            bar.set_postfix_str(
                (f"ETA ≤ {int(eta // 60)}m{int(eta % 60):02d}s " if isinstance(eta, int | float) else "")
                + shortened(str(s.get("current") or s.get("status") or "")),
                refresh=True,
            )
        if not running:
            self._between(states)  # once every bar has ended and left its line

    def _between(self, states: list[dict[str, Any]]) -> None:
        """Before the first experiment and between two (servers starting, data loading, the next part set up),
        a line says so rather than nothing; it is cleared, not left, when the next part starts."""
        text = BETWEEN if states else SETTING_UP
        if self.waiting is None:
            self.waiting = tqdm(desc=f"{self.study}: {text}", total=None, bar_format="{desc} {elapsed}",
                                file=sys.stderr, leave=False)  # fmt: skip
        else:
            self.waiting.set_description(f"{self.study}: {text}", refresh=True)

    def _end_waiting(self) -> None:
        if self.waiting is not None:
            self.waiting.close()
            self.waiting = None

    def _log(self, states: list[dict[str, Any]], last: float) -> float:
        for s in states:
            if s.get("final") and s["experiment"] not in self.reported and _ended(s) not in self.earlier:
                self.reported.add(s["experiment"])
                say(line(self.study, s))
        running = [s for s in states if not s.get("final")]
        if running and time.monotonic() - last > LOG_EVERY_S:
            say(line(self.study, max(running, key=lambda x: x.get("updated", 0))))
            return time.monotonic()
        return last

    def _finish(self) -> None:
        states = self.states()
        if self.tty:
            self._draw(states)
            for bar in self.bars.values():
                bar.close()
            self._end_waiting()
        else:
            self._log(states, time.monotonic())

    def stop(self) -> None:
        self.stop_event.set()
        if self.ident is not None:  # a signal during calibration stops the run before this thread started
            self.join(3)
