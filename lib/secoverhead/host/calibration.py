"""Machine speed: a short calibration recorded with every experiment.

Machines of one kind differ (an RSA-2048 signature took 268 us on one and 611 us on another), so absolute
per-operation costs from two reports are never compared without a reference. The calibration times, with the
system OpenSSL the servers link against (`openssl speed -mr`): an RSA-2048 and an ECDSA P-256 signature, an
X25519 key exchange, AES-128-GCM and AES-256-CTR per byte (16 KiB blocks: an InnoDB page); AES-256-CTR per
page the way InnoDB decrypts one (cipher set up for every page, over 32 MiB of distinct pages, through the same
libcrypto: `openssl speed` reuses one context over one hot buffer, which a server does not); PBKDF2 at SCRAM's
iteration counts (SHA-1 x 10,000, SHA-256 x 15,000, via hashlib on OpenSSL); a read of /dev/urandom as mongod
4.2 makes per SCRAM login; a TLS client's context with the system's CA bundle; Go's RSA-2048 signature
(tools/gosign, where built: seed 003's service was Go); and a fixed pure-Python loop (the Python clients'
speed). About 8 s. Reports express costs both in us and in these units where that means something ("a full
handshake costs N RSA signatures").
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import hashlib
import json
import os
import re
import shutil
import ssl
import statistics
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from secoverhead.core.environ import server_env
from secoverhead.core.errors import SecoverheadError
from secoverhead.core.files import SCHEMA, atomic_write_json
from secoverhead.core.paths import ROOT, built_tool, cache_dir
from secoverhead.host import environment
from secoverhead.host.noise import machine_busy_s

PAGE_BYTES = 16384
MAX_AGE_S = 30 * 60  # a calibration shared by the studies of one `secoverhead run` is at most this old
ENV = "SECOVERHEAD_CALIBRATION"  # the pipeline points kernels at the calibration it took


def _openssl_mr(args: list[str], timeout: float = 60) -> str:
    exe = shutil.which("openssl")
    if exe is None:
        raise SecoverheadError("openssl not found: run `make setup`")
    res = subprocess.run(
        [exe, "speed", "-mr", *args], capture_output=True, text=True, timeout=timeout, env=server_env()
    )
    if res.returncode != 0:
        raise SecoverheadError(f"openssl speed failed: {res.stderr.strip()[-300:]}")
    return res.stdout


def parse_mr(text: str) -> dict[str, float]:
    """Per-operation costs from `openssl speed -mr` output (RSA/ECDSA/ECDH lines, and EVP bytes/s lines)."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        f = line.split(":")
        if line.startswith("+F2:") and len(f) >= 5 and f[2] == "2048":
            out["rsa2048_sign_us"], out["rsa2048_verify_us"] = 1e6 / float(f[3]), 1e6 / float(f[4])
        elif line.startswith("+F4:") and len(f) >= 5 and f[2] == "256":
            out["ecdsa_p256_sign_us"], out["ecdsa_p256_verify_us"] = 1e6 / float(f[3]), 1e6 / float(f[4])
        elif line.startswith("+F5:") and len(f) >= 4 and f[2] == "253":
            out["x25519_derive_us"] = 1e6 / float(f[3])
        elif line.startswith("+F:") and len(f) >= 4:
            name = re.sub(r"[^a-z0-9]+", "_", f[2].lower()).strip("_")
            bytes_per_s = float(f[-1])
            if bytes_per_s > 0:
                out[f"{name}_ns_per_byte"] = 1e9 / bytes_per_s
    return out


def _pbkdf2_ms(digest: str, iterations: int, repeat: int = 5) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.process_time()
        hashlib.pbkdf2_hmac(digest, b"calibration-password", b"0123456789abcdef", iterations)
        best = min(best, time.process_time() - t0)
    return best * 1e3


LOOP_CHUNK = 100_000
LOOP_BURST_S = 0.4  # one sample of the loop; measure() takes one before and after each of its other steps


class _Loop:
    """The fixed loop's time per 1e6 iterations, sampled in bursts spread over the whole calibration.

    This VM's vCPU runs at one of two speeds about 1.8x apart, each for up to several seconds (measured 2026-11-25:
    the best of five 0.1-s repetitions gave 71-158 ms in fifteen processes; the fastest 0.1-s chunk of one 2.5-s
    window still gave 73-112 ms in eight). The fastest chunk over bursts spread across the ~10 s of a calibration is
    the machine's own speed (63-66 ms in five calibrations in a row); the median, recorded beside it, says how much
    of the time it ran slower."""

    def __init__(self) -> None:
        self.times: list[float] = []

    def burst(self, seconds: float = LOOP_BURST_S) -> None:
        # this thread's CPU time: a kernel's other threads (a duet's, a progress bar's) never count in it
        start = time.thread_time()
        while time.thread_time() - start < seconds:
            t0 = time.thread_time()
            total = 0
            for i in range(LOOP_CHUNK):
                total += i * i & 7
            self.times.append(time.thread_time() - t0)

    def ms(self) -> tuple[float, float]:
        """(fastest, median) per 1e6 iterations."""
        per = 1e3 * 1_000_000 / LOOP_CHUNK
        return min(self.times) * per, statistics.median(self.times) * per


SPEED_CHECK_S = 0.05  # one burst before each measured round of a study's experiment (0.05 s reads as 0.1 s does)
# The vCPU's slow state: the fixed loop 1.8x its fastest (above). This VM's two vCPUs share a core: with the other
# one busy (`yes` pinned to it) a 0.1-s burst reads 123-128 ms against 72-75 ms alone (2026-11-29). So a check
# reads the host only while nothing else of this machine runs (QUIET_CORES). Alone, a burst's median is 1.05-1.19x
# the calibration's fastest (23 calibrations on 2026-11-29), up to 1.3x for one short burst; in the slow state the
# host gave two calibrations (06:56, 07:23; nothing else of the VM running) 1.73-1.80x. 1.5x lies between the two.
SLOW_STATE = 1.5
QUIET_CORES = 0.2  # what else may run on the machine during a check that reads the host (a busy vCPU: about 1)


def speed_check(seconds: float = SPEED_CHECK_S) -> dict[str, float]:
    """The fixed loop's median ms per 1e6 iterations over one burst now (set against the loop's fastest since
    boot: how fast the vCPU ran), and the cores the rest of the machine kept busy meanwhile (a busy
    sibling vCPU slows the loop too). Steal time does not show the slow state; a quiet check does."""
    loop = _Loop()
    busy0, wall0, own0 = machine_busy_s(), time.monotonic(), time.thread_time()
    loop.burst(seconds)
    wall = max(time.monotonic() - wall0, 1e-9)
    others = (machine_busy_s() - busy0 - (time.thread_time() - own0)) / wall
    return {"loop_ms": round(loop.ms()[1], 2), "others_cores": round(max(others, 0.0), 3)}


def quiet(checks: Sequence[Any]) -> list[float]:
    """The loop times of the checks taken with the rest of the machine quiet: the ones that read the host."""
    return [float(c["loop_ms"]) for c in checks if _reads_the_host(c)]


def _reads_the_host(check: Any) -> bool:
    if not isinstance(check, Mapping):
        return False
    ms, others = check.get("loop_ms"), check.get("others_cores")
    return isinstance(ms, int | float) and ms > 0 and isinstance(others, int | float) and others < QUIET_CORES


def slowdowns(checks: Sequence[Any], cal: Mapping[str, Any]) -> list[float]:
    """Each quiet speed check over the vCPU's fastest loop (fastest): how much slower than its own fastest the
    host ran the vCPU then (none without a calibration to set them against)."""
    ref = fastest(cal)
    return [ms / ref for ms in quiet(checks)] if ref else []


def fastest(cal: Mapping[str, Any]) -> float | None:
    """The loop's fastest on this machine since it booted, as the calibration recorded it: a calibration taken
    wholly in the slow state (one on 2026-11-29: 99.2 ms against 63-66) would otherwise read that state as the
    vCPU's own speed and a slow report as a normal one."""
    if not isinstance(cal, Mapping):
        return None
    times = [cal.get(k) for k in ("python_loop_ms", "python_loop_boot_fastest_ms")]
    times = [float(t) for t in times if isinstance(t, int | float) and not isinstance(t, bool) and t > 0]
    return min(times) if times else None


def boot_fastest(loop_ms: float) -> float:
    """The fastest loop any calibration took on this machine since it booted, this one's included (kept in the
    cache under the kernel's boot id: a reboot, perhaps onto another host, starts again)."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return loop_ms
    path = cache_dir() / "speed" / f"loop-{boot}.json"
    seen = None
    with contextlib.suppress(OSError, ValueError, TypeError, AttributeError):
        seen = float(json.loads(path.read_text())["fastest_ms"])
    best = min(loop_ms, seen) if seen and seen > 0 else loop_ms
    if best != seen:
        with contextlib.suppress(OSError):
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_json(path, {"fastest_ms": best, "boot_id": boot})
    return best


def slowdown(checks: Sequence[Any], cal: Mapping[str, Any]) -> float | None:
    """The median of an experiment's slowdowns; None without a quiet check or a calibration."""
    ratios = slowdowns(checks, cal)
    return statistics.median(ratios) if ratios else None


def _aes_page_us(pages: int = 2048, repeat: int = 5) -> float | None:
    """AES-256-CTR decryption of one 16 KiB page as a server does it: EVP_CipherInit_ex (key and IV of the
    page) then one EVP_CipherUpdate, over `pages` distinct pages (beyond the CPU caches). The cost of the two
    ctypes calls per page, timed as two empty updates (same argument conversions, no work), is subtracted.
    None without libcrypto."""
    name = ctypes.util.find_library("crypto")
    if not name:
        return None
    lib = ctypes.CDLL(name)
    vp, cp, ip = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int
    lib.EVP_CIPHER_CTX_new.restype = vp
    lib.EVP_CIPHER_CTX_free.argtypes = [vp]
    lib.EVP_aes_256_ctr.restype = vp
    lib.EVP_CipherInit_ex.argtypes = [vp, vp, vp, cp, cp, ip]
    lib.EVP_CipherUpdate.argtypes = [vp, vp, ctypes.POINTER(ip), vp, ip]
    ctx, cipher = lib.EVP_CIPHER_CTX_new(), lib.EVP_aes_256_ctr()
    key, iv = os.urandom(32), os.urandom(16)
    src = ctypes.create_string_buffer(os.urandom(PAGE_BYTES) * pages)
    dst = ctypes.create_string_buffer(PAGE_BYTES * pages)
    s0, d0, outl = ctypes.addressof(src), ctypes.addressof(dst), ip()
    best, call = float("inf"), float("inf")
    try:
        for _ in range(repeat):
            t0 = time.perf_counter()
            for i in range(pages):
                lib.EVP_CipherInit_ex(ctx, cipher, None, key, iv, 0)
                lib.EVP_CipherUpdate(ctx, d0 + i * PAGE_BYTES, ctypes.byref(outl), s0 + i * PAGE_BYTES, PAGE_BYTES)
            best = min(best, time.perf_counter() - t0)
            t0 = time.perf_counter()
            for _ in range(pages):
                lib.EVP_CipherUpdate(ctx, d0, ctypes.byref(outl), s0, 0)
                lib.EVP_CipherUpdate(ctx, d0, ctypes.byref(outl), s0, 0)
            call = min(call, time.perf_counter() - t0)
    finally:
        lib.EVP_CIPHER_CTX_free(ctx)
    return max(best - call, 0.0) / pages * 1e6


def _urandom_read_us(nbytes: int, repeat: int = 300) -> float:
    """One read of /dev/urandom as mongod 4.2 makes per SCRAM login (open, read `nbytes`, close; strace of the auth
    study): the median of `repeat`, in us, uncontended (one thread, this kernel's generator)."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fd = os.open("/dev/urandom", os.O_RDONLY)
        try:
            os.read(fd, nbytes)
        finally:
            os.close(fd)
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e6


def _ca_bundle(repeat: int = 5) -> dict[str, float]:
    """A TLS client's context with the system's CA bundle loaded (what a client given no CA file, or a bundle,
    parses at construction): the median of `repeat`, in ms, and how many CA certificates it held."""
    times, n = [], 0
    for _ in range(repeat):
        t0 = time.perf_counter()
        ctx = ssl.create_default_context()
        times.append(time.perf_counter() - t0)
        n = ctx.cert_store_stats().get("x509_ca", 0)
    return {"ca_bundle_load_ms": statistics.median(times) * 1e3, "ca_bundle_certificates": n}


GOSIGN = ROOT / "tools" / "gosign" / "main.go"


def _gosign() -> dict[str, Any]:
    """Go's RSA-2048 signing time, from the gosign build `make setup` makes (seed 003's service was written in Go);
    nothing where it is not built."""
    binary = built_tool(GOSIGN, "gosign")
    if not binary.is_file():
        return {}
    try:
        done = subprocess.run([str(binary)], capture_output=True, text=True, timeout=30, env=server_env())
        return {k: v for k, v in json.loads(done.stdout).items() if k in ("go_rsa2048_sign_us", "go_version")}
    except (OSError, ValueError, subprocess.SubprocessError):
        return {}


def measure() -> dict[str, Any]:
    """Take a calibration now (about 10 s of one core)."""
    t0 = time.monotonic()
    here = environment.machine()
    out: dict[str, Any] = {
        "schema": SCHEMA,
        "taken_at": time.time(),
        # the machine it measured: a calibration names its host and CPU, so it is never mistaken for another's
        "machine": {k: here[k] for k in ("hostname", "cpu_model", "cpu_cores", "cpu_cores_usable")},
        "openssl": subprocess.run(
            ["openssl", "version"], capture_output=True, text=True, env=server_env()
        ).stdout.strip(),
    }
    loop = _Loop()
    loop.burst()
    out |= parse_mr(_openssl_mr(["-seconds", "1", "rsa2048", "ecdsap256", "ecdhx25519"]))
    loop.burst()
    for cipher in ("aes-128-gcm", "aes-256-ctr"):
        out |= parse_mr(_openssl_mr(["-seconds", "1", "-bytes", str(PAGE_BYTES), "-evp", cipher]))
        loop.burst()
    if "aes_256_ctr_ns_per_byte" in out:
        out["aes_256_ctr_us_per_page"] = out["aes_256_ctr_ns_per_byte"] * PAGE_BYTES / 1e3
    page = _aes_page_us()
    if page is not None:
        out["aes_256_ctr_page_as_server_us"] = page
    out["pbkdf2_sha1_10000_ms"] = _pbkdf2_ms("sha1", 10_000)
    loop.burst()
    out["urandom_8191_us"] = _urandom_read_us(8191)
    out |= _ca_bundle()
    out |= _gosign()
    loop.burst()
    out["pbkdf2_sha256_15000_ms"] = _pbkdf2_ms("sha256", 15_000)
    loop.burst()
    out["python_loop_ms"], out["python_loop_median_ms"] = loop.ms()
    out["python_loop_boot_fastest_ms"] = round(boot_fastest(out["python_loop_ms"]), 3)
    out["duration_s"] = round(time.monotonic() - t0, 2)
    return out


def fresh(path: str | os.PathLike) -> dict[str, Any] | None:
    """The calibration saved at path when it is under MAX_AGE_S old, else None."""
    try:
        cal = json.loads(Path(path).read_text())
        if isinstance(cal, dict) and time.time() - float(cal.get("taken_at", 0)) < MAX_AGE_S:
            return cal
    except (OSError, ValueError, TypeError):
        pass
    return None


def shared(path: str | os.PathLike | None = None) -> dict[str, Any]:
    """The calibration at path (default: $SECOVERHEAD_CALIBRATION) when fresh, else a new one, saved there so
    that the next run within MAX_AGE_S reuses it (the pipeline points kernels at its own; a scheduled job or a
    test session may point every run at one file)."""
    path = path or os.environ.get(ENV)
    cal = fresh(path) if path else None
    if cal is None:
        cal = measure()
        if path:
            with contextlib.suppress(OSError):
                save(cal, Path(path))
    return cal


def save(cal: dict[str, Any], path: Path) -> Path:
    atomic_write_json(path, cal)
    return path


UNITS = {
    "rsa2048_sign_us": "RSA-2048 signatures",
    "ecdsa_p256_sign_us": "ECDSA P-256 signatures",
    "x25519_derive_us": "X25519 key exchanges",
    "aes_256_ctr_us_per_page": "AES-256-CTR 16 KiB pages",
    "aes_256_ctr_page_as_server_us": "AES-256-CTR page decryptions (set up per page)",
    "pbkdf2_sha1_10000_ms": "PBKDF2-SHA-1 x 10,000 derivations",
    "pbkdf2_sha256_15000_ms": "PBKDF2-SHA-256 x 15,000 derivations",
    "aes_128_gcm_ns_per_byte": "AES-128-GCM bytes",
    "urandom_8191_us": "reads of 8,191 bytes from /dev/urandom",
    "ca_bundle_load_ms": "TLS client contexts with the system's CA bundle",
    "go_rsa2048_sign_us": "Go RSA-2048 signatures",
}


def unit_of(key: str) -> str:
    """A speed reference's unit, from its key: rsa2048_sign_us, aes_128_gcm_ns_per_byte, pbkdf2_sha1_10000_ms."""
    found = re.search(r"_(us|ms|ns)(?:_|$)", key)
    return found.group(1) if found else ""


# The functions that do each primitive, by the names Debian's binaries keep (stacks.py): a profile's samples
# with one of them in their stack are what that primitive cost in the profiled arm.
PROFILE_FUNCTIONS = {
    # EVP_DigestSign*: the handshake's signature through OpenSSL 3's providers, whose own functions are unnamed
    "rsa2048_sign_us": ("RSA signing", ("RSA_private_encrypt", "BN_mod_exp_mont_consttime_x2", "EVP_DigestSign*")),
    "ecdsa_p256_sign_us": ("ECDSA signing", ("EVP_DigestSign*", "ECDSA_sign_ex", "ECDSA_do_sign_ex")),
    "x25519_derive_us": ("key exchange (ECDHE)", ("EVP_PKEY_derive", "EVP_PKEY_generate", "EVP_PKEY_keygen")),
    "pbkdf2_sha1_10000_ms": ("PBKDF2", ("PKCS5_PBKDF2_HMAC", "crypto/pbkdf2.*", "golang.org/x/crypto/pbkdf2.*")),
    "pbkdf2_sha256_15000_ms": ("PBKDF2", ("PKCS5_PBKDF2_HMAC", "crypto/pbkdf2.*", "golang.org/x/crypto/pbkdf2.*")),
    "aes_256_ctr_page_as_server_us": ("AES page encryption", ("EVP_CipherUpdate", "EVP_EncryptUpdate")),
}


# A full TLS handshake on the server, in the primitives `openssl speed` prices: one signature with the certificate's
# key, and an X25519 key made and derived (ECDHE, two operations); TLS 1.3 resumption keeps the ECDHE only.
SIGNATURE = {"rsa": "rsa2048_sign_us", "ecdsa": "ecdsa_p256_sign_us"}
KEY_NAME = {"rsa": "RSA-2048", "ecdsa": "ECDSA P-256"}
ECDHE = ("x25519_derive_us", 2)
RESUMED_TLS13 = (ECDHE,)


def full_handshake(key: str) -> tuple[tuple[str, float], ...]:
    """The primitives of one full handshake with a certificate of `key` (rsa | ecdsa)."""
    return ((SIGNATURE[key], 1), ECDHE)


@dataclass(frozen=True)
class CryptoBound:
    """The cryptography one operation of an arm needs, beyond its baseline's: e.g. a full TLS 1.2 handshake
    with an RSA certificate signs once with RSA-2048 and makes and derives an X25519 key (two operations)."""

    arm: str
    baseline: str
    metric: str  # the run metric of the extra cost, e.g. server_cpu_us_per_op
    primitives: tuple[tuple[str, float], ...]  # (calibration key, how many per operation)
    what: str = "per operation"

    def cost_us(self, cal: dict[str, Any]) -> float | None:
        total = 0.0
        for key, count in self.primitives:
            value = cal.get(key)
            if value is None:
                return None
            total += count * (value * 1e3 if key.endswith("_ms") else value)
        return total

    def describe(self) -> str:
        return " + ".join(f"{n:g} x {UNITS.get(k, k).rstrip('s')}" for k, n in self.primitives) or "none"
