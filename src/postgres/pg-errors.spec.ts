import { batchFault, escapedText, logSafeMessage, sqlState, storableText } from './pg-errors';

/** An error as node-postgres makes one from PostgreSQL's ErrorResponse. */
const pgError = (code: string, message = 'x') => Object.assign(new Error(message), { code, severity: 'ERROR' });

describe('batchFault', () => {
  it('takes data exceptions, integrity and limit violations, type errors as the data', () => {
    for (const code of ['22008', '22003', '22P02', '22021', '23502', '23505', '23514', '21000', '54000', '42804', '42P18']) expect([code, batchFault(pgError(code))]).toEqual([code, 'data']);
  });

  it('never takes PostgreSQL down, busy or misconfigured as the data', () => {
    const socket = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED', errno: -111 });
    const epipe = Object.assign(new Error('write EPIPE'), { code: 'EPIPE' }); // five capitals, but not from PostgreSQL
    const timeout = new Error('Connection terminated due to connection timeout');
    expect([socket, epipe, timeout, new Error('Connection terminated unexpectedly'), null, undefined, 'x'].map(batchFault)).toEqual(Array(7).fill('unavailable'));
    for (const code of ['57P01', '57P02', '57P03', '57014', '08006', '08P01', '53100', '53200', '53300', '40001', '40P01', '55P03', '58030', '25P02', '28P01', '3D000', '42P01', '42703', '42501', 'XX001', 'XX002']) {
      expect([code, batchFault(pgError(code))]).toEqual([code, 'unavailable']);
    }
  });

  it('leaves other SQLSTATEs unclassified', () => {
    for (const code of ['XX000', 'P0001', '0A000', '38001']) expect(batchFault(pgError(code))).toBe('unknown');
    expect(sqlState(pgError('22008'))).toBe('22008');
    expect(sqlState({ code: '22008' })).toBeNull(); // no severity: not PostgreSQL's
  });
});

describe('logSafeMessage', () => {
  it('drops the values PostgreSQL quotes, and what follows a colon', () => {
    expect(logSafeMessage('invalid input syntax for type uuid: "SECRET"')).toBe('invalid input syntax for type uuid');
    expect(logSafeMessage('value "99999999999" is out of range for type integer')).toBe('value "…" is out of range for type integer');
    expect(logSafeMessage('timestamp out of range: "1e+16"')).toBe('timestamp out of range');
    expect(logSafeMessage(`unterminated "SECRET`)).not.toContain('SECRET');
    expect(logSafeMessage('x'.repeat(1000))).toHaveLength(200);
  });
});

describe('storableText', () => {
  it('replaces NUL and lone surrogates, keeps pairs', () => {
    expect(storableText('a\u0000b\ud800c\udc00d\ud83d\ude80')).toBe('a\ufffdb\ufffdc\ufffdd\ud83d\ude80');
    expect(storableText('plain')).toBe('plain');
  });
});

describe('escapedText', () => {
  it('writes NUL and lone surrogates as their JSON escape text, keeps pairs and everything else', () => {
    expect(escapedText('a\u0000b\ud800c\udc00d\ud83d\ude80')).toBe('a\\u0000b\\ud800c\\udc00d\ud83d\ude80');
    expect(escapedText('plain \\u0000 text')).toBe('plain \\u0000 text');
  });
});
