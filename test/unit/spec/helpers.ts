/** Shared helpers for the spec tests: temporary spec folders and one-document loads. */
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { loadSpecs, type LoadReport } from '../../../src/spec/loader';

export const REPO = path.resolve(__dirname, '..', '..', '..');
export const GOOD = path.join(REPO, 'test', 'fixtures', 'good');
export const BAD = path.join(REPO, 'test', 'fixtures', 'bad');

const made: string[] = [];

/** A fresh temporary folder, removed by `cleanupTemp`. */
export function tempDir(prefix = 'berth-spec-'): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), prefix));
  made.push(dir);
  return dir;
}

export function cleanupTemp(): void {
  while (made.length > 0) rmSync(made.pop() as string, { recursive: true, force: true });
}

/** Writes `files` (relative path → content) under `root`. */
export function writeTree(root: string, files: Record<string, string | Buffer>): void {
  for (const [rel, content] of Object.entries(files)) {
    const abs = path.join(root, rel);
    mkdirSync(path.dirname(abs), { recursive: true });
    writeFileSync(abs, content);
  }
}

/** A minimal valid document named `name`, with `specExtra` (indented YAML lines) added under spec. */
export function doc(name: string, specExtra = '', metaExtra = ''): string {
  return `apiVersion: berth.dev/v1
kind: Attempt
metadata:
  name: ${name}
${metaExtra}spec:
  image: berth/busybox:local
${specExtra}`;
}

export interface Sandbox {
  root: string;
  specs: string;
  results: string;
  load(): Promise<LoadReport>;
}

/** A temp specs folder holding `files`, with a results root beside it. */
export function sandbox(files: Record<string, string | Buffer>): Sandbox {
  const root = tempDir();
  const specs = path.join(root, 'specs');
  const results = path.join(root, 'results');
  mkdirSync(specs, { recursive: true });
  writeTree(specs, files);
  return { root, specs, results, load: () => loadSpecs({ specsDir: specs, resultsRoot: results }) };
}

/** Loads one spec text as specs/spec.yaml. */
export function loadOne(text: string, extra: Record<string, string | Buffer> = {}): Promise<LoadReport> {
  return sandbox({ 'spec.yaml': text, ...extra }).load();
}

/** What a load says, comparable with deep equality. */
export function loadSummary(l: LoadReport) {
  return {
    specs: l.specs.map((s) => `${s.spec.name}:${s.hash}:${s.source.file}:${s.source.line}`),
    errors: l.errors.map((e) => `${e.file}:${e.line}:${e.col}:${e.code}:${e.attempt ?? ''}:${e.message}`),
    protectedNames: [...l.protectedNames].sort(),
    unreadableFiles: [...l.unreadableFiles].sort(),
    unreadableFolders: [...l.unreadableFolders].sort(),
    files: l.files,
    documents: l.documents,
    rootError: l.rootError?.message,
  };
}
