/** Pieces of `value` and of its encodings that only the value can produce: none may be left anywhere berth wrote (the redaction tests). */
export function needles(value: string): string[] {
  const out = [value, value.slice(0, 16), value.slice(-16), Buffer.from(value).toString('hex')];
  for (const pre of ['', 'x', 'xy']) {
    const b = Buffer.from(pre + value);
    // the characters 4 in from either end depend on the value's bytes alone
    for (const enc of [b.toString('base64'), b.toString('base64url')]) out.push(enc.slice(4, -4));
  }
  return out;
}
