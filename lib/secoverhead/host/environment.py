"""Facts about the machine and the software a run used, for the run metadata."""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
import platform
import re
import shutil
import ssl
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

from secoverhead.core.environ import server_env

_TOOLS = {
    "sysbench": (["sysbench", "--version"], r"sysbench ([\d.]+)"),
    "mariadbd": (["mariadbd", "--version"], r"Ver ([\w.\-+]+)"),
    "nginx": (["nginx", "-v"], r"nginx/([\d.]+)"),
    "ab": (["ab", "-V"], r"Version ([\d.]+)"),
    "wrk": (["wrk", "-v"], r"wrk ([\w.\-]+)"),
    "openssl": (["openssl", "version"], r"OpenSSL ([\w.\-]+)"),
}


def loopback(host: str) -> bool:
    """Whether a server's address names this machine itself (localhost, a loopback address): its CPUs are the
    load's. A name counts as another host, as far as this machine can tell."""
    host = host.strip("[]")
    try:
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def utc_now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def tool_version(name: str) -> str | None:
    """Version of a command-line tool, or None when it is not installed."""
    argv, pattern = _TOOLS[name]
    exe = shutil.which(argv[0]) or shutil.which(argv[0], path="/usr/sbin:/sbin")
    if exe is None:
        return None
    try:
        res = subprocess.run([exe, *argv[1:]], capture_output=True, text=True, timeout=10, env=server_env())
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(pattern, res.stdout + res.stderr)
    return m.group(1) if m else (res.stdout + res.stderr).strip()[:80]


def _package(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def mysql_client_implementation() -> dict[str, Any]:
    """Which mysql-connector implementation loads: the C extension, or the much slower pure-Python fallback."""
    try:
        import mysql.connector  # deferred: optional here; a missing connector is recorded, not an error
    except ImportError:
        return {"mysql_connector": None}
    return {
        "mysql_connector": mysql.connector.__version__,
        "mysql_connector_implementation": "C extension" if mysql.connector.HAVE_CEXT else "pure Python",
    }


def git_commit(path: Path | None = None) -> dict[str, Any]:
    path = path or Path(__file__).resolve().parents[3]
    try:
        commit = subprocess.run(
            ["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5, env=server_env()
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(path), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=5,
            env=server_env(),
        ).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return {"git_commit": None}
    return {"git_commit": commit or None, "git_dirty": bool(dirty)}


def machine() -> dict[str, Any]:
    cpuinfo = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    model = re.search(r"model name\s*:\s*(.+)", cpuinfo)
    mem = (
        re.search(r"MemTotal:\s+(\d+) kB", Path("/proc/meminfo").read_text())
        if Path("/proc/meminfo").exists()
        else None
    )
    osr = Path("/etc/os-release").read_text() if Path("/etc/os-release").exists() else ""
    pretty = re.search(r'PRETTY_NAME="([^"]+)"', osr)
    return {
        "hostname": platform.node(),
        "cpu_model": model.group(1).strip() if model else platform.processor(),
        "cpu_cores": os.cpu_count(),
        "cpu_cores_usable": len(os.sched_getaffinity(0)),
        "memory_gib": round(int(mem.group(1)) / 2**20, 1) if mem else None,
        "kernel": platform.release(),
        "os": pretty.group(1) if pretty else platform.platform(),
        "load_average_1m": os.getloadavg()[0],
    }


def collect() -> dict[str, Any]:
    """Everything worth recording about where and with what a run happened."""
    return {
        "collected_at": utc_now(),
        "machine": machine(),
        "python": sys.version.split()[0],
        "client_tls_library": ssl.OPENSSL_VERSION,
        "packages": {p: _package(p) for p in ("secoverhead", "pymongo", "pandas", "numpy", "scipy", "papermill")},
        **mysql_client_implementation(),
        "tools": {name: tool_version(name) for name in _TOOLS},
        **git_commit(),
    }
