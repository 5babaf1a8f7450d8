import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { JOB_HANDLER_METADATA } from './job-handler.decorator';

type Ctor = new (...args: any[]) => unknown;

/**
 * Finds handler classes by file name, so adding a job type is one file:
 * every `*.handler.js` (or `.ts` under ts-jest) below `dir` is required and
 * each exported class carrying @JobHandler metadata is returned. Files under
 * a `diagnostic/` folder are included only when `diagnostics` is true.
 */
export function discoverHandlerClasses(dir: string, diagnostics: boolean): Ctor[] {
  const out: Ctor[] = [];
  const walk = (d: string) => {
    for (const name of readdirSync(d).sort()) {
      const path = join(d, name);
      if (statSync(path).isDirectory()) {
        if (name === 'diagnostic' && !diagnostics) continue;
        walk(path);
      } else if (/\.handler\.(js|ts)$/.test(name) && !name.endsWith('.d.ts')) {
        // Dynamic by design: handler files are found at run time, not imported.
        // eslint-disable-next-line @typescript-eslint/no-require-imports
        const mod = require(path) as Record<string, unknown>;
        for (const value of Object.values(mod)) {
          if (typeof value === 'function' && Reflect.getMetadata?.(JOB_HANDLER_METADATA, value)) out.push(value as Ctor);
        }
      }
    }
  };
  walk(dir);
  return out;
}
