import { Cron } from 'croner';
import { ValidationError } from './errors';
import { CronSlots, dueSlot } from './schedule-slots';
import { offsetAt, wallAt } from './schedule-zone';

const iso = (t: number | null) => (t === null ? null : new Date(t).toISOString());
const at = (s: string) => Date.parse(s);
const MIN = 60_000;

/**
 * Drives the missed-run rule the way the materializer does, with a fake
 * clock ticking every `stepMs`: returns the slots fired.
 */
function drive(slots: CronSlots, start: number, end: number, stepMs: number): number[] {
  const fired: number[] = [];
  let next = slots.nextAfter(start);
  for (let now = start; now <= end && next !== null; now += stepMs) {
    const r = dueSlot(slots, next, now);
    if (r.due !== null) fired.push(r.due);
    next = r.next;
  }
  return fired;
}

/**
 * Reference model of API.md's rules by brute force, independent of
 * schedule-zone.ts: walk every minute instant of the window, record the
 * first instant at which each wall minute occurs; a matching wall minute
 * never seen fires at the first instant whose wall time is later.
 */
function referenceSlots(cron: string, tz: string, from: number, to: number): number[] {
  const matcher = new Cron(cron, { utcOffset: 0, paused: true });
  const wallOf = (t: number) => {
    const p = Object.fromEntries(
      new Intl.DateTimeFormat('en-US', { timeZone: tz, hourCycle: 'h23', year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric' })
        .formatToParts(new Date(t))
        .map((x) => [x.type, x.value]),
    );
    return Date.UTC(+p.year, +p.month - 1, +p.day, +p.hour, +p.minute);
  };
  const firstAt = new Map<number, number>();
  const seq: [number, number][] = [];
  for (let t = from - 2 * 3_600_000; t <= to + 2 * 3_600_000; t += MIN) {
    const w = wallOf(t);
    if (!firstAt.has(w)) firstAt.set(w, t);
    seq.push([t, w]);
  }
  const walls = [...firstAt.keys()];
  const lo = Math.min(...walls);
  const hi = Math.max(...walls);
  const out = new Set<number>();
  for (let w = lo; w <= hi; w += MIN) {
    if (!matcher.match(new Date(w))) continue;
    const t = firstAt.get(w) ?? seq.find(([, sw]) => sw > w)?.[0];
    if (t !== undefined && t > from && t <= to) out.add(t);
  }
  return [...out].sort((a, b) => a - b);
}

describe('CronSlots.compile', () => {
  it('names the cron field for a bad expression and the timezone field for a bad zone', () => {
    for (const cron of ['61 * * * *', '* * *', '* * * * * * *', '@daily', '', 'every day', '0 0 31 2 *']) {
      let err: unknown;
      try {
        CronSlots.compile({ cron, timezone: 'UTC' });
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ValidationError);
      expect((err as ValidationError).details.map((d) => d.path)).toEqual(['cron']);
    }
    for (const timezone of ['Mars/Olympus', '', '+05:30', 'UTC+1']) {
      expect(() => CronSlots.compile({ cron: '* * * * *', timezone })).toThrow(ValidationError);
      try {
        CronSlots.compile({ cron: '* * * * *', timezone });
      } catch (e) {
        expect((e as ValidationError).details).toEqual([expect.objectContaining({ path: 'timezone' })]);
      }
    }
  });

  it('accepts 5 and 6 fields and IANA zones', () => {
    expect(CronSlots.compile({ cron: '*/5 * * * *', timezone: 'Europe/Berlin' }).cron).toBe('*/5 * * * *');
    expect(CronSlots.compile({ cron: '*/10 * * * * *', timezone: 'UTC' }).nextAfter(at('2024-01-01T00:00:00Z'))).toBe(at('2024-01-01T00:00:10Z'));
  });
});

describe('C14: cron across DST (America/New_York)', () => {
  const ny = (cron: string) => CronSlots.compile({ cron, timezone: 'America/New_York' });

  it('spring-forward: 30 2 * * * fires once at 03:00 EDT on 2024-03-10, once per day around it', () => {
    const fired = drive(ny('30 2 * * *'), at('2024-03-08T12:00:00Z'), at('2024-03-12T12:00:00Z'), MIN);
    expect(fired.map(iso)).toEqual([
      '2024-03-09T07:30:00.000Z', // 02:30 EST
      '2024-03-10T07:00:00.000Z', // 02:30 does not exist: 03:00 EDT
      '2024-03-11T06:30:00.000Z', // 02:30 EDT
      '2024-03-12T06:30:00.000Z',
    ]);
  });

  it('spring-forward: 30 1 * * * is untouched', () => {
    const fired = drive(ny('30 1 * * *'), at('2024-03-09T12:00:00Z'), at('2024-03-11T12:00:00Z'), MIN);
    expect(fired.map(iso)).toEqual(['2024-03-10T06:30:00.000Z', '2024-03-11T05:30:00.000Z']);
  });

  it('fall-back: 30 1 * * * fires only at the first 01:30 (EDT) on 2024-11-03', () => {
    const fired = drive(ny('30 1 * * *'), at('2024-11-01T12:00:00Z'), at('2024-11-05T12:00:00Z'), MIN);
    expect(fired.map(iso)).toEqual([
      '2024-11-02T05:30:00.000Z',
      '2024-11-03T05:30:00.000Z', // 01:30 EDT; 01:30 EST (06:30Z) does not fire
      '2024-11-04T06:30:00.000Z',
      '2024-11-05T06:30:00.000Z',
    ]);
  });

  it('fall-back: 30 2 * * * is untouched', () => {
    const fired = drive(ny('30 2 * * *'), at('2024-11-02T12:00:00Z'), at('2024-11-04T12:00:00Z'), MIN);
    expect(fired.map(iso)).toEqual(['2024-11-03T07:30:00.000Z', '2024-11-04T07:30:00.000Z']);
  });

  it('a clock ticking every second across both days gives the same runs', () => {
    for (const [cron, start] of [
      ['30 2 * * *', '2024-03-10T04:00:00Z'],
      ['30 1 * * *', '2024-11-03T04:00:00Z'],
    ]) {
      const fired = drive(ny(cron), at(start), at(start) + 6 * 3_600_000, 1000);
      expect(fired).toHaveLength(1);
    }
  });

  it('nextAfter from inside the repeated hour skips the second occurrence', () => {
    const s = ny('30 1 * * *');
    expect(iso(s.nextAfter(at('2024-11-03T06:00:00Z')))).toBe('2024-11-04T06:30:00.000Z'); // 01:00 EST
    expect(iso(s.latestAtOrBefore(at('2024-11-03T06:45:00Z')))).toBe('2024-11-03T05:30:00.000Z'); // 01:45 EST
  });
});

describe('Asia/Kolkata (UTC+05:30, no DST)', () => {
  it('0 9 * * 1-5 fires at 03:30 UTC on weekdays only', () => {
    const s = CronSlots.compile({ cron: '0 9 * * 1-5', timezone: 'Asia/Kolkata' });
    // 2024-03-08 is a Friday.
    expect(s.preview(at('2024-03-08T00:00:00Z'), 4).map(iso)).toEqual([
      '2024-03-08T03:30:00.000Z',
      '2024-03-11T03:30:00.000Z',
      '2024-03-12T03:30:00.000Z',
      '2024-03-13T03:30:00.000Z',
    ]);
  });
});

describe('agreement with a brute-force model of the rules', () => {
  const cases: [string, string, string][] = [
    ['*/15 * * * *', 'America/New_York', '2024-03-10T04:00:00Z'],
    ['*/15 * * * *', 'America/New_York', '2024-11-03T03:00:00Z'],
    ['0,30 * * * *', 'Europe/London', '2024-10-27T00:00:00Z'],
    ['*/10 * * * *', 'Australia/Lord_Howe', '2024-04-06T13:00:00Z'], // 30-minute fall-back
    ['*/10 * * * *', 'Australia/Lord_Howe', '2024-10-05T14:00:00Z'], // 30-minute spring-forward
    ['0 0 * * *', 'America/Santiago', '2024-09-07T00:00:00Z'], // midnight does not exist
    ['5 2,3 * * *', 'Europe/Berlin', '2024-03-30T12:00:00Z'],
    ['0 9 * * *', 'Pacific/Apia', '2011-12-28T12:00:00Z'], // 2011-12-30 skipped entirely
  ];
  it.each(cases)('%s in %s around %s', (cron, tz, start) => {
    const from = at(start);
    const to = from + 2 * 86_400_000;
    const s = CronSlots.compile({ cron, timezone: tz });
    const got: number[] = [];
    for (let t = s.nextAfter(from); t !== null && t <= to; t = s.nextAfter(t)) got.push(t);
    expect(got.map(iso)).toEqual(referenceSlots(cron, tz, from, to).map(iso));
    // From any instant (also inside a repeated or skipped hour): the next
    // slot is the first reference slot after it, the latest the last one at or before.
    const ref = referenceSlots(cron, tz, from - 86_400_000, to + 86_400_000);
    for (let t = from; t <= to; t += 7 * MIN + 13_000) {
      expect([iso(t), iso(s.nextAfter(t))]).toEqual([iso(t), iso(ref.find((r) => r > t) ?? null)]);
      expect([iso(t), iso(s.latestAtOrBefore(t))]).toEqual([iso(t), iso(ref.filter((r) => r <= t).pop() ?? null)]);
    }
  });
});

describe('missed runs and early timers', () => {
  const s = CronSlots.compile({ cron: '* * * * *', timezone: 'UTC' });

  it('5 minutes without a scheduler: one run, for the newest missed slot; next computed from now', () => {
    const nextRunAt = at('2024-05-01T10:01:00Z');
    const now = at('2024-05-01T10:06:30Z');
    expect(dueSlot(s, nextRunAt, now)).toEqual({ due: at('2024-05-01T10:06:00Z'), next: at('2024-05-01T10:07:00Z') });
  });

  it('a timer a few ms early fires nothing; on time it fires once; just after, nothing more', () => {
    const slot = at('2024-05-01T10:01:00Z');
    expect(dueSlot(s, slot, slot - 3)).toEqual({ due: null, next: slot });
    const onTime = dueSlot(s, slot, slot);
    expect(onTime).toEqual({ due: slot, next: slot + MIN });
    expect(dueSlot(s, onTime.next as number, slot + 5).due).toBeNull();
  });
});

describe('independence from the process TZ', () => {
  it('wall/offset arithmetic uses only Intl', () => {
    // Kolkata is +05:30 whatever the host zone.
    expect(offsetAt('Asia/Kolkata', at('2024-01-01T00:00:00Z'))).toBe(19_800_000);
    expect(wallAt('America/New_York', at('2024-11-03T06:30:00Z'))).toBe(Date.UTC(2024, 10, 3, 1, 30));
  });
});
