import { ValidationError } from '../core/errors';
import { decodeIdCursor, encodeIdCursor, isUtcMicros } from './common';
import { decodeDlqCursor, encodeDlqCursor } from './list-dlq';

const ID = '01890a5d-ac96-774b-b2d8-3d5bbd4a1a5e';
const dlq = (s: string) => Buffer.from(s, 'utf8').toString('base64url');

describe('cursors are validated in full', () => {
  it('isUtcMicros takes real times only', () => {
    for (const ok of ['2026-12-01T10:00:00.000000Z', '2024-02-29T23:59:59.999999Z', '0001-01-01T00:00:00.000000Z', '9999-12-31T23:59:59.999999Z']) expect(isUtcMicros(ok)).toBe(true);
    for (const bad of ['2026-13-01T00:00:00.000000Z', '2026-00-10T00:00:00.000000Z', '2026-02-29T00:00:00.000000Z', '2026-04-31T00:00:00.000000Z', '2026-01-00T00:00:00.000000Z',
      '2026-01-01T24:00:00.000000Z', '2026-01-01T23:60:00.000000Z', '2026-12-31T23:59:60.000000Z', '0000-01-01T00:00:00.000000Z', '2026-01-01T00:00:00.000Z', '2026-01-01 00:00:00.000000Z']) {
      expect(isUtcMicros(bad)).toBe(false);
    }
  });

  it('a DLQ cursor round-trips; a tampered one that looks like a date is a 400', () => {
    const k = { failedAt: '2026-12-01T10:00:00.123456Z', jobId: ID };
    expect(decodeDlqCursor(encodeDlqCursor(k))).toEqual(k);
    for (const c of [dlq(`2026-13-45T99:99:99.000000Z|${ID}`), dlq(`2026-02-30T00:00:00.000000Z|${ID}`), dlq(`2026-12-01T10:00:00.123456Z|not-a-uuid`), dlq(`2026-12-01T10:00:00.123456Z|${ID}|x`), `${encodeDlqCursor(k)}=`, '']) {
      expect(() => decodeDlqCursor(c)).toThrow(ValidationError);
    }
  });

  it('an id cursor round-trips; a non-canonical spelling of the same bytes is refused', () => {
    const c = encodeIdCursor(ID);
    expect(decodeIdCursor(c)).toBe(ID);
    // The last base64url character carries 2 spare bits: set one of them.
    const last = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const tampered = c.slice(0, 21) + last[last.indexOf(c[21]) ^ 1];
    expect(() => decodeIdCursor(tampered)).toThrow(ValidationError);
    expect(() => decodeIdCursor('x'.repeat(23))).toThrow(ValidationError);
  });
});
