/** What GET /workers reports of a worker known from its calls of the external protocol; times epoch ms. */
export interface ExternalWorkerInfo {
  id: string;
  /** Bare names of the queues of its project it claimed from. */
  queues: string[];
  /** Last `POST /queues/:name/claim` of this worker id, any queue (null when only its leases were seen). */
  lastClaimAt: number | null;
  /** Last call of any protocol endpoint (claim, heartbeat, complete, fail). */
  lastSeenAt: number;
  /** First call seen within the kept window. */
  firstSeenAt: number;
}

/** What one process saw of one external worker since its last flush; times epoch ms. */
export interface ExternalSighting {
  project: string;
  id: string;
  seenAt: number;
  /** Last claim seen (null: none since the last flush). */
  claimAt: number | null;
  /** Bare queue name → last claim there. */
  queues: Map<string, number>;
}

/**
 * External workers as the API processes saw them (src/workers/external/external-workers.ts),
 * per project: a worker id is the project's.
 * Implemented by `src/redis/stores/external-workers-seen.ts`.
 */
export abstract class ExternalWorkerSeen {
  /**
   * Merges sightings (several processes add theirs), in one atomic step; each
   * worker is kept `keepMs` after it was last seen.
   * @throws the store's error when it cannot be reached.
   */
  abstract record(sightings: ExternalSighting[], keepMs: number): Promise<void>;
  /**
   * Workers of `project` seen after `sinceMs`, most recently seen first (at most
   * 1000); ids seen before it are dropped.
   * @throws the store's error when it cannot be reached.
   */
  abstract list(project: string, sinceMs: number): Promise<ExternalWorkerInfo[]>;
}
