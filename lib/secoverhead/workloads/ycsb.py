"""A YCSB-style loader for MongoDB with CoreWorkload's defaults: database `ycsb`, collection `usertable`,
`_id` = "user" + the FNV-1a-64-hashed key number (YCSB's default hashed insert order), and `field0`..
`field9` of 100 random bytes each, stored as BSON binary."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass

import numpy as np
from bson.binary import Binary

from secoverhead.servers import ownership

FNV_OFFSET_64 = 0xCBF29CE484222325
FNV_PRIME_64 = 1099511628211
_MASK = (1 << 64) - 1


def fnv_hash64(value: int) -> int:
    """YCSB's Utils.fnvhash64: FNV over the 8 low-order octets, Java signed 64-bit arithmetic, then abs."""
    h = FNV_OFFSET_64
    for _ in range(8):
        h ^= value & 0xFF
        value >>= 8
        h = (h * FNV_PRIME_64) & _MASK
    signed = h - (1 << 64) if h >= 1 << 63 else h
    return abs(signed)


def ycsb_key(keynum: int, *, ordered: bool = False) -> str:
    """CoreWorkload.buildKeyName with zeropadding 1: "user" + hashed (or ordered) key number."""
    return f"user{keynum if ordered else fnv_hash64(keynum)}"


@dataclass
class LoadResult:
    record_count: int
    inserted: int
    seconds: float
    docs_per_s: float
    skipped: bool

    def as_dict(self) -> dict:
        return asdict(self)


def load_usertable(
    client,
    record_count: int,
    *,
    batch_size: int = 1000,
    field_count: int = 10,
    field_length: int = 100,
    seed: int = 0,
    database: str = "ycsb",
    collection: str = "usertable",
) -> LoadResult:
    """Insert record_count documents in batches; skip when the collection already holds exactly that many. The
    collection is recorded as the project's before it is touched: one that exists and is not (the user's own)
    raises NotOurs and is left as it is."""

    if record_count < 1 or batch_size < 1:
        raise ValueError("record_count and batch_size must be >= 1")
    ownership.mongo_mark_ours(client, [f"{database}.{collection}"])
    coll = client[database][collection]
    have = coll.estimated_document_count()
    if have == record_count:
        return LoadResult(record_count, 0, 0.0, float("nan"), True)
    if have:
        coll.drop()
    rng = np.random.default_rng(seed)
    t0 = time.perf_counter()
    for start in range(0, record_count, batch_size):
        n = min(batch_size, record_count - start)
        payload = rng.integers(0, 256, size=(n, field_count, field_length), dtype=np.uint8)
        docs = [
            {"_id": ycsb_key(start + i), **{f"field{j}": Binary(payload[i, j].tobytes()) for j in range(field_count)}}
            for i in range(n)
        ]
        coll.insert_many(docs, ordered=False)
    seconds = time.perf_counter() - t0
    return LoadResult(record_count, record_count, seconds, record_count / seconds, False)
