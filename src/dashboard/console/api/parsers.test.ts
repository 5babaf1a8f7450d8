import { describe, expect, it } from 'vitest';
import { parseJsonObject } from '../components/Json';
import { cronInWords } from '../views/schedules/ScheduleForm';
import { parseOldestAge } from './dashboard';

describe('small parsers', () => {
  it('queue latency from Prometheus text (seconds → ms, per queue label)', () => {
    const text = ['# HELP x', 'sluice_queue_oldest_waiting_age_seconds{queue="emails"} 12.5', 'sluice_queue_oldest_waiting_age_seconds{project="p",queue="b"} 0', 'sluice_queue_jobs{queue="emails",state="waiting"} 3'].join('\n');
    expect(parseOldestAge(text)).toEqual({ emails: 12500, b: 0 });
  });
  it('a payload must be a JSON object; a syntax error names line and column', () => {
    expect(parseJsonObject('{"a":1}')).toEqual({ value: { a: 1 } });
    expect(parseJsonObject('[1]')).toEqual({ error: 'the payload must be a JSON object ({…})' });
    const bad = parseJsonObject('{\n  "a": ,\n}');
    expect('error' in bad && bad.error).toMatch(/line 2, column 8|Unexpected/);
  });
  it('cron in words, or why not', () => {
    expect(cronInWords('0 2 * * 1')).toEqual({ text: expect.stringMatching(/02:00.*Monday/) });
    expect('error' in cronInWords('not a cron')).toBe(true);
  });
});
