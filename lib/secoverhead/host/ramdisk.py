"""A RAM-backed disk for server data: a loop device over a sparse file in /dev/shm, with an ext4 file system,
mounted in a private directory.

Why: this VM's virtual disk is shared with other tenants; its fsync latency is erratic (sysbench write runs of
one cell gave 303, 4 and 83 TPS), so a write-heavy workload's throughput measures the host's disk, not the
database. A RAM-backed block device has the kernel's own latency (an instance's local SSD is closer to it
than to a shared virtual disk), and blkio can still throttle it to an instance's IOPS. It needs root (loop
devices, mount); `RamDisk.make` returns None where it cannot be made, and callers fall back to the local disk
and say so. The mount point and the backing file are named with the owner's PID, so the next start unmounts,
detaches and removes those a crash left (`sweep_stale`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from secoverhead.core import owners
from secoverhead.core.environ import server_env
from secoverhead.core.owners import alive
from secoverhead.host.rundirs import OWNED, RUN_DIR_PREFIX, make_run_dir

SHM = Path("/dev/shm")


def _run(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, env=server_env())


class RamDisk:
    """A mounted RAM-backed ext4 file system of `size_mb` (sparse: RAM is used as data is written)."""

    def __init__(self, mount: Path, image: Path, device: str, size_mb: int) -> None:
        self.path, self.image, self.device, self.size_mb = mount, image, device, size_mb

    @classmethod
    def make(cls, size_mb: int = 2048) -> RamDisk | None:
        """Make, format and mount one; None (nothing left behind) where this machine does not allow it."""
        if os.geteuid() != 0 or not SHM.is_dir() or not all(shutil.which(t) for t in ("losetup", "mkfs.ext4")):
            return None
        mount = make_run_dir("ramdisk")
        fd, name = tempfile.mkstemp(prefix=f"{RUN_DIR_PREFIX}{owners.me()}-ramdisk-", suffix=".img", dir=SHM)
        os.close(fd)
        image, device = Path(name), ""
        try:
            os.truncate(image, size_mb << 20)
            res = _run("losetup", "--find", "--show", str(image))
            device = res.stdout.strip()
            if res.returncode != 0 or not device:
                raise OSError(res.stderr.strip())
            for argv in (("mkfs.ext4", "-q", "-F", "-m", "0", device), ("mount", device, str(mount))):
                res = _run(*argv)
                if res.returncode != 0:
                    raise OSError(res.stderr.strip())
            os.chmod(mount, 0o700)
        except (OSError, subprocess.SubprocessError):
            _release(mount, image, device)
            return None
        return cls(mount, image, device, size_mb)

    def describe(self) -> dict:
        return {"data_disk": "RAM-backed loop device (ext4 over /dev/shm)", "data_disk_size_mb": self.size_mb}

    def close(self) -> None:
        _release(self.path, self.image, self.device)

    def __enter__(self) -> RamDisk:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _release(mount: Path, image: Path, device: str = "") -> None:
    """Unmount, detach every loop device over the image, remove both; quiet about what is already gone."""
    if os.path.ismount(mount) and _run("umount", str(mount)).returncode != 0:
        _run("umount", "-l", str(mount))
    devices = [device] if device else []
    if image.exists() and shutil.which("losetup"):
        out = _run("losetup", "--associated", str(image)).stdout  # "/dev/loop0: []: (/dev/shm/...)"
        devices += [line.split(":", 1)[0] for line in out.splitlines() if line.startswith("/dev/")]
    for dev in dict.fromkeys(devices):
        _run("losetup", "--detach", dev)
    with contextlib.suppress(OSError):
        image.unlink()
    shutil.rmtree(mount, ignore_errors=True)


def sweep_stale(roots: list[Path]) -> list[Path]:
    """Release RAM disks whose owner is gone: mounted private directories under `roots`, images in /dev/shm.
    Runs before the private directories themselves are removed (a mounted one cannot be)."""
    removed = []
    for root in roots:
        for d in root.iterdir() if root.is_dir() else []:
            m = OWNED.match(d.name)
            if m and d.is_dir() and os.path.ismount(d) and not alive(m.group(1)):
                _release(d, Path("/nonexistent"))
                removed.append(d)
    for f in SHM.glob(f"{RUN_DIR_PREFIX}*-ramdisk-*.img") if SHM.is_dir() else []:
        m = OWNED.match(f.name)
        if m and not alive(m.group(1)):
            _release(Path("/nonexistent"), f)
            removed.append(f)
    return removed
