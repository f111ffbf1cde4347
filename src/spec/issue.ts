/** One line for a positioned spec error: `file:line:col: field.path: message`. */
export function formatIssue(e: { file: string; line: number; col: number; path: string; message: string }): string {
  return `${e.file}:${e.line}:${e.col}: ${e.path ? `${e.path}: ` : ''}${e.message}`;
}
