import { LIMITS } from './job-options';

/**
 * Projects (tenants) and queue names (docs/security.md "Projects", DESIGN "Projects").
 *
 * A queue's **qualified name** carries its project: `<queue>` for the project
 * `default`, `<project>/<queue>` for any other. Project and queue names both
 * match `^[a-z0-9][a-z0-9_-]{0,63}$`, so neither holds a `/` and the two forms
 * never collide. Everything below the HTTP API (the Redis keys
 * `<prefix>:{<qualified>}:<kind>`, the Lua scripts, the mirror writer, the
 * PostgreSQL `queue` columns, workers' QUEUES, metrics) works with qualified
 * names; the API maps a client's bare queue name and its principal's
 * project to the qualified name on the way in, and back on the way out.
 * The `default` project's qualified names are today's bare names: an
 * installation from before projects upgrades without moving any data.
 */

/** The project every installation has, whose queues keep their bare names. */
export const DEFAULT_PROJECT = 'default';

/** Project names follow the queue-name rule (API.md v1.1). */
export const PROJECT_PATTERN = LIMITS.queuePattern;

/** True when `s` is a valid project name. */
export function isProjectName(s: unknown): s is string {
  return typeof s === 'string' && PROJECT_PATTERN.test(s);
}

/**
 * The qualified name of `queue` in `project`.
 * @param project a valid project name; @param queue a valid (bare) queue name.
 * @throws Error when either is not a valid name (a caller's bug: validate first).
 */
export function qualify(project: string, queue: string): string {
  if (!PROJECT_PATTERN.test(project) || !LIMITS.queuePattern.test(queue)) throw new Error(`qualify: invalid project or queue name`);
  return project === DEFAULT_PROJECT ? queue : `${project}/${queue}`;
}

/**
 * Splits a qualified name into its project and bare queue name.
 * A name without `/` is the `default` project's.
 */
export function splitQualified(qualified: string): { project: string; queue: string } {
  const i = qualified.indexOf('/');
  return i < 0 ? { project: DEFAULT_PROJECT, queue: qualified } : { project: qualified.slice(0, i), queue: qualified.slice(i + 1) };
}

/** The project a qualified queue name belongs to. */
export function projectOf(qualified: string): string {
  const i = qualified.indexOf('/');
  return i < 0 ? DEFAULT_PROJECT : qualified.slice(0, i);
}

/** The bare queue name (as a client of its project names it) of a qualified name. */
export function bareQueue(qualified: string): string {
  const i = qualified.indexOf('/');
  return i < 0 ? qualified : qualified.slice(i + 1);
}

/** True when the qualified queue name belongs to `project`. */
export function inProject(qualified: string, project: string): boolean {
  return projectOf(qualified) === project;
}

/**
 * True when `s` is a valid qualified queue name: a bare queue name (the
 * `default` project's), or `<project>/<queue>` with both valid and the
 * project not `default` (whose queues have no prefix: `default/x` would be a
 * second name for `x`).
 */
export function isQualifiedQueue(s: string): boolean {
  const i = s.indexOf('/');
  if (i < 0) return LIMITS.queuePattern.test(s);
  const project = s.slice(0, i);
  return project !== DEFAULT_PROJECT && PROJECT_PATTERN.test(project) && LIMITS.queuePattern.test(s.slice(i + 1));
}
