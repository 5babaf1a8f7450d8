import { client, unwrap } from './client';
import type { Job, Schedule } from './types';

/** `POST /schedules` / `PATCH /schedules/:id` body fields the console edits. */
export interface ScheduleBody {
  name?: string;
  cron?: string;
  timezone?: string;
  queue?: string;
  type?: string;
  payload?: Record<string, unknown>;
  enabled?: boolean;
}

export const listSchedules = () => unwrap<Schedule[] | { items: Schedule[] }>(client.GET('/schedules')).then((r) => (Array.isArray(r) ? r : r.items));
export const createSchedule = (body: ScheduleBody) => unwrap<Schedule>(client.POST('/schedules', { body: body as never }));
export const updateSchedule = (id: string, body: ScheduleBody) => unwrap<Schedule>(client.PATCH('/schedules/{id}', { params: { path: { id } }, body: body as never }));
export const deleteSchedule = (id: string) => unwrap<unknown>(client.DELETE('/schedules/{id}', { params: { path: { id } } }));
/** `POST /schedules/:id/run`: enqueues the schedule's job now (no slot; nextRunAt does not move); answers the job. */
export const runSchedule = (id: string) => unwrap<Job>(client.POST('/schedules/{id}/run', { params: { path: { id } } }));
/** `GET /schedules/preview`: the next `count` runs of a cron in a time zone. */
export const previewSchedule = (cron: string, timezone: string, count = 5) =>
  unwrap<{ runs: string[] }>(client.GET('/schedules/preview', { params: { query: { cron, timezone, count } } }));
