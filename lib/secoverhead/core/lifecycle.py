"""The context-manager shape of everything the project starts: `with thing:` starts it, and stops it on any
exit, including a start that failed half-way (stop() must be idempotent and cope with a partial start)."""

from __future__ import annotations

from typing import Self


class Started:
    """Subclasses implement start() (returning self) and stop()."""

    def start(self) -> Self:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
