import { readFileSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import {
  IdempotencyConflictError,
  JobNotFoundError,
  LeaseLostError,
  ScriptErrorCode,
  SluiceError,
  UnavailableError,
  ValidationError,
  WrongStateError,
  errorFromCode,
} from './errors';

const LUA_DIR = resolve(__dirname, '../../lua');

/** `local ERR_NAME = -N` lines of lua/includes/errors.lua, as name → number. */
function luaErrorCodes(): Map<string, number> {
  const text = readFileSync(join(LUA_DIR, 'includes', 'errors.lua'), 'utf8');
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    const code = line.replace(/--.*$/, '').trim();
    if (!code) continue;
    const m = /^local\s+(ERR_[A-Z_]+)\s*=\s*(-?\d+)\s*$/.exec(code);
    if (!m) throw new Error(`errors.lua: unexpected line ${JSON.stringify(line)}`);
    if (out.has(m[1])) throw new Error(`errors.lua: ${m[1]} defined twice`);
    out.set(m[1], Number(m[2]));
  }
  return out;
}

/** Lua name ↔ TypeScript enum member. A new code must be added on both sides and here. */
const NAMES: Record<string, keyof typeof ScriptErrorCode> = {
  ERR_NOT_FOUND: 'JobNotFound',
  ERR_WRONG_STATE: 'WrongState',
  ERR_LEASE_LOST: 'LeaseLost',
  ERR_IDEMPOTENCY_CONFLICT: 'IdempotencyConflict',
  ERR_DECODE: 'DecodeError',
  ERR_RESTORING: 'Restoring',
};

/** Numeric members of the TS enum (a numeric enum also maps number → name). */
const enumMembers = () =>
  Object.entries(ScriptErrorCode).filter(([, v]) => typeof v === 'number') as [keyof typeof ScriptErrorCode, number][];

describe('ScriptErrorCode matches lua/includes/errors.lua', () => {
  const lua = luaErrorCodes();

  it('parses at least the five known codes', () => {
    expect([...lua.keys()].sort()).toEqual(Object.keys(NAMES).sort());
  });

  it.each(Object.entries(NAMES))('%s equals ScriptErrorCode.%s', (luaName, tsName) => {
    expect(lua.get(luaName)).toBeDefined();
    expect(lua.get(luaName)).toBe(ScriptErrorCode[tsName]);
  });

  it('every enum member has a Lua counterpart', () => {
    const mapped = new Set(Object.values(NAMES));
    for (const [name] of enumMembers()) expect(mapped.has(name)).toBe(true);
    expect(enumMembers()).toHaveLength(lua.size);
  });

  it('codes are negative and distinct (positive codes mean success in the scripts)', () => {
    const values = [...lua.values()];
    for (const v of values) expect(v).toBeLessThan(0);
    expect(new Set(values).size).toBe(values.length);
  });

  it('every ERR_* used by a script is defined in errors.lua, and every script that uses one includes it', () => {
    const files = readdirSync(LUA_DIR).filter((f) => f.endsWith('.lua'));
    const includes = readdirSync(join(LUA_DIR, 'includes')).map((f) => join('includes', f));
    for (const f of [...files, ...includes]) {
      const text = readFileSync(join(LUA_DIR, f), 'utf8');
      const used = new Set(text.match(/\bERR_[A-Z_]+\b/g) ?? []);
      for (const name of used) expect({ file: f, name, defined: lua.has(name) }).toEqual({ file: f, name, defined: true });
      if (used.size && !f.startsWith('includes')) expect({ file: f, includesErrors: /^@include "errors"/m.test(text) }).toEqual({ file: f, includesErrors: true });
    }
  });
});

describe('errorFromCode', () => {
  it('maps each code to its typed error with a stable code', () => {
    const nf = errorFromCode(ScriptErrorCode.JobNotFound, 'j1');
    expect(nf).toBeInstanceOf(JobNotFoundError);
    expect(nf.code).toBe('not_found');
    expect((nf as JobNotFoundError).jobId).toBe('j1');

    const ws = errorFromCode(ScriptErrorCode.WrongState, 'j2', 'completed', 'cancel');
    expect(ws).toBeInstanceOf(WrongStateError);
    expect(ws.code).toBe('conflict');
    expect((ws as WrongStateError).status).toBe('completed');
    expect(ws.message).toBe('job j2 is completed: cannot cancel');

    const ll = errorFromCode(ScriptErrorCode.LeaseLost, 'j3');
    expect(ll).toBeInstanceOf(LeaseLostError);
    expect(ll.code).toBe('lease_lost');

    const ic = errorFromCode(ScriptErrorCode.IdempotencyConflict, 'key-1');
    expect(ic).toBeInstanceOf(IdempotencyConflictError);
    expect(ic.code).toBe('conflict');
    expect((ic as IdempotencyConflictError).idempotencyKey).toBe('key-1');

    const de = errorFromCode(ScriptErrorCode.DecodeError, 'j5');
    expect(de.code).toBe('decode_error');
    expect(de.message).toMatch(/j5/);
  });

  it('defaults the status and action of a WrongStateError', () => {
    expect(errorFromCode(ScriptErrorCode.WrongState, 'j').message).toBe('job j is unknown: cannot change it');
  });

  it('Restoring (the restore fence) is 503 unavailable', () => {
    const e = errorFromCode(ScriptErrorCode.Restoring, 'j');
    expect(e.code).toBe('unavailable');
  });

  it.each([0, 1, -7, -99, NaN])('an unexpected code %p becomes an internal SluiceError', (c) => {
    const e = errorFromCode(c, 'j');
    expect(e).toBeInstanceOf(SluiceError);
    expect(e.code).toBe('internal');
    expect(e.message).toMatch(/unexpected script code/);
  });
});

describe('error classes', () => {
  it('are Errors and SluiceErrors named after their class', () => {
    const all: SluiceError[] = [
      new JobNotFoundError('a'),
      new WrongStateError('a', 'failed', 'x'),
      new LeaseLostError('a'),
      new IdempotencyConflictError('k'),
      new ValidationError('bad', [{ path: 'type', message: 'm' }]),
      new UnavailableError('busy'),
    ];
    for (const e of all) {
      expect(e).toBeInstanceOf(Error);
      expect(e).toBeInstanceOf(SluiceError);
      expect(e.name).toBe(e.constructor.name);
      expect(e.stack).toEqual(expect.any(String));
    }
  });

  it('ValidationError keeps its details and defaults to none', () => {
    expect(new ValidationError('bad', [{ path: 'p', message: 'm' }]).details).toEqual([{ path: 'p', message: 'm' }]);
    expect(new ValidationError('bad').details).toEqual([]);
    expect(new ValidationError('bad').code).toBe('validation_failed');
  });

  it('UnavailableError has the code of HTTP 503 and keeps its message', () => {
    const e = new UnavailableError('audit backlog over its bound');
    expect(e.code).toBe('unavailable');
    expect(e.message).toBe('audit backlog over its bound');
  });
});
