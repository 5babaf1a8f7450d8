import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConsoleAssets } from './console-assets';

describe('ConsoleAssets (the /ui/ files)', () => {
  let base: string;
  let dir: string;
  beforeEach(() => {
    base = mkdtempSync(join(tmpdir(), 'console-'));
    dir = join(base, 'console');
    mkdirSync(dir);
  });
  afterEach(() => rmSync(base, { recursive: true, force: true }));

  function build(): void {
    mkdirSync(join(dir, 'assets'));
    writeFileSync(join(dir, 'index.html'), '<!doctype html><script type="module" src="/ui/assets/index-abc123.js"></script>');
    writeFileSync(join(dir, 'assets', 'index-abc123.js'), 'console.log(1)');
    writeFileSync(join(dir, 'assets', 'index-abc123.css'), 'body{}');
    writeFileSync(join(base, 'secret.txt'), 'not served');
  }

  it('serves hashed assets immutable for a year, and index.html for every view path (SPA fallback), never cached', () => {
    build();
    const a = new ConsoleAssets(dir);
    expect(a.lookup('assets/index-abc123.js')).toMatchObject({ contentType: 'text/javascript; charset=utf-8', cacheControl: 'public, max-age=31536000, immutable' });
    expect(a.lookup('assets/index-abc123.css')?.contentType).toBe('text/css; charset=utf-8');
    for (const view of ['', 'jobs/0190f5a0-0000-7000-8000-000000000001', 'queues/emails', 'dlq', 'login', 'index.html']) {
      const f = a.lookup(view);
      expect(f?.contentType).toBe('text/html; charset=utf-8');
      expect(f?.cacheControl).toBe('no-cache');
      expect(typeof f?.body).toBe('string');
    }
  });

  it('a missing asset is a 404 (null), not HTML in place of a script; no path leaves the directory', () => {
    build();
    const a = new ConsoleAssets(dir);
    expect(a.lookup('assets/index-old999.js')).toBeNull();
    expect(a.lookup('assets/../../secret.txt')).toBeNull();
    // Outside assets/ an unknown path is a view: index.html, never the file it names.
    expect(a.lookup('../secret.txt')?.contentType).toBe('text/html; charset=utf-8');
  });

  it('not built: built() is false and nothing is served; a build made later is picked up', () => {
    const a = new ConsoleAssets(dir);
    expect(a.built()).toBe(false);
    expect(a.lookup('')).toBeNull();
    build();
    expect(a.built()).toBe(true);
    expect(a.lookup('')?.contentType).toBe('text/html; charset=utf-8');
  });
});
