import type { DataSource, EntityManager } from 'typeorm';

/**
 * One audit batch as PostgreSQL receives it: a single Query message whose
 * text holds every statement, `COPY … FROM STDIN` ones included, and the
 * data of each COPY in the order of those statements.
 */
export interface BatchMessage {
  text: string;
  /** COPY data (text format, src/postgres/copy-text.ts), one per COPY statement of `text`, in order. */
  copies: Buffer[];
}

/** The part of node-postgres's Connection a query object drives (pg/lib/connection.js). */
interface PgConnection {
  stream: { cork?: () => void; uncork?: () => void };
  query(text: string): void;
  sendCopyFromChunk(chunk: Buffer): void;
  endCopyFrom(): void;
}

/** A node-postgres client: what `client.query(submittable)` needs. */
interface PgClient {
  query(submittable: object): unknown;
}

/**
 * A node-postgres "submittable" (the interface pg-copy-streams and
 * pg-cursor use): sends the Query message and every COPY's data and end
 * marker at once, without waiting for the server's CopyInResponse.
 *
 * Why this is sound (PostgreSQL manual, 55.2.2 Simple Query and 55.2.6
 * COPY Operations): a multi-statement Query runs as one implicit
 * transaction; a COPY FROM STDIN inside it reads CopyData messages up to
 * its CopyDone, then the next statement runs. On an error anywhere the rest
 * of the message is discarded, the whole transaction rolls back, and
 * CopyData/CopyDone messages the server then meets outside copy mode are
 * dropped (postgres.c ignores them "per protocol spec"), so the connection
 * stays usable. So the batch is all-or-nothing and one round trip: the
 * server never waits for Node between statements, even while Node's event
 * loop is busy preparing the next batch.
 *
 * node-postgres clears its active query when an ErrorResponse arrives and
 * sends the next one only after ReadyForQuery, so settling on the error is
 * safe (pg's own Query does the same).
 */
class BatchSubmittable {
  private settled = false;

  constructor(
    private readonly msg: BatchMessage,
    private readonly resolve: () => void,
    private readonly reject: (e: unknown) => void,
  ) {}

  submit(connection: PgConnection): null {
    connection.stream.cork?.();
    try {
      connection.query(this.msg.text);
      for (const data of this.msg.copies) {
        connection.sendCopyFromChunk(data);
        connection.endCopyFrom();
      }
    } finally {
      connection.stream.uncork?.();
    }
    return null;
  }

  handleError(err: unknown): void {
    if (this.settled) return;
    this.settled = true;
    this.reject(err);
  }

  handleReadyForQuery(): void {
    if (this.settled) return;
    this.settled = true;
    this.resolve();
  }

  // The batch returns no rows and the data of every COPY went out with the query.
  handleRowDescription(): void {}
  handleDataRow(): void {}
  handleCommandComplete(): void {}
  handleEmptyQuery(): void {}
  handlePortalSuspended(): void {}
  handleCopyInResponse(): void {}
  handleCopyData(): void {}
}

/**
 * Runs one batch message on a connection of `m`: the pool's (a DataSource),
 * or the one holding the caller's transaction (an EntityManager of
 * `DataSource.transaction`), inside which the batch's statements then run.
 * @throws the server's error (a pg DatabaseError with its SQLSTATE in `code`), or a connection error; nothing of the batch is written then.
 */
export async function sendBatch(m: DataSource | EntityManager, msg: BatchMessage): Promise<void> {
  const own = (m as EntityManager).queryRunner;
  const source = 'createQueryRunner' in m ? m : m.connection;
  const runner = own && !own.isReleased ? own : source.createQueryRunner();
  try {
    const client = (await runner.connect()) as PgClient;
    await new Promise<void>((resolve, reject) => client.query(new BatchSubmittable(msg, resolve, reject)));
  } finally {
    if (runner !== own) await runner.release();
  }
}
