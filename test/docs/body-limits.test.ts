/**
 * The body limits the documents state are the ones the code applies (the
 * third probe found docs/guarantees.md saying max(8 MiB, ...) while the code
 * read 64 MiB): docs/guarantees.md "Request bodies" per route against
 * bodyLimitBytes (src/server/body-limits.ts) with the default configuration,
 * and the configuration table's defaults and ranges against loadConfig and
 * ENV_BOUNDS. Plain fs, no service is touched.
 */
import * as fs from 'fs';
import * as path from 'path';
import { BODY_ENVELOPE_BYTES, ENV_BOUNDS, loadConfig } from '../../src/config/config';
import { bodyLimitBytes } from '../../src/server/body-limits';

const DOCS = path.resolve(__dirname, '..', '..', 'docs');
const read = (f: string) => fs.readFileSync(path.join(DOCS, f), 'utf8');

/** The cells of the Markdown table rows of `section` (from its heading to the next). */
function tableRows(text: string, heading: string): string[][] {
  // In `\n` + text the heading's line starts at `at` + 1, so at `at` in text.
  const at = `\n${text}`.indexOf(`\n${heading}\n`);
  if (at < 0) throw new Error(`no heading "${heading}"`);
  const rest = text.slice(at + heading.length + 1);
  const end = rest.search(/\n#{1,3} /);
  return (end < 0 ? rest : rest.slice(0, end))
    .split('\n')
    .filter((l) => /^\|/.test(l) && !/^\|[-| ]+\|$/.test(l))
    .slice(1)
    .map((l) => l.split('|').slice(1, -1).map((c) => c.trim()));
}

const num = (s: string) => Number(/(\d+) bytes/.exec(s)?.[1] ?? NaN);

describe('docs/guarantees.md "Request bodies" states the limits the code applies', () => {
  const config = loadConfig({});
  const rows = tableRows(read('guarantees.md'), '### Request bodies');

  it('many-job routes: MAX_REQUEST_BYTES, with its default', () => {
    const row = rows.find((r) => r[0].includes('POST /flows'))!;
    expect(row[0]).toBe('`POST /jobs/batch`, `POST /flows`');
    expect(row[1]).toBe('`MAX_REQUEST_BYTES`');
    expect(num(row[2])).toBe(config.maxRequestBytes);
    for (const url of ['/jobs/batch', '/flows']) expect(bodyLimitBytes(config, url)).toBe(num(row[2]));
    expect(bodyLimitBytes({ ...config, maxRequestBytes: 2_000_000 }, '/flows')).toBe(2_000_000);
  });

  it('every other route: MAX_PAYLOAD_BYTES plus the envelope, with its default', () => {
    const row = rows.find((r) => r[0].startsWith('every other route'))!;
    expect(row[1]).toBe(`\`MAX_PAYLOAD_BYTES\` + ${BODY_ENVELOPE_BYTES}`);
    expect(num(row[2])).toBe(config.maxPayloadBytes + BODY_ENVELOPE_BYTES);
    for (const url of ['/jobs', '/queues/q', '/jobs/0193a6f4-1c2b-7d3e-8f40-5a6b7c8d9e0f/complete', '/schedules', '/flows/x']) {
      expect(bodyLimitBytes(config, url)).toBe(num(row[2]));
    }
    expect(bodyLimitBytes({ ...config, maxPayloadBytes: 1000 }, '/jobs')).toBe(1000 + BODY_ENVELOPE_BYTES);
  });

  it('names the in-flight bound with its default', () => {
    const text = read('guarantees.md');
    expect(text).toContain(`\`MAX_INFLIGHT_BODY_BYTES\` (default ${config.maxInflightBodyBytes}, 256 MiB)`);
    expect(config.maxInflightBodyBytes).toBe(256 * 1_048_576);
  });
});

describe('docs/configuration.md gives the body variables their defaults and ranges', () => {
  const config = loadConfig({});
  const rows = tableRows(read('configuration.md'), '# Configuration');
  const row = (name: string) => rows.find((r) => r[0] === `\`${name}\``)!;

  it.each([
    ['MAX_REQUEST_BYTES', config.maxRequestBytes],
    ['MAX_INFLIGHT_BODY_BYTES', config.maxInflightBodyBytes],
    ['MAX_PAYLOAD_BYTES', config.maxPayloadBytes],
  ] as const)('%s', (name, def) => {
    const [, d, range] = row(name);
    expect(Number(/^\d+/.exec(d)?.[0])).toBe(def);
    const [min, max] = ENV_BOUNDS[name];
    expect(range.startsWith(`${min}..${max}`)).toBe(true);
  });
});
