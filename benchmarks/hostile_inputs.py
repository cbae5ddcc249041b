"""Hostile and clumsy inputs against the CLI, each in a fresh process: wall time, peak memory (ru_maxrss of the
child), exit code and the number of lines it printed. Every case should be one line, exit 2, well under a second
and 200 MB. Nothing is started: every case is refused before any server or kernel.

    python benchmarks/hostile_inputs.py
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CLI = [sys.executable, "-m", "secoverhead.app.cli"]
BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{n}: &{n} [{', '.join([f'*{p}'] * 9)}]\n" for p, n in zip("abcdefgh", "bcdefghi", strict=True)
)


def _files(d: Path) -> dict[str, Path]:
    os.mkfifo(d / "fifo")
    (d / "zero").symlink_to("/dev/zero")
    with (d / "sparse-5g").open("wb") as f:
        f.truncate(5 << 30)
    (d / "bomb.yaml").write_text(BOMB + "workloads: *i\n")
    (d / "deep.yaml").write_text("workloads: " + "[" * 100_000 + "]" * 100_000 + "\n")
    run = d / "reports" / "tls" / "copied-in"
    (run / "results").mkdir(parents=True)
    os.mkfifo(run / "run.json")
    (run / "results" / "verdicts.json").symlink_to("/dev/zero")
    return {p.name: p for p in d.iterdir()} | {"copied-in": run}


def cases(f: dict[str, Path]) -> list[tuple[str, list[str]]]:
    ext = ["run", "tls", "-p", "mongo_enabled", "false", "-p", "mysql_host", "127.0.0.1", "-p", "mysql_user", "u"]
    pw = ["-p", "mysql_password_env", "HOSTILE_PW"]
    hostile = ("bomb.yaml", "deep.yaml", "fifo", "zero", "sparse-5g")
    out = [(f"-f {n}", ["run", "tde", "-f", str(f[n])]) for n in hostile]
    out.append(("-p 30,000-deep list", ["run", "tde", "-p", "workloads", "[" * 30_000 + "]" * 30_000]))
    out += [(f"mysql_password_file {n}", [*ext, "-p", "mysql_password_file", str(f[n])]) for n in ("fifo", "zero")]
    out.append(("mysql_password_file sparse-5g", [*ext, "-p", "mysql_password_file", str(f["sparse-5g"])]))
    out += [(f"mysql_ca_file {n}", [*ext, *pw, "-p", "mysql_ca_file", str(f[n])]) for n in ("fifo", "sparse-5g")]
    out.append(("password typed as its variable", [*ext, "-p", "mysql_password_env", "Hunter2Secret"]))
    out.append(("password too short", [*ext, "-p", "mysql_password_env", "SHORT_PW"]))
    out.append(("--resume, run.json a FIFO", ["run", "--resume", str(f["copied-in"])]))
    return out


def main() -> None:
    env = os.environ | {"HOSTILE_PW": "Long-Unusual-Pw-123", "SHORT_PW": "sbtest"}
    with tempfile.TemporaryDirectory() as tmp:
        files = _files(Path(tmp))
        reports = str(Path(tmp) / "reports")
        print(f"{'case':40} {'exit':>4} {'lines':>5} {'wall s':>7} {'peak MB':>8}  first line")
        for name, args in cases(files):
            with tempfile.TemporaryFile("w+") as err:
                t0 = time.monotonic()
                argv = [*CLI, *args, "--reports", reports]
                proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=err)
                _, status, usage = os.wait4(proc.pid, 0)  # this child's own peak memory
                wall = time.monotonic() - t0
                proc.returncode = os.waitstatus_to_exitcode(status)
                err.seek(0)
                lines = err.read().strip().splitlines()
            first = lines[0][:90] if lines else ""
            peak = usage.ru_maxrss / 1024
            print(f"{name:40} {proc.returncode:>4} {len(lines):>5} {wall:>7.2f} {peak:>8.0f}  {first}")


if __name__ == "__main__":
    main()
