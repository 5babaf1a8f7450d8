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
  | 'readEvents';

/**
 * Registers the Lua scripts on a client (ioredis `defineCommand`: EVALSHA with
 * a transparent EVAL fallback) and runs them.
 */
export class RedisScripts {
  private readonly byName = new Map<string, LoadedScript>();

  constructor(
    private readonly client: RedisClient,
    scripts: LoadedScript[] = loadScripts(),
  ) {
    for (const s of scripts) {
      this.byName.set(s.name, s);
      client.defineCommand(s.name, { numberOfKeys: s.numberOfKeys, lua: s.source });
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
    return (this.client as any)[name](...keys, ...args) as Promise<T>;
  }
}
