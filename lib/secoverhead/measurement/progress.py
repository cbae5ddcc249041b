"""How far an experiment is, told truthfully: runs done out of the most it can still make, an ETA that never
promises past the time budget, what runs now in words, and a final state when it ends.

The total starts at every run the experiment may make (the plan's, the profiling round's, and the retakes it
may take) and only ever shrinks toward the real end: cells the looks have decided, rounds the budget cuts and
retakes never needed come off it, so a bar never jumps back. It is written to progress.json (the CLI shows it
while papermill executes; it ends with the experiment's final state) and, when interactive, drawn with tqdm
(a widget in JupyterLab, a bar on a terminal).
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from secoverhead.core.files import atomic_write_json

RECENT = 20  # the ETA's mean run duration is over the last this many runs
UNFINISHED = ("interrupted", "failed")
POSTFIX_WIDTH = 60  # characters of the bar's postfix while a run is under way


def describe(arm: str, factors: Mapping[str, Any]) -> str:
    """'encryption on · workload oltp_read_only, threads 16': a run in words, not a dict."""
    if not factors:
        return arm
    return f"{arm} · " + ", ".join(f"{k} {v}" for k, v in factors.items())


class Progress:
    def __init__(
        self,
        experiment_id: str,
        path: Path,
        *,
        ceiling: int,
        done: int = 0,
        max_seconds: float | None = None,
        show: bool = False,
        clock=time.monotonic,
    ) -> None:
        self.experiment_id, self.path, self.clock = experiment_id, Path(path), clock
        self.ceiling, self.done, self.dropped = int(ceiling), int(done), 0
        self.max_seconds, self.t0 = max_seconds, clock()
        self.durations: list[float] = []
        self.floor = 0  # runs still to come that the clock cannot cut (the experiment keeps it current)
        self.current, self.status = "", "running"
        self.bar = (
            tqdm(total=self.total(), initial=done, desc=experiment_id, unit="run", leave=True, file=sys.stderr)
            if show
            else None
        )
        self._write()

    def total(self) -> int:
        """The most runs this experiment can still have made when it ends (never below those done)."""
        return max(self.done, self.ceiling - self.dropped)

    def start(self, arm: str, factors: Mapping[str, Any]) -> None:
        self.current = describe(arm, factors)
        self._write()

    def finish(self, duration_s: float) -> None:
        self.done += 1
        self.durations.append(float(duration_s))
        self._draw(1)

    def drop(self, n: int = 1) -> None:
        """Runs the experiment will not make after all (a decided cell, a run the budget cut)."""
        self.dropped += max(0, int(n))
        self._draw(0)

    def budget_left_s(self) -> float | None:
        if self.max_seconds is None:
            return None
        return max(0.0, self.max_seconds - (self.clock() - self.t0))

    def eta_s(self) -> float | None:
        """Runs left x their recent mean duration, never past the time budget left, save the runs the clock
        cannot cut (warm-up and the first look's rounds: `floor`), which take as long as they take."""
        if not self.durations:
            return self.budget_left_s()
        recent = self.durations[-RECENT:]
        mean = sum(recent) / len(recent)
        eta = (self.total() - self.done) * mean
        left = self.budget_left_s()
        bounded = eta if left is None else min(eta, left)
        return max(bounded, min(eta, self.floor * mean))

    def close(self, status: str, reason: str = "") -> None:
        """The final state, and why it ended, in words. An experiment that ended as planned (complete, decided,
        at its budget) has done its total; one interrupted or failed keeps the total it was heading for, so its
        bar stops short (red in JupyterLab) rather than showing a full one."""
        if status not in UNFINISHED:
            self.dropped = self.ceiling - self.done
        self.status, self.current = status, reason or status
        if self.bar is not None:
            self.bar.set_description(f"{self.experiment_id} {status}")
        self._draw(0)
        if self.bar is not None:
            self.bar.close()

    def _draw(self, advance: int) -> None:
        if self.bar is not None:
            self.bar.total = self.total()
            if advance:
                self.bar.update(advance)
            final = self.status != "running"  # why it ended is said whole; a cell being run, in a bar's width
            self.bar.set_postfix_str(self.current if final else shortened(self.current), refresh=True)
        self._write()

    def state(self) -> dict[str, Any]:
        return {
            "experiment": self.experiment_id,
            "done": self.done,
            "planned": self.total(),
            "eta_s": self.eta_s() if self.status == "running" else 0.0,
            "current": self.current,
            "status": self.status,
            "final": self.status != "running",
            "updated": time.time(),
        }

    def _write(self) -> None:
        with contextlib.suppress(OSError):
            atomic_write_json(self.path, self.state())


def shortened(text: str, width: int = POSTFIX_WIDTH) -> str:
    """text in at most `width` characters, cut at a word and marked with an ellipsis, never mid-word."""
    if len(text) <= width:
        return text
    cut = text[: width - 1].rsplit(" ", 1)[0].rstrip(" ,;:(")
    return f"{cut}…"
