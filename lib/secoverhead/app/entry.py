"""The `secoverhead` console script. A Ctrl-C (or SIGTERM, SIGHUP) while the CLI is still loading ends it at once,
quietly, with the shell's code for that signal: nothing has started yet, and Python's traceback of an
interrupted import is not an answer. Set when this module is imported, the script's first step, through the C
modules (`signal` itself imports enum and functools, where a Ctrl-C landed); the CLI then installs its own
handlers as its first step. Only the interpreter's own start (about 10 ms) is left to Python."""

import _signal
import posix


def _early(signum: int, frame: object) -> None:
    posix._exit(128 + signum)


for _sig in (2, 15, 1):  # SIGINT, SIGTERM, SIGHUP (Linux numbers; _signal has no names)
    _signal.signal(_sig, _early)


def main() -> int:
    import sys

    from secoverhead.app.cli import main as cli_main  # loaded under the handlers above

    return cli_main(sys.argv[1:])
