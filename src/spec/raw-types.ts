/**
 * The shape of a document that passed schemas/attempt.schema.json: what the user wrote, before
 * defaults and path resolution. Keep in step with the schema.
 */
import type { NetworkMode } from './types';

export interface RawSecret {
  name: string;
  fromEnv?: string;
  fromFile?: string;
}

export interface RawVolume {
  name: string;
  mountPath: string;
  readOnly?: boolean;
  size?: string | number;
}

export interface RawCredential {
  host: string;
  secret: string;
  header?: string;
  format?: string;
  caSecret?: string;
}

export type PullPolicy = 'IfNotPresent' | 'Always' | 'Never';

export interface RawSidecar {
  name: string;
  image: string;
  imagePullPolicy?: PullPolicy;
  command?: string[];
  env?: Record<string, string | { secretRef: string }>;
  secrets?: string[];
  egress?: string[];
  credentials?: RawCredential[];
  ready?: { tcp?: number; log?: string; command?: string[]; deadlineSeconds?: number };
}

/** spec.build, grade.build: an image built from a Dockerfile (docs/CONTRACT.md "Images built from a Dockerfile"). */
export interface RawBuild {
  context: string;
  dockerfile?: string;
  args?: Record<string, string>;
  target?: string;
}

export interface RawGrade {
  image?: string;
  imagePullPolicy?: PullPolicy;
  build?: RawBuild;
  command: string[];
  env?: Record<string, string>;
  fixture?: string;
  protect?: string[];
  deadlineSeconds?: number;
  resources?: { cpus?: number; memory?: string | number; pids?: number };
  network?: { mode?: 'none' };
  when?: 'always' | 'succeeded';
}

export interface RawSpec {
  /** Exactly one of image and build (semantic.ts). */
  image?: string;
  imagePullPolicy?: PullPolicy;
  build?: RawBuild;
  command?: string[];
  workingDir?: string;
  env?: Record<string, string | { secretRef: string }>;
  secrets?: RawSecret[];
  /** One file or folder, or layers copied in order. */
  fixture?: string | string[];
  results?: string;
  network?: { mode?: NetworkMode; egress?: string[]; credentials?: RawCredential[] };
  volumes?: RawVolume[];
  resources?: { cpus?: number; memory?: string | number; pids?: number; disk?: string | number };
  deadlineSeconds?: number;
  retries?: number;
  ttlSecondsAfterFinished?: number;
  user?: string;
  readOnlyRootFilesystem?: boolean;
  sandbox?: boolean;
  sidecars?: RawSidecar[];
  grade?: RawGrade;
  workspace?: { export?: 'changes' | 'none'; exclude?: string[]; maxBytes?: string | number; maxFiles?: number; gitignore?: boolean };
  harvest?: { maxBytes?: string | number; maxFiles?: number };
}

export interface RawAttempt {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string> };
  spec: RawSpec;
}
