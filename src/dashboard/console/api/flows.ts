import { client, unwrap } from './client';
import type { Flow, JobDependency } from './types';

/** `GET /flows/:id` (viewer): the flow's status, counts and jobs. @throws ApiError 404 once its record is gone (or of another project). */
export const getFlow = (id: string) => unwrap<Flow>(client.GET('/flows/{id}', { params: { path: { id } } }));

/** `GET /jobs/:id/dependencies` (viewer): the jobs it waits for, in the order it named them; empty outside a flow. */
export const jobDependencies = (id: string) => unwrap<{ items: JobDependency[] }>(client.GET('/jobs/{id}/dependencies', { params: { path: { id } } }));
