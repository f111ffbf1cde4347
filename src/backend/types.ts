/**
 * The seam between berth's decisions and what runs them: a backend is an Engine
 * (src/engine/types.ts), the one interface that observe (its label-filtered lists: the
 * snapshot the planner reads) and the executor (its operations: create, putArchive, start,
 * inspect, stop, collect, logs, remove; networks and volumes) call. The planner is pure and
 * needs neither. Two backends: `engine` (one Docker engine, engine/docker) and `swarm` (a swarm
 * manager and its nodes' engines, backend/swarm). What a backend cannot do for an attempt, it
 * refuses (BackendRefusedError: the attempt ends Blocked), never does weaker.
 */
export const BACKENDS = ['engine', 'swarm'] as const;
export type BackendKind = (typeof BACKENDS)[number];
