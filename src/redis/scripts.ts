import { createHash } from 'node:crypto';
import { ChainableCommander, Cluster, Command } from 'ioredis';
import type { RedisClient } from './connection';
import { readyMasters } from './connection';
import { LoadedScript, ScriptLoadError, loadScripts } from './script-loader';

/** Names of the scripts in lua/ (file name without `-N.lua`). */
export type ScriptName =
  | 'enqueueJobs'
  | 'claimJobs'
  | 'extendLocks'
  | 'completeJobs'
  | 'failJob'
  | 'releaseJobs'
  | 'promoteDelayed'
  | 'reapExpired'
  | 'cancelJob'
  | 'retryJob'
  | 'updateProgress'
  | 'renewLock'
  | 'releaseLock'
  | 'forgetJobs'
  | 'ackEvents'
  | 'restoreJobs'
  | 'purgeDlq'
  | 'reviveJob'
  | 'recordAction'
  | 'takeToken'
  | 'checkQueue'
  | 'verifyQueue'
  | 'resetQueue'
  | 'pruneJobs'
  | 'readEvents'
  | 'rebuildLanes'
  | 'overrideKey'
  | 'topKeys'
  | 'recordFlow'
  | 'restoreFlow'
  | 'flowMoves'
  | 'advanceFlow'
  | 'moveFlowJobs'
  | 'takeFlowOutcomes'
  | 'claimIdempotencyKey'
  | 'releaseIdempotencyKey';

/**
 * Redis Cluster replies that prove a script did not run: its slot is served by
 * another node (MOVED, ASK), is being migrated (TRYAGAIN), or has no master
 * right now (CLUSTERDOWN).
 */
const NOT_RUN = /^(MOVED|ASK|TRYAGAIN|CLUSTERDOWN)\b/;
/** How long a script that got such a reply is retried on a cluster, ms; then the error is the caller's. */
export const CLUSTER_RETRY_MS = 2000;

/** A script as sent: its SHA-1 (the EVALSHA name) and whether it skips the auto-pipeline. */
interface SentScript extends LoadedScript {
  sha: string;
  /** Listed in the client's autoPipeliningIgnoredCommands (src/redis/connection.ts): written to the socket at once. */
  direct: boolean;
  /** Sockets this script was issued on as EVAL (so Redis behind them holds it), as ioredis' Script keeps them. */
  loadedOn: WeakSet<object>;
}

/** Redis's answer that it does not hold the script: the call did not run. */
export const isNoScript = (e: unknown): boolean => (e as Error)?.message?.startsWith('NOSCRIPT') ?? false;

/**
 * Runs the Lua scripts: on a single node or Sentinel as EVALSHA or EVAL
 * ({@link single}), the direct ones (enqueue and claim) written at once and
 * the others through the auto-pipeline; on a cluster
 * through ioredis' `defineCommand` (EVALSHA, EVAL on a socket that has not had
 * the script yet, EVAL again after NOSCRIPT) and its auto-pipeline.
 *
 * Each call's keys and arguments travel as one array, built once. Spread
 * into the `defineCommand` function, as they were, they were copied three
 * more times (rest parameters, `unshift`, a spread into the command); with
 * the 14,000 arguments of a 1,000-job enqueue that was the largest self time
 * of the main thread (docs/benchmarks.md, "the scripts' calls").
 */
export class RedisScripts {
  private readonly byName = new Map<string, SentScript>();

  constructor(
    private readonly client: RedisClient,
    scripts: LoadedScript[] = loadScripts(),
  ) {
    const unpipelined = (client instanceof Cluster ? [] : client.options.autoPipeliningIgnoredCommands) ?? [];
    for (const s of scripts) {
      const sha = createHash('sha1').update(s.source).digest('hex');
      this.byName.set(s.name, { ...s, sha, direct: unpipelined.includes(s.name), loadedOn: new WeakSet() });
      // Only a cluster's calls go through defineCommand (its Script picks EVAL or EVALSHA per node socket). Every
      // pipeline ioredis builds copies each defined script onto itself: 30 µs per auto-pipeline flush with the 33
      // scripts against 6 without (micro-benchmark), on every tick that sends a command.
      if (client instanceof Cluster) client.defineCommand(s.name, { numberOfKeys: s.numberOfKeys, lua: s.source });
    }
  }

  /**
   * Compiles every script on every master (SCRIPT LOAD), so that a syntax
   * error stops the boot naming the file instead of failing a job later.
   * @throws ScriptLoadError
   */
  async verify(): Promise<void> {
    // A cluster client knows its masters only once it has read the slot map.
    for (const node of await readyMasters(this.client)) {
      for (const s of this.byName.values()) {
        try {
          await node.script('LOAD', s.source);
        } catch (e) {
          throw new ScriptLoadError(`lua/${s.name}-${s.numberOfKeys}.lua does not compile: ${(e as Error).message}`);
        }
      }
    }
  }

  /**
   * Runs a script. `keys.length` must equal the N in its file name.
   * @throws Error when the key count is wrong (a programming error).
   */
  run<T = unknown>(name: ScriptName, keys: string[], args: (string | number)[]): Promise<T> {
    const s = this.script(name, keys);
    const argv = (keys as (string | number)[]).concat(args);
    const c = this.client;
    if (c instanceof Cluster) return this.runOnCluster(c, () => (c as any)[name](argv) as Promise<T>);
    return this.single<T>(c, s, argv);
  }

  /**
   * Queues a script on a MULTI (or pipeline) as EVALSHA (on a cluster through
   * defineCommand): its reply comes in the transaction's; a NOSCRIPT one is
   * the caller's to handle (RedisContext.runAndRead loads the scripts and
   * runs the MULTI again).
   * @throws Error when the key count is wrong (a programming error).
   */
  addTo(multi: ChainableCommander, name: ScriptName, keys: string[], args: (string | number)[]): void {
    const s = this.script(name, keys);
    const argv = (keys as (string | number)[]).concat(args);
    if (this.client instanceof Cluster) (multi as any)[name](argv);
    else multi.evalsha(s.sha, s.numberOfKeys, argv as string[]);
  }

  /**
   * One call on a single node or Sentinel: EVALSHA when the script already
   * went out as EVAL on the connection's socket, else EVAL (which loads it),
   * decided when the call is issued — on the socket of a ready connection
   * (a direct call is written to it at once, an auto-pipelined one at the end
   * of the turn), or EVAL while it is not ready (the call waits for the next
   * socket). So after a restart or a failover the first call of a script on
   * the new socket loads it and the calls behind it find it, in the order
   * they were issued (EVALSHA first with an EVAL per NOSCRIPT reply let a
   * later call overtake an earlier one). NOSCRIPT (the cache flushed under an
   * open socket; the script did not run): once more, as EVAL.
   *
   * A direct script (enqueue, claim: autoPipeliningIgnoredCommands) is a
   * Command built here with its arguments set after construction: ioredis'
   * Command runs `Array.prototype.flat` over the arguments it is given,
   * ~130 ns per argument on this machine's V8 (1.9 ms for a 1,000-job
   * enqueue's 14,000, against 20 µs for the concat).
   */
  private single<T>(c: Exclude<RedisClient, Cluster>, s: SentScript, argv: (string | number)[]): Promise<T> {
    const send = (verb: 'eval' | 'evalsha'): Promise<T> => {
      const script = verb === 'eval' ? s.source : s.sha;
      if (!s.direct) return c[verb](script, s.numberOfKeys, argv as string[]) as Promise<T>;
      const cmd = new Command(verb, [], { replyEncoding: 'utf8' });
      cmd.args = [script, s.numberOfKeys].concat(argv);
      cmd.stringifyArguments(); // what the constructor does to the arguments it is given (numbers to strings)
      return c.sendCommand(cmd) as Promise<T>;
    };
    const socket = c.status === 'ready' ? (c.stream as object | undefined) : undefined;
    const loaded = !!socket && s.loadedOn.has(socket);
    if (socket && !loaded) s.loadedOn.add(socket);
    return send(loaded ? 'evalsha' : 'eval').catch((e: Error) => {
      if (!isNoScript(e)) throw e;
      if (socket) s.loadedOn.delete(socket);
      return send('eval');
    });
  }

  private script(name: ScriptName, keys: string[]): SentScript {
    const s = this.byName.get(name);
    if (!s) throw new ScriptLoadError(`no script named ${name}`);
    if (keys.length !== s.numberOfKeys) throw new Error(`${name} takes ${s.numberOfKeys} keys, got ${keys.length}`);
    return s;
  }

  /**
   * Runs a script on a cluster, again when a reply says it did not run.
   *
   * Why: after a failover (a master died, its replica took over) ioredis
   * keeps the old slot map until something makes it read the map again. It
   * does so on a MOVED reply to a single command, or to an auto-pipeline
   * whose commands all got the very same reply; but an auto-pipeline groups
   * the commands of every slot a node serves, and MOVED names the slot, so
   * a pipeline holding scripts of two queues of the failed shard (a worker's
   * heartbeats and acks, an API's enqueues) gets two different replies and
   * ioredis hands each MOVED to its caller instead of following it: an
   * enqueue accepted a moment later would fail with `MOVED 4088 host:port`.
   * These replies mean the script never ran, so running it again is safe:
   * read the slot map, wait a little, go again, for up to CLUSTER_RETRY_MS.
   * While the slot has no master yet (the failover itself, about two
   * cluster-node-timeouts) the error still reaches the caller after that.
   */
  private async runOnCluster<T>(cluster: Cluster, call: () => Promise<T>): Promise<T> {
    const deadline = Date.now() + CLUSTER_RETRY_MS;
    for (let attempt = 1; ; attempt++) {
      try {
        return await call();
      } catch (e) {
        if (!NOT_RUN.test((e as Error)?.message ?? '') || Date.now() >= deadline) throw e;
        cluster.refreshSlotsCache();
        await new Promise((r) => setTimeout(r, Math.min(25 * attempt, 250)));
      }
    }
  }
}
