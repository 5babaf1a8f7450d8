import { safeError, scrubMessage } from './safe-error';

describe('safeError: what of an error may be logged', () => {
  it('keeps names and codes of a pg/TypeORM error, drops parameters, query, detail, where, driverError', () => {
    const e = Object.assign(new Error('duplicate key value violates unique constraint "schedules_name_key"'), {
      name: 'QueryFailedError',
      query: 'INSERT INTO schedules VALUES ($1)',
      parameters: ['secret-1'],
      driverError: { detail: 'Key (name)=(secret-1) already exists.' },
      code: '23505',
      detail: 'Key (name)=(secret-1) already exists.',
      where: 'COPY jobs, line 1: "secret-1"',
      hint: 'secret-1',
      table: 'schedules',
      constraint: 'schedules_name_key',
      cause: Object.assign(new Error('inner "secret-1"'), { parameters: ['secret-1'] }),
    });
    const out = safeError(e) as Record<string, unknown>;
    expect(out).toMatchObject({ type: 'QueryFailedError', code: '23505', table: 'schedules', constraint: 'schedules_name_key', message: e.message });
    expect(typeof out.stack).toBe('string');
    expect(JSON.stringify(out)).not.toContain('secret-1');
  });

  it('drops the command arguments of an ioredis reply error', () => {
    const e = Object.assign(new Error('WRONGTYPE Operation against a key holding the wrong kind of value'), { name: 'ReplyError', command: { name: 'evalsha', args: ['sha', '{"p":"secret-2"}'] } });
    expect(JSON.stringify(safeError(e))).not.toContain('secret-2');
  });

  it('replaces quoted values in messages, keeps quoted names, cuts byte dumps', () => {
    expect(scrubMessage('invalid input syntax for type uuid: "secret-3"')).toBe('invalid input syntax for type uuid: "…"');
    expect(scrubMessage('value "99999999999" is out of range for type integer')).toBe('value "…" is out of range for type integer');
    expect(scrubMessage('column "payload" of relation "jobs" does not exist')).toBe('column "payload" of relation "jobs" does not exist');
    expect(scrubMessage('invalid byte sequence for encoding "UTF8": 0xed 0xa0 0x80')).toBe('invalid byte sequence for encoding "UTF8": 0x…');
    // A string logged as `err` (call sites that log e.message) is scrubbed the same way.
    expect(safeError('invalid input syntax for type json: "secret-4"')).toBe('invalid input syntax for type json: "…"');
  });
});
