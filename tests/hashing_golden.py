#!/usr/bin/python3
"""Reproduces clickd's feature keys from docs/hashing.md with Python's xxhash.

The same golden values are pinned in core/features/hasher_test.cc, so a
client following the document in another language gets the server's keys.
"""
import struct
import sys

import xxhash


def h(data: bytes, seed: int) -> int:
    return xxhash.xxh3_64_intdigest(data, seed=seed)


def le64(*keys: int) -> bytes:
    return b"".join(struct.pack("<Q", k) for k in keys)


def keys(seed: int) -> dict:
    user = h(b"user", seed)
    ad = h(b"ad", seed)
    named = h(b"country=FR", user)
    campaign = h(b"campaign=7", ad)
    ident = h(le64(12345), user)
    return {
        "ns(user)": user,
        "ns(ad)": ad,
        "user/country=FR": named,
        "user/#12345": ident,
        "ad/campaign=7": campaign,
        "bias": h(b"clickd.bias", seed),
        "cross2": h(le64(named, campaign), seed),
        "cross3": h(le64(named, campaign, ident), seed),
        "fold18(user/country=FR)": named & ((1 << 18) - 1),
    }


GOLDEN = {
    0: {
        "ns(user)": 0x99E389D25C10AF32,
        "ns(ad)": 0xDE5B1B56A0B78045,
        "user/country=FR": 0x4E7766629EAD153D,
        "user/#12345": 0x60D50635A90A9B43,
        "ad/campaign=7": 0xD5A62F69DD533E23,
        "bias": 0x0D3C7B1005D35E2E,
        "cross2": 0xEC2EA4DE06D3DA4E,
        "cross3": 0xFB85785B87AA7D67,
        "fold18(user/country=FR)": 0x4E7766629EAD153D & 0x3FFFF,
    },
    42: {
        "ns(user)": 0xD53B42323A2E7AF2,
        "user/country=FR": 0x29066DE8C7C5C6E4,
        "user/#12345": 0xCF55ACA09CF341EC,
        "bias": 0x95FB0167ED71DC85,
        "cross2": 0x5F09E826CBCED44D,
    },
}


def main() -> int:
    failures = 0
    checks = 0
    for seed, expected in GOLDEN.items():
        got = keys(seed)
        for name, value in expected.items():
            checks += 1
            if got[name] != value:
                failures += 1
                print(f"seed {seed} {name}: got {got[name]:016x}, want {value:016x}")
    print(f"{checks - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
