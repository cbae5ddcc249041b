"""From one machine's per-operation cost to another's, component by component, through the speed reference every
run records (host/calibration.py).

A measured cost is split into the cryptography the operation needs (a full handshake: one signature with the
certificate's key and an X25519 key made and derived; an encrypted page: one AES-256-CTR page set up and run) and
the rest (protocol, parsing, the server's own code, the kernel). Each part moves with its own reference: a
signature with `openssl speed`'s signature time, a page with the AES page time, PBKDF2 with PBKDF2, and the rest
with the fixed loop. Machines of one kind differ in exactly this way (ENVIRONMENT.md: RSA-2048 signing 268 vs
611 us on two machines a day apart, nginx's full handshake 490 vs 1,380 us with it, plain HTTP only 1.3x), so
one factor for everything would misprice either the handshake or the rest.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from secoverhead.host.calibration import fastest

# The reference that scales what is not cryptography: a fixed pure-Python loop (integer arithmetic, branches,
# memory): a measure of the core's general speed, not of any instruction set extension.
GENERAL = "python_loop_ms"

# What each reference scales, for the report (and the keys a user may type in).
REFERENCES: dict[str, str] = {
    "rsa2048_sign_us": "RSA-2048 signatures: the signature of a full handshake with an RSA certificate",
    "ecdsa_p256_sign_us": "ECDSA P-256 signatures: the signature of a full handshake with an ECDSA certificate",
    "x25519_derive_us": "X25519 key exchanges: the ECDHE of every full TLS handshake and of TLS 1.3 resumption",
    "aes_256_ctr_page_as_server_us": "AES-256-CTR pages (set up per page): pages encrypted or decrypted at rest",
    "aes_256_ctr_ns_per_byte": "AES-256-CTR per byte: redo log encrypted at rest",
    "pbkdf2_sha256_15000_ms": "PBKDF2-SHA-256 x 15,000: a SCRAM-SHA-256 client's key derivation",
    "pbkdf2_sha1_10000_ms": "PBKDF2-SHA-1 x 10,000: a SCRAM-SHA-1 client's key derivation",
    GENERAL: "a fixed loop: everything that is not cryptography (protocol, parsing, server code, kernel)",
}

Primitives = Sequence[tuple[str, float]]  # (calibration key, how many per operation)

# How far the ratio of two calibrations of one machine moves: both are snapshots of a VM whose speed changes by up
# to 1.8x for seconds at a time. Measured on this project's VM on 2026-11-25 with the fixed loop sampled across the
# calibration (host/calibration.py): its fastest chunk 63-74 ms over two hours (+-8 %); RSA-2048 signing, one
# second of `openssl speed`, 724-1,017 us (+-17 %), AES and PBKDF2 alike. A user's machine is described by one
# calibration, so a scaled interval is widened by this much (and is not, when no machine of the user's is given).
REPEATABILITY = {GENERAL: 0.10}
CRYPTO_REPEATABILITY = 0.15


def spread(cal: Mapping[str, Any], direction: int) -> dict[str, Any]:
    """A calibration with every reference moved by its repeatability: direction -1 (faster) or +1 (slower)."""
    out = dict(cal)
    for key in REFERENCES:
        if isinstance(cal.get(key), int | float):
            out[key] = cal[key] * (1 + direction * REPEATABILITY.get(key, CRYPTO_REPEATABILITY))
    return out


def reference_us(cal: Mapping[str, Any], key: str) -> float | None:
    """One reference operation in microseconds (calibration keys end in their unit)."""
    value = cal.get(key)
    if value is None or not float(value) > 0:
        return None
    value = float(value)
    if key.endswith("_ms"):
        return value * 1e3
    if key.endswith("_ns_per_byte"):
        return value / 1e3
    return value


def crypto_us(primitives: Primitives, cal: Mapping[str, Any]) -> float | None:
    """What the primitives cost on a machine (None when its calibration lacks one)."""
    total = 0.0
    for key, count in primitives:
        ref = reference_us(cal, key)
        if ref is None:
            return None
        total += count * ref
    return total


def speed_factor(cal_from: Mapping[str, Any], cal_to: Mapping[str, Any], key: str = GENERAL) -> float:
    """How much longer one reference operation takes on cal_to than on cal_from (1 where either lacks it)."""
    a, b = reference_us(cal_from, key), reference_us(cal_to, key)
    return b / a if a and b else 1.0


def rescale(
    us: float,
    cal_from: Mapping[str, Any],
    cal_to: Mapping[str, Any],
    primitives: Primitives = (),
    to_primitives: Primitives | None = None,
) -> float:
    """A cost of `us` measured on cal_from, on cal_to: its cryptography (primitives) priced on cal_to, the rest
    moved by the general factor. `to_primitives` prices a neighbour configuration (an ECDSA handshake from an RSA
    one: the RSA signature taken out, an ECDSA one put in).

    Monotone in `us`, so an interval's ends map to the scaled interval's ends: below the cryptography's own price
    (a noisy low end, or a server whose crypto is cheaper than OpenSSL's) the cost is taken as all cryptography,
    below zero as all rest."""
    g = speed_factor(cal_from, cal_to)
    c_from = crypto_us(primitives, cal_from) if primitives else 0.0
    c_to = crypto_us(to_primitives if to_primitives is not None else primitives, cal_to)
    if c_from is None or c_to is None:  # a reference missing: the whole cost moves with the general factor
        return us * g
    if c_from <= 0:  # no cryptography measured in it: all rest
        return us * g
    if us <= 0:
        return us * g
    # written as changes to `us`, so that a machine compared with itself returns it exactly (no rounding: c_to +
    # (us - c_from) differed from us in the last bit, and a cost priced on its own machine moved)
    if us >= c_from:
        return us + (c_to - c_from) + (us - c_from) * (g - 1.0)
    return us * (c_to / c_from)


def as_it_ran(cal: Mapping[str, Any], slowdown: float | None) -> dict[str, Any]:
    """The calibration as the vCPU ran during a report's rounds: every reference slowed by the rounds' speed
    against the calibration's own (`slowdown`: the quiet speed checks over the loop's fastest since boot,
    host/calibration.py). A slow state slows all of a vCPU's work alike, so a cost measured in it moves back to the
    machine's own speed by this one factor. No slowdown known: the calibration as it is."""
    own, ran = reference_us(cal, GENERAL), None
    best = fastest(cal)
    if slowdown and best and own:
        ran = slowdown * best * 1e3 / own  # the rounds' loop time over the calibration's
    if ran is None or not ran > 0:
        return dict(cal)
    out = dict(cal)
    for key in REFERENCES:
        if isinstance(cal.get(key), int | float) and not isinstance(cal.get(key), bool):
            out[key] = cal[key] * ran
    return out
