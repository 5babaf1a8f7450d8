import { JOB_STATUSES, TRANSITIONS } from '../../core/job-status';
import { COUNTED_STATUSES, RESPONSE_SCHEMAS } from './schemas';

type Schema = { enum?: unknown[]; properties?: Record<string, Schema>; required?: string[] };
const schema = (name: string) => RESPONSE_SCHEMAS[name] as Schema;

describe('the statuses and events of the OpenAPI schemas are those of the core (src/core/job-status.ts)', () => {
  it('JobStatus and the from/to of a JobEvent list every status, blocked included', () => {
    expect(schema('JobStatus').enum).toEqual([...JOB_STATUSES]);
    expect(schema('JobStatus').enum).toContain('blocked');
    const event = schema('JobEvent').properties!;
    for (const k of ['from', 'to']) expect(event[k].enum).toEqual([...JOB_STATUSES, null]);
  });

  it('the event enum has every event of a transition (unblocked and blocked included), progress and purged', () => {
    const events = schema('JobEvent').properties!.event.enum;
    for (const e of new Set([...TRANSITIONS.map((t) => t.event), 'progress', 'purged'])) expect(events).toContain(e);
    expect(events).toEqual(expect.arrayContaining(['unblocked', 'blocked']));
    expect(new Set(events).size).toBe(events!.length);
  });

  it("a queue's counts are the six of API.md: blocked is not counted (yet)", () => {
    const six = ['waiting', 'delayed', 'active', 'completed', 'failed', 'cancelled'];
    expect(COUNTED_STATUSES).toEqual(six);
    expect(schema('QueueCounts').required).toEqual(six);
    expect(Object.keys(schema('QueueCounts').properties!)).toEqual(six);
  });
});
