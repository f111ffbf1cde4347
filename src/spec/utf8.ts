/**
 * Strict UTF-8 decoding for spec files: either the text, or the line and column of the first
 * byte that is not valid UTF-8 (so `encoding` errors point somewhere useful).
 */

export type Utf8Result = { ok: true; text: string } | { ok: false; offset: number; line: number; col: number };

const strictDecoder = new TextDecoder('utf-8', { fatal: true });
const lenientDecoder = new TextDecoder('utf-8', { fatal: false });

/** Decodes `bytes` as UTF-8 (a leading BOM is dropped); never throws. */
export function decodeUtf8(bytes: Uint8Array): Utf8Result {
  try {
    return { ok: true, text: strictDecoder.decode(bytes) };
  } catch {
    const offset = firstInvalidUtf8(bytes);
    let lineStart = 0;
    let line = 1;
    for (let i = 0; i < offset; i++) {
      if (bytes[i] === 0x0a) {
        line++;
        lineStart = i + 1;
      }
    }
    const prefix = lenientDecoder.decode(bytes.subarray(lineStart, offset));
    const bom = line === 1 && prefix.startsWith('\ufeff') ? 1 : 0;
    return { ok: false, offset, line, col: prefix.length - bom + 1 };
  }
}

/** Offset of the first byte that starts an invalid UTF-8 sequence, or bytes.length when all is valid. */
export function firstInvalidUtf8(bytes: Uint8Array): number {
  let i = 0;
  const n = bytes.length;
  while (i < n) {
    const b = bytes[i] as number;
    if (b < 0x80) {
      i++;
      continue;
    }
    let need: number;
    let min: number;
    let cp: number;
    if (b >= 0xc2 && b <= 0xdf) {
      need = 1;
      min = 0x80;
      cp = b & 0x1f;
    } else if (b >= 0xe0 && b <= 0xef) {
      need = 2;
      min = 0x800;
      cp = b & 0x0f;
    } else if (b >= 0xf0 && b <= 0xf4) {
      need = 3;
      min = 0x10000;
      cp = b & 0x07;
    } else {
      return i;
    }
    for (let k = 1; k <= need; k++) {
      const c = bytes[i + k];
      if (c === undefined || (c & 0xc0) !== 0x80) return i;
      cp = (cp << 6) | (c & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return i;
    i += need + 1;
  }
  return n;
}
