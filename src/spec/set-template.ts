/**
 * AttemptSet templates, pure: `${{ matrix.<axis> }}` in any string of the template (not in keys)
 * is replaced by the child's value of that axis. Only `matrix.<axis>` is understood; anything else
 * between `${{` and `}}`, or an axis the matrix does not have, is an error at that string.
 */
import { didYouMean } from './did-you-mean';
import { isRecord, type Segment } from './field-path';

export const EXPR = /\$\{\{([^}]*)\}\}/g;
export const MATRIX_REF = /^\s*matrix\.([A-Za-z0-9_-]+)\s*$/;

export interface TemplateIssue {
  /** Path inside the template. */
  segs: Segment[];
  message: string;
}

/** Every `${{ }}` of the template that is not `matrix.<one of axes>`. */
export function templateIssues(template: unknown, axes: readonly string[]): TemplateIssue[] {
  const out: TemplateIssue[] = [];
  const known = new Set(axes);
  walkStrings(template, [], (s, segs) => {
    for (const m of s.matchAll(EXPR)) {
      const inner = m[1] as string;
      const ref = MATRIX_REF.exec(inner);
      if (!ref) {
        out.push({ segs, message: `\${{${inner}}} is not understood: only \${{ matrix.<axis> }} is (axes: ${axes.join(', ')})` });
        continue;
      }
      const axis = ref[1] as string;
      if (!known.has(axis)) {
        const dym = didYouMean(axis, [...axes]);
        out.push({ segs, message: `\${{ matrix.${axis} }} names no axis of the matrix${dym ? ` (did you mean "${dym}"?)` : ''}; axes: ${axes.join(', ')}` });
      }
    }
  });
  return out;
}

/** The template with every `${{ matrix.<axis> }}` replaced (the template must have no issues). */
export function renderTemplate(template: unknown, coords: Readonly<Record<string, string>>): unknown {
  if (typeof template === 'string') {
    return template.includes('${{') ? template.replace(EXPR, (whole, inner: string) => coords[MATRIX_REF.exec(inner)?.[1] ?? ''] ?? whole) : template;
  }
  if (Array.isArray(template)) return template.map((x) => renderTemplate(x, coords));
  if (isRecord(template)) {
    // A plain loop (it runs for every child of a set); keys as in the template, __proto__ as data.
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(template)) {
      const v = renderTemplate(template[k], coords);
      if (k === '__proto__') Object.defineProperty(out, k, { value: v, enumerable: true, writable: true, configurable: true });
      else out[k] = v;
    }
    return out;
  }
  return template;
}

function walkStrings(v: unknown, segs: Segment[], visit: (s: string, segs: Segment[]) => void): void {
  if (typeof v === 'string') visit(v, segs);
  else if (Array.isArray(v)) v.forEach((x, i) => walkStrings(x, [...segs, i], visit));
  else if (isRecord(v)) for (const [k, x] of Object.entries(v)) walkStrings(x, [...segs, k], visit);
}
