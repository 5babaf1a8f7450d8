import { isUnavailable, mapError } from './error-envelope';

/** An ioredis error reply as it reaches the HTTP layer (its class is named ReplyError). */
function replyError(message: string): Error {
  const e = new Error(message);
  e.name = 'ReplyError';
  return e;
}

describe('Redis error replies', () => {
  it.each([
    'NOREPLICAS Not enough good replicas to write.',
    "READONLY You can't write against a read only replica.",
    'LOADING Redis is loading the dataset in memory',
    'MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to no.',
    'CLUSTERDOWN The cluster is down',
    'TRYAGAIN Multiple keys request during rehashing of slot',
    'MISCONF Redis is configured to save RDB snapshots, but it is currently not able to persist on disk.',
    'BUSY Redis is busy running a script.',
    "OOM command not allowed when used memory > 'maxmemory'.",
  ])('"%s" is 503 unavailable', (msg) => {
    expect(isUnavailable(replyError(msg))).toBe(true);
    const m = mapError(replyError(msg));
    expect(m.status).toBe(503);
    expect(m.code).toBe('unavailable');
  });

  it.each(['ERR wrong number of arguments', 'WRONGTYPE Operation against a key holding the wrong kind of value', 'NOSCRIPT No matching script'])(
    '"%s" stays an internal error',
    (msg) => {
      expect(isUnavailable(replyError(msg))).toBe(false);
      expect(mapError(replyError(msg)).status).toBe(500);
    },
  );

  it('a message that merely contains the word is not matched', () => {
    expect(isUnavailable(replyError('ERR job failed: LOADING screen'))).toBe(false);
  });
});
