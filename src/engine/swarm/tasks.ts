/** TaskClient over dockerode: tasks are polled (the engine emits no task events, moby#37403). */
import type Dockerode from 'dockerode';
import type { BoundedCalls } from '../docker/deadline';
import type { TaskClient, TaskSummary } from './types';

interface TaskInfo {
  ID: string;
  ServiceID: string;
  NodeID?: string;
  DesiredState: string;
  CreatedAt: string;
  Status: { State: string; Timestamp: string; Message?: string; Err?: string; ContainerStatus?: { ContainerID?: string; ExitCode?: number } };
}

function summary(t: TaskInfo): TaskSummary {
  const c = t.Status.ContainerStatus;
  return {
    id: t.ID,
    serviceId: t.ServiceID,
    nodeId: t.NodeID ?? '',
    desiredState: t.DesiredState,
    state: t.Status.State,
    message: t.Status.Message ?? '',
    error: t.Status.Err ?? '',
    ...(c?.ExitCode !== undefined ? { exitCode: c.ExitCode } : {}),
    ...(c?.ContainerID ? { containerId: c.ContainerID } : {}),
    timestamp: t.Status.Timestamp,
    createdAt: t.CreatedAt,
  };
}

export class SwarmTasks implements TaskClient {
  constructor(
    private readonly docker: Dockerode,
    private readonly calls: BoundedCalls,
  ) {}

  async list(filter: { labels?: string[]; services?: string[] }): Promise<TaskSummary[]> {
    const f: Record<string, string[]> = {};
    if (filter.labels?.length) f.label = filter.labels;
    if (filter.services?.length) f.service = filter.services;
    const items = (await this.calls.run('tasks.list', () => this.docker.listTasks({ filters: JSON.stringify(f) }))) as TaskInfo[];
    return items.map(summary);
  }
}
