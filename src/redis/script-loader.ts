import { readFileSync, readdirSync, existsSync } from 'node:fs';
import { join, resolve } from 'node:path';

/** One loaded script: its name, number of KEYS and its full source. */
export interface LoadedScript {
  name: string;
  numberOfKeys: number;
  source: string;
}

/** Thrown at boot when a script or one of its includes cannot be loaded. */
export class ScriptLoadError extends Error {}

const INCLUDE = /^@include "([A-Za-z0-9_-]+)"\s*$/;
const SCRIPT_NAME = /^([A-Za-z]+)-(\d+)\.lua$/;

/** Finds the `lua/` folder both from `src/redis` (ts-jest) and `dist/redis` (build). */
export function defaultLuaDir(): string {
  for (const dir of [resolve(__dirname, '../../lua'), resolve(process.cwd(), 'lua')]) {
    if (existsSync(dir)) return dir;
  }
  throw new ScriptLoadError('lua/ folder not found next to the build or in the working directory');
}

/**
 * Reads every `verbNoun-N.lua` in `dir` and inlines its `@include "name"`
 * lines from `dir/includes/name.lua` (each include once per script, in order).
 * @throws ScriptLoadError naming the file: bad file name, missing include.
 * Syntax errors surface when the scripts are compiled by Redis
 * (see RedisScripts.verify), also naming the file.
 */
export function loadScripts(dir = defaultLuaDir()): LoadedScript[] {
  const files = readdirSync(dir).filter((f) => f.endsWith('.lua'));
  return files.map((file) => {
    const m = SCRIPT_NAME.exec(file);
    if (!m) throw new ScriptLoadError(`lua/${file}: name must be verbNoun-<numberOfKeys>.lua`);
    const included = new Set<string>();
    const expand = (text: string, from: string): string =>
      text
        .split('\n')
        .map((line) => {
          const inc = INCLUDE.exec(line);
          if (!inc) return line;
          const name = inc[1];
          if (included.has(name)) return `-- (${name} already included)`;
          included.add(name);
          const path = join(dir, 'includes', `${name}.lua`);
          if (!existsSync(path)) throw new ScriptLoadError(`${from}: include "${name}" not found (${path})`);
          return expand(readFileSync(path, 'utf8'), `lua/includes/${name}.lua`);
        })
        .join('\n');
    const source = expand(readFileSync(join(dir, file), 'utf8'), `lua/${file}`);
    return { name: m[1], numberOfKeys: Number(m[2]), source };
  });
}
