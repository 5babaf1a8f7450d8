import { randomBytes } from 'node:crypto';
import { hash, parseOptions, verify, type Algorithm } from '@node-rs/argon2';

/** `Algorithm.Argon2id` of @node-rs/argon2 (a const enum, which isolatedModules cannot read). */
const ARGON2ID = 2 as Algorithm;

/**
 * argon2id parameters (RFC 9106; OWASP Password Storage Cheat Sheet's first
 * choice: m = 19 MiB, t = 2, p = 1). About 30 ms and 19 MiB per hash on one
 * core; the hash runs on libuv's thread pool, off the event loop. The PHC
 * string stores them, so raising them later only affects new hashes (and
 * each user's next login rehashes, see {@link needsRehash}).
 */
export const ARGON2_OPTIONS = Object.freeze({
  algorithm: ARGON2ID,
  /** KiB. */
  memoryCost: 19_456,
  timeCost: 2,
  parallelism: 1,
  /** Bytes of output. */
  outputLen: 32,
});

/** A password's argon2id hash as a PHC string (`$argon2id$v=19$m=19456,t=2,p=1$<salt>$<hash>`), with a random 16-byte salt. */
export function hashPassword(password: string): Promise<string> {
  return hash(password, ARGON2_OPTIONS);
}

/**
 * True when `password` matches the PHC string `phc`; false when it does not
 * or when `phc` is not a valid argon2 string (never throws for bad input).
 */
export async function verifyPassword(phc: string, password: string): Promise<boolean> {
  try {
    return await verify(phc, password);
  } catch {
    return false;
  }
}

/** True when `phc` was made with other parameters than {@link ARGON2_OPTIONS} (or another algorithm). */
export function needsRehash(phc: string): boolean {
  try {
    const o = parseOptions(phc);
    return o.algorithm !== ARGON2_OPTIONS.algorithm || o.memoryCost !== ARGON2_OPTIONS.memoryCost || o.timeCost !== ARGON2_OPTIONS.timeCost || o.parallelism !== ARGON2_OPTIONS.parallelism;
  } catch {
    return true;
  }
}

let dummy: Promise<string> | null = null;

/**
 * The hash a login of an unknown user is verified against, so that it costs
 * what a known user's costs (a username cannot be told to exist by timing).
 * Made once per process, of a random password.
 */
export function dummyHash(): Promise<string> {
  dummy ??= hashPassword(randomBytes(24).toString('base64'));
  return dummy;
}
