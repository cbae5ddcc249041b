"""Errors a user can act on. Each says what was wrong and, where it helps, what to do."""


class SecoverheadError(Exception):
    """Base class for every error this package raises on purpose."""


class ConfigError(SecoverheadError, ValueError):
    """A parameter, option value or file given by the user is not usable. Raised before any load."""


class ServerStartError(SecoverheadError):
    """A server the library started did not become ready. The message quotes its own error log."""


class UnreachableServerError(SecoverheadError):
    """A server the user named cannot be reached."""


class AuthenticationError(SecoverheadError):
    """A server rejected the credentials the user named."""


class KernelDied(SecoverheadError):
    """The notebook's kernel ended in the middle of a run (a signal, an exit): the run failed, for that reason."""


class Stalled(SecoverheadError):
    """A measured run overran its plan by more than its stated margin (the server, or the path to it, stopped
    answering): the harness stops it and fails the run. A protocol violation, not a judgement of its value."""
