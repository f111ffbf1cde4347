#!/usr/bin/env python3
"""
The reference computation for test/unit/sets/compare.test.ts, written apart from berth's code
(src/sets/prng.ts, src/sets/paired.ts) from the published definitions: xoshiro128** 1.1
(https://prng.di.unimi.it/xoshiro128starstar.c), a bootstrap over clusters that draws
index floor(x * k / 2^32) from each 32-bit output x, Σdiff / Σn per resample, and the
nearest-rank percentiles ceil(B * 0.025) and ceil(B * 0.975); the exact McNemar p-value as
a sum of exact binomial coefficients. Run: python3 test/unit/sets/compare-reference.py
"""
from fractions import Fraction
from math import ceil, comb

M = 0xFFFFFFFF
SEED = (0x9E3779B9, 0x243F6A88, 0xB7E15162, 0x6A09E667)


def rotl(x, k):
    return ((x << k) | (x >> (32 - k))) & M


def xoshiro128ss(seed):
    s = list(seed)
    while True:
        result = (rotl((s[1] * 5) & M, 7) * 9) & M
        t = (s[1] << 9) & M
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = rotl(s[3], 11)
        yield result


def bootstrap(clusters, resamples=2000, level=Fraction(95, 100)):
    k = len(clusters)
    gen = xoshiro128ss(SEED)
    values = []
    for _ in range(resamples):
        sd = sn = 0
        for _ in range(k):
            n, d = clusters[(next(gen) * k) >> 32]
            sd += d
            sn += n
        values.append(sd / sn)
    values.sort()
    tail = (1 - level) / 2
    return values[ceil(tail * resamples) - 1], values[ceil((1 - tail) * resamples) - 1]


def mcnemar(b, c):
    n, k = b + c, min(b, c)
    if n == 0:
        return 1.0
    return float(min(Fraction(1), 2 * Fraction(sum(comb(n, i) for i in range(k + 1)), 2**n)))


if __name__ == "__main__":
    gen = xoshiro128ss(SEED)
    print("first outputs", [next(gen) for _ in range(4)])
    # unclustered: 30 pairs, one per cell, in this order: 8 worse, 2 better, 12 both passed, 8 both failed
    pairs = [(1, -1)] * 8 + [(1, 1)] * 2 + [(1, 0)] * 20
    print("unclustered", bootstrap(pairs))
    # clustered: 10 tasks of 3 samples, Σ(after - before) per task
    tasks = [(3, d) for d in (-3, -2, -1, 0, 0, 0, 1, -1, -2, 0)]
    print("clustered", bootstrap(tasks))
    # clusters of unequal size
    uneven = [(1, 0), (2, -2), (4, 1), (3, -1), (2, 0), (5, -3)]
    print("uneven", bootstrap(uneven))
    for b, c in [(1, 9), (0, 6), (8, 2), (40, 60), (400, 600), (2, 2), (0, 0)]:
        print("mcnemar", b, c, repr(mcnemar(b, c)))
