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
  | 'advanceFlow'
  | 'moveFlowJobs'
  | 'takeFlowOutcomes';

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
}

/**
 * Runs the Lua scripts in lua/ by EVALSHA, and by EVAL when Redis answers
 * NOSCRIPT (its script cache is empty: a restarted or new master).
 *
 * Each call is one EVALSHA whose keys and arguments travel as one array, built
 * once. Through ioredis' `defineCommand` the same call spread the arguments
 * into a function call and copied them three more times (rest parameters,
 * `unshift`, a spread into the command); with the 16,000 arguments of a
 * 1,000-job enqueue that was most of the main thread's time in ioredis
 * (docs/benchmarks.md, "Where the server's main thread goes").
 */
export class RedisScripts {
  private readonly byName = new Map<string, SentScript>();

  constructor(
    private readonly client: RedisClient,
    scripts: LoadedScript[] = loadScripts(),
  ) {
    const unpipelined = (client instanceof Cluster ? [] : client.options.autoPipeliningIgnoredCommands) ?? [];
    for (const s of scripts) {
      this.byName.set(s.name, { ...s, sha: createHash('sha1').update(s.source).digest('hex'), direct: unpipelined.includes(s.name) });
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
    const s = this.byName.get(name);
    if (!s) throw new ScriptLoadError(`no script named ${name}`);
    if (keys.length !== s.numberOfKeys) throw new Error(`${name} takes ${s.numberOfKeys} keys, got ${keys.length}`);
    const argv = (keys as (string | number)[]).concat(args);
    const call = () => this.send<T>(s, argv);
    return this.client instanceof Cluster ? this.runOnCluster(this.client, call) : call();
  }

  /**
   * Queues a script's EVALSHA on a MULTI (or pipeline): its reply comes in
   * the transaction's, and a NOSCRIPT one is the caller's to handle (load the
   * scripts with {@link verify} and run the MULTI again).
   * @throws Error when the key count is wrong (a programming error).
   */
  addTo(multi: ChainableCommander, name: ScriptName, keys: string[], args: (string | number)[]): void {
    const s = this.byName.get(name);
    if (!s) throw new ScriptLoadError(`no script named ${name}`);
    if (keys.length !== s.numberOfKeys) throw new Error(`${name} takes ${s.numberOfKeys} keys, got ${keys.length}`);
    multi.evalsha(s.sha, s.numberOfKeys, (keys as (string | number)[]).concat(args) as string[]);
  }

  /** One EVALSHA of `s` with `argv` (keys then arguments); EVAL with the source when Redis answers NOSCRIPT (the script did not run). */
  private send<T>(s: SentScript, argv: (string | number)[]): Promise<T> {
    const sent = this.command('evalsha', s.sha, s, argv);
    return sent.catch((e: Error) => {
      if (!e?.message?.startsWith('NOSCRIPT')) throw e;
      return this.command('eval', s.source, s, argv);
    }) as Promise<T>;
  }

  /**
   * Sends one EVALSHA or EVAL. A direct one is built here with its arguments
   * set after construction: ioredis' Command runs `Array.prototype.flat` over
   * the arguments it is given, ~130 ns per argument on this machine's V8
   * (1.9 ms for a 1,000-job enqueue's 14,000, against 20 µs for the concat).
   */
  private command(verb: 'evalsha' | 'eval', script: string, s: SentScript, argv: (string | number)[]): Promise<unknown> {
    const c = this.client;
    if (s.direct && !(c instanceof Cluster)) {
      const cmd = new Command(verb, [], { replyEncoding: 'utf8' });
      cmd.args = [script, s.numberOfKeys].concat(argv);
      cmd.stringifyArguments(); // what the constructor does to the arguments it is given (numbers to strings)
      return c.sendCommand(cmd) as Promise<unknown>;
    }
    return verb === 'evalsha' ? c.evalsha(script, s.numberOfKeys, argv as string[]) : c.eval(script, s.numberOfKeys, argv as string[]);
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
