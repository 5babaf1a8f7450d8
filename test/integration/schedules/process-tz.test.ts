import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';

const SLOTS_JS = resolve(__dirname, '../../../dist/core/schedule-slots.js');

/**
 * Evaluates schedules in a child `node` with the given process TZ, on the
 * build (dist/). Returns the slots each expression yields, as ISO strings.
 */
function slotsUnder(tz: string): Record<string, string[]> {
  const script = `
    const { CronSlots } = require(${JSON.stringify(SLOTS_JS)});
    const cases = [
      ['30 2 * * *', 'America/New_York', '2024-03-08T00:00:00Z'],
      ['30 1 * * *', 'America/New_York', '2024-11-01T00:00:00Z'],
      ['*/20 * * * *', 'America/New_York', '2024-11-03T04:30:00Z'],
      ['0 9 * * 1-5', 'Asia/Kolkata', '2024-03-08T00:00:00Z'],
      ['0 0 * * *', 'Europe/London', '2024-03-30T00:00:00Z'],
      ['15 3 * * *', 'UTC', '2024-03-30T00:00:00Z'],
    ];
    const out = { hostOffsetMin: new Date('2024-01-01T00:00:00Z').getTimezoneOffset() };
    for (const [cron, zone, from] of cases) {
      const s = CronSlots.compile({ cron, timezone: zone });
      const runs = s.preview(Date.parse(from), 8);
      out[cron + ' @ ' + zone] = runs.map((t) => new Date(t).toISOString())
        .concat([new Date(s.latestAtOrBefore(runs[7] - 1)).toISOString()]);
    }
    process.stdout.write(JSON.stringify(out));
  `;
  return JSON.parse(execFileSync(process.execPath, ['-e', script], { env: { PATH: process.env.PATH ?? '', TZ: tz }, encoding: 'utf8' }));
}

describe('schedule slots never depend on the process TZ', () => {
  beforeAll(() => {
    if (!existsSync(SLOTS_JS)) throw new Error(`${SLOTS_JS} missing: build first (npx tsc -p tsconfig.build.json)`);
  });

  it('UTC, America/Los_Angeles and Asia/Kolkata processes compute identical slots', () => {
    const [utc, la, kol] = ['UTC', 'America/Los_Angeles', 'Asia/Kolkata'].map(slotsUnder);
    // The children really ran in different zones ...
    expect([utc.hostOffsetMin, la.hostOffsetMin, kol.hostOffsetMin]).toEqual([0, 480, -330]);
    const strip = (o: Record<string, unknown>) => Object.fromEntries(Object.entries(o).filter(([k]) => k !== 'hostOffsetMin'));
    // ... and agree on every slot, which are the ones API.md defines.
    expect(strip(la)).toEqual(strip(utc));
    expect(strip(kol)).toEqual(strip(utc));
    expect(utc['30 2 * * * @ America/New_York'].slice(0, 3)).toEqual(['2024-03-08T07:30:00.000Z', '2024-03-09T07:30:00.000Z', '2024-03-10T07:00:00.000Z']);
    expect(utc['0 9 * * 1-5 @ Asia/Kolkata'][0]).toBe('2024-03-08T03:30:00.000Z');
  });
});
