import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { extname, join, relative, resolve } from 'node:path';

/** One file of the built console, ready to send. */
export interface ConsoleFile {
  body: Buffer | string;
  contentType: string;
  cacheControl: string;
}

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json',
  '.txt': 'text/plain; charset=utf-8',
  '.woff2': 'font/woff2',
};
/** Vite names what it builds under assets/ by content hash: such a name never changes meaning, so it may be cached for a year. */
const IMMUTABLE = 'public, max-age=31536000, immutable';

/** Where `npm run build` puts the console: dist/console (next to dist/dashboard when compiled; from src/ under ts-jest). */
export function defaultConsoleDir(): string {
  const candidates = [resolve(__dirname, '..', 'console'), resolve(__dirname, '..', '..', 'dist', 'console')];
  return candidates.find((d) => existsSync(join(d, 'index.html'))) ?? candidates[0];
}

/**
 * The operator console's static files (Vite's output), served under `/ui/`.
 * Files are read once into memory (the whole app is a few hundred KB) and looked
 * up by exact relative path, so no request path can reach outside the directory.
 * The listing is read again while index.html is missing, so a build made after
 * the server started is picked up.
 */
export class ConsoleAssets {
  private files: Map<string, ConsoleFile> | null = null;

  constructor(private readonly dir: string = defaultConsoleDir()) {}

  /**
   * The answer for `/ui/<path>` (path without the leading `/ui/`, no query):
   * a built file by its exact name; a missing file under `assets/` → null (404, never
   * HTML in place of a script); any other path → index.html (the SPA's router decides).
   * @returns null when nothing fits, or when the console was not built (see {@link built}).
   */
  lookup(path: string): ConsoleFile | null {
    const files = this.load();
    const hit = files.get(path);
    if (hit && path !== 'index.html') return hit;
    if (path.startsWith('assets/')) return null;
    return files.get('index.html') ?? null;
  }

  /** False when there is no build (dist/console/index.html): `npm run build` makes one. */
  built(): boolean {
    return this.load().has('index.html');
  }

  private load(): Map<string, ConsoleFile> {
    if (this.files?.has('index.html')) return this.files;
    const out = new Map<string, ConsoleFile>();
    if (existsSync(this.dir)) {
      for (const abs of walk(this.dir)) {
        const rel = relative(this.dir, abs).split('\\').join('/');
        const type = TYPES[extname(rel).toLowerCase()] ?? 'application/octet-stream';
        const html = rel === 'index.html';
        out.set(rel, {
          // index.html as a string: the CSP hook hashes a page's inline blocks from it (there are none; the policy stays 'self').
          body: html ? readFileSync(abs, 'utf8') : readFileSync(abs),
          contentType: type,
          cacheControl: rel.startsWith('assets/') ? IMMUTABLE : 'no-cache',
        });
      }
    }
    this.files = out;
    return out;
  }
}

function* walk(dir: string): Generator<string> {
  for (const name of readdirSync(dir)) {
    const abs = join(dir, name);
    if (statSync(abs).isDirectory()) yield* walk(abs);
    else yield abs;
  }
}
