/**
 * A small seeded pseudo-random generator, pure: xoshiro128** 1.1 (David Blackman and Sebastiano
 * Vigna, "Scrambled linear pseudorandom number generators", 2018; reference C code at
 * https://prng.di.unimi.it/xoshiro128starstar.c). 128 bits of state, period 2^128 − 1, passes
 * BigCrush; every step is a 32-bit operation, which JavaScript does exactly with Math.imul and
 * `>>> 0`. Used where berth must give the same numbers for the same input (the bootstrap of
 * `berth compare`), so never Math.random.
 */

/** The generator's state: four 32-bit words, not all zero. */
export type Xoshiro128State = readonly [number, number, number, number];

export interface Prng {
  /** The next 32-bit output, as an unsigned integer. */
  next(): number;
  /**
   * Fills `out` with integers in [0, n), 1 <= n <= 2^21, each floor(next() · n / 2^32) (exact in
   * doubles; its bias is below n / 2^32). One call per batch: the bootstrap draws millions.
   */
  fillBelow(out: Uint32Array, n: number): void;
}

export function xoshiro128ss(seed: Xoshiro128State): Prng {
  // The state as int32 (xor, shifts and Math.imul work on int32; the output is made unsigned).
  let [s0, s1, s2, s3] = seed.map((w) => w | 0) as [number, number, number, number];
  if ((s0 | s1 | s2 | s3) === 0) throw new RangeError('xoshiro128**: the state must not be all zero');
  const next = (): number => {
    const x = Math.imul(s1, 5);
    const result = Math.imul((x << 7) | (x >>> 25), 9) >>> 0;
    const t = s1 << 9;
    s2 ^= s0;
    s3 ^= s1;
    s1 ^= s2;
    s0 ^= s3;
    s2 ^= t;
    s3 = (s3 << 11) | (s3 >>> 21);
    return result;
  };
  return {
    next,
    fillBelow(out: Uint32Array, n: number): void {
      if (!Number.isInteger(n) || n < 1 || n > 2 ** 21) throw new RangeError(`fillBelow needs an integer 1 <= n <= 2^21 (got ${n})`);
      const scale = n / 2 ** 32;
      // next(), inlined over local copies of the state (this loop is the bootstrap's cost)
      let a = s0;
      let b = s1;
      let c = s2;
      let d = s3;
      for (let i = 0; i < out.length; i++) {
        const x = Math.imul(b, 5);
        const result = Math.imul((x << 7) | (x >>> 25), 9) >>> 0;
        const t = b << 9;
        c ^= a;
        d ^= b;
        b ^= c;
        a ^= d;
        c ^= t;
        d = (d << 11) | (d >>> 21);
        out[i] = Math.floor(result * scale);
      }
      s0 = a;
      s1 = b;
      s2 = c;
      s3 = d;
    },
  };
}
