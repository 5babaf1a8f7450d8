/**
 * The repository's Markdown holds together: every relative link of every
 * Markdown file points at a file that exists, and every `#anchor` (in the same
 * file or `other.md#anchor`) names a heading of its target, slugged as GitHub
 * does. README.md stays a front door (≤ 250 lines; the rest is under docs/).
 * Plain fs, no service is touched.
 */
import * as fs from 'fs';
import * as path from 'path';

const ROOT = path.resolve(__dirname, '..', '..');
const SKIP_DIRS = new Set(['node_modules', 'dist', '.git', '.data', 'coverage']);
const README_MAX_LINES = 250;

/** Every *.md file under `dir`, skipping dependency, build and VCS folders. */
export function markdownFiles(dir: string = ROOT): string[] {
  const out: string[] = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    if (entry.isDirectory()) {
      if (!SKIP_DIRS.has(entry.name)) out.push(...markdownFiles(path.join(dir, entry.name)));
    } else if (entry.isFile() && entry.name.toLowerCase().endsWith('.md')) {
      out.push(path.join(dir, entry.name));
    }
  }
  return out.sort();
}

/** The lines of `text` outside fenced code blocks (``` or ~~~), with their 1-based numbers. */
function proseLines(text: string): { line: string; n: number }[] {
  const out: { line: string; n: number }[] = [];
  let fence: string | null = null;
  text.split('\n').forEach((line, i) => {
    const m = /^ {0,3}(`{3,}|~{3,})/.exec(line);
    if (m) {
      if (fence === null) fence = m[1];
      else if (m[1][0] === fence[0] && m[1].length >= fence.length && line.trim() === m[1])
        fence = null;
      return;
    }
    if (fence === null) out.push({ line, n: i + 1 });
  });
  return out;
}

/** `line` with its inline code spans blanked out (links inside code are not links). */
function withoutCode(line: string): string {
  return line.replace(/(`+)[\s\S]*?\1/g, (m) => ' '.repeat(m.length));
}

/** GitHub's heading slug: lowercase, punctuation other than `-` and `_` dropped, each space a `-`. */
export function githubSlug(heading: string): string {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1') // a link or image: its text
    .replace(/<[^>]+>/g, ''); // inline HTML tags
  return text
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

/** The anchors a Markdown file defines: its headings' slugs (duplicates get -1, -2, …) and HTML ids/names. */
export function anchorsOf(text: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const { line } of proseLines(text)) {
    const h = /^ {0,3}#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$/.exec(line);
    if (h) {
      const base = githubSlug(h[1]);
      const count = seen.get(base) ?? 0;
      seen.set(base, count + 1);
      anchors.add(count === 0 ? base : `${base}-${count}`);
    }
    for (const m of line.matchAll(/<a\s[^>]*(?:name|id)="([^"]+)"/gi)) anchors.add(m[1]);
  }
  return anchors;
}

interface Link {
  file: string;
  line: number;
  target: string;
}

/** The relative links (inline, image and reference definitions) of a Markdown file. */
export function linksOf(file: string, text: string): Link[] {
  const links: Link[] = [];
  for (const { line, n } of proseLines(text)) {
    const prose = withoutCode(line);
    for (const m of prose.matchAll(
      /!?\[(?:[^\]\\]|\\.)*\]\(\s*(<[^>]*>|[^)\s]+)(?:\s+(?:"[^"]*"|'[^']*'))?\s*\)/g,
    )) {
      links.push({ file, line: n, target: m[1].replace(/^<|>$/g, '') });
    }
    const def = /^ {0,3}\[[^\]]+\]:\s*(\S+)/.exec(prose);
    if (def) links.push({ file, line: n, target: def[1].replace(/^<|>$/g, '') });
  }
  // Absolute URLs (http:, mailto:, …) are not checked.
  return links.filter((l) => !/^[a-z][a-z0-9+.-]*:/i.test(l.target));
}

/** What is wrong with each broken link of `files`, as `file:line: target — reason`. */
export function brokenLinks(files: string[]): string[] {
  const anchorCache = new Map<string, Set<string>>();
  const anchors = (file: string): Set<string> => {
    let set = anchorCache.get(file);
    if (!set) anchorCache.set(file, (set = anchorsOf(fs.readFileSync(file, 'utf8'))));
    return set;
  };
  const problems: string[] = [];
  for (const file of files) {
    for (const link of linksOf(file, fs.readFileSync(file, 'utf8'))) {
      const hashAt = link.target.indexOf('#');
      const rawPath = hashAt === -1 ? link.target : link.target.slice(0, hashAt);
      const anchor = hashAt === -1 ? null : decodeURIComponent(link.target.slice(hashAt + 1));
      const pathPart = decodeURIComponent(rawPath.split('?')[0]);
      const target =
        pathPart === ''
          ? file
          : pathPart.startsWith('/')
            ? path.join(ROOT, pathPart)
            : path.resolve(path.dirname(file), pathPart);
      const where = `${path.relative(ROOT, link.file)}:${link.line}: ${link.target}`;
      if (!fs.existsSync(target)) {
        problems.push(`${where} — ${path.relative(ROOT, target)} does not exist`);
        continue;
      }
      if (
        anchor !== null &&
        anchor !== '' &&
        target.toLowerCase().endsWith('.md') &&
        fs.statSync(target).isFile()
      ) {
        if (!anchors(target).has(anchor))
          problems.push(
            `${where} — no heading with the anchor #${anchor} in ${path.relative(ROOT, target)}`,
          );
      }
    }
  }
  return problems;
}

describe('Markdown links', () => {
  const files = markdownFiles();

  it('finds the Markdown files (README.md, docs/, clients/)', () => {
    const rel = files.map((f) => path.relative(ROOT, f));
    expect(rel).toContain('README.md');
    expect(rel).toContain(path.join('docs', 'api.md'));
    expect(rel).toContain(path.join('docs', 'architecture.md'));
    expect(rel.some((f) => f.startsWith(`clients${path.sep}`))).toBe(true);
    expect(rel.some((f) => f.split(path.sep).includes('node_modules'))).toBe(false);
  });

  it('slugs headings as GitHub does', () => {
    expect(githubSlug('Built-in `http.request` handler')).toBe('built-in-httprequest-handler');
    expect(githubSlug('`GET /dashboard/metrics` — finishes per step')).toBe(
      'get-dashboardmetrics--finishes-per-step',
    );
    expect(githubSlug('Schedules (cron)')).toBe('schedules-cron');
    expect(githubSlug('Not built yet (v1.1)')).toBe('not-built-yet-v11');
    expect(githubSlug('snake_case and [a link](x.md)')).toBe('snake_case-and-a-link');
    expect([...anchorsOf('# A\n\n```sh\n# not a heading\n```\n## A\n### A\n')]).toEqual([
      'a',
      'a-1',
      'a-2',
    ]);
  });

  it('every relative link points at a file that exists, and every anchor at a heading', () => {
    expect(brokenLinks(files)).toEqual([]);
  });

  it(`README.md is a front door: at most ${README_MAX_LINES} lines`, () => {
    const lines = fs
      .readFileSync(path.join(ROOT, 'README.md'), 'utf8')
      .replace(/\n$/, '')
      .split('\n').length;
    expect(lines).toBeLessThanOrEqual(README_MAX_LINES);
  });
});
