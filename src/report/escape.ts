/** Escaping for the report page: text and attribute values, and JSON inside a <script> element. */

const HTML: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** `s` as HTML text or a quoted attribute's value. */
export function esc(s: string | number): string {
  return String(s).replace(/[&<>"']/g, (c) => HTML[c] as string);
}

/**
 * `v` as JSON that can sit inside `<script type="application/json">`: `<`, `>` and `&` as
 * \u escapes (so no `</script>` or `<!--` can end or change the element), and U+2028/U+2029
 * escaped too. JSON.parse reads it back unchanged.
 */
export function scriptJson(v: unknown): string {
  return JSON.stringify(v).replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
