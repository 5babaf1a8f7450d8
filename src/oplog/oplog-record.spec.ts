import { parseRecord, storableRecord, targetValue, type OplogRecord } from './oplog-record';

describe('operator-log records hold only storable text (issue 18 #1)', () => {
  test('a target keeps NUL and lone surrogates as escape text; a pair, and plain text, stay as they are', () => {
    expect(targetValue('\u0000')).toBe('\\u0000');
    expect(targetValue('a\u0000b\ud800c\udc00d\ud83d\ude80')).toBe('a\\u0000b\\ud800c\\udc00d\ud83d\ude80');
    expect(targetValue('emails')).toBe('emails');
    expect(targetValue('x'.repeat(201))).toBeNull();
    expect(targetValue('')).toBeNull();
    expect(targetValue(42)).toBe('42');
  });

  test('storableRecord escapes every text field of a buffered record (whatever recorder version wrote it)', () => {
    const r: OplogRecord = {
      id: '0190f5a0-0000-7000-8000-000000000001',
      at: 1,
      project: 'default',
      actor: 'none',
      actorKind: 'none',
      action: 'key.revoke',
      target: 'a\u0000',
      method: 'DELETE',
      path: '/keys/:id',
      status: 400,
      address: '127.0.0.1',
      requestId: '\udc00',
    };
    const s = storableRecord(parseRecord(JSON.stringify(r))!);
    expect(s).toEqual({ ...r, target: 'a\\u0000', requestId: '\\udc00' });
    for (const v of Object.values(s)) {
      if (typeof v === 'string') expect([v, v.includes('\u0000') || !(v as string & { isWellFormed(): boolean }).isWellFormed()]).toEqual([v, false]);
    }
  });
});
