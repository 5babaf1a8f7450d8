/**
 * The lookup copy of the projects registry (src/auth/project-store.ts): project
 * name → creation time (epoch ms). PostgreSQL's `projects` is the durable copy.
 * Implemented by `src/redis/stores/project-registry.ts`.
 */
export abstract class ProjectRegistry {
  /** True when the project is registered. Rejects only when the store cannot be reached. */
  abstract exists(name: string): Promise<boolean>;
  /** Registers (or overwrites) a project. */
  abstract put(name: string, createdAtMs: number): Promise<void>;
  /** Registers a project unless it is. @returns true when it was added. */
  abstract putIfAbsent(name: string, createdAtMs: number): Promise<boolean>;
  /** The creation time of a project, or null when it is not registered. */
  abstract createdAt(name: string): Promise<number | null>;
  /** Every registered project → creation time (NaN when the stored value is not a number). */
  abstract all(): Promise<Record<string, number>>;
}
