import { isUnavailable, mapError } from './error-envelope';

/** A reply error as ioredis hands it over (its ReplyError class; ioredis itself is only imported in src/redis). */
const reply = (message: string) => Object.assign(new Error(message), { name: 'ReplyError' });

describe('a Redis Cluster failing over answers 503, not 500', () => {
  it.each([
    ['CLUSTERDOWN The cluster is down', reply('CLUSTERDOWN The cluster is down')],
    ['CLUSTERDOWN Hash slot not served', reply('CLUSTERDOWN Hash slot not served')],
    ['MOVED (reached the caller)', reply('MOVED 4088 127.0.0.1:7306')],
    ['ASK', reply('ASK 4088 127.0.0.1:7306')],
    ['TRYAGAIN', reply('TRYAGAIN Multiple keys request during rehashing of slot')],
    ['redirections exhausted', new Error('Too many Cluster redirections. Last error: ReplyError: CLUSTERDOWN The cluster is down')],
    ['no node answers CLUSTER SLOTS', new Error('Failed to refresh slots cache.')],
  ])('%s', (_what, e) => {
    expect(isUnavailable(e)).toBe(true);
    expect(mapError(e)).toMatchObject({ status: 503, code: 'unavailable', unexpected: false });
  });

  it('other Redis replies stay 500', () => {
    expect(isUnavailable(reply('ERR wrong number of arguments'))).toBe(false);
    expect(isUnavailable(reply('WRONGTYPE Operation against a key holding the wrong kind of value'))).toBe(false);
    expect(isUnavailable(new Error('something MOVED somewhere'))).toBe(false);
  });
});

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
    expect(isUnavailable(reply(msg))).toBe(true);
    const m = mapError(reply(msg));
    expect(m.status).toBe(503);
    expect(m.code).toBe('unavailable');
  });

  it.each(['ERR wrong number of arguments', 'WRONGTYPE Operation against a key holding the wrong kind of value', 'NOSCRIPT No matching script'])(
    '"%s" stays an internal error',
    (msg) => {
      expect(isUnavailable(reply(msg))).toBe(false);
      expect(mapError(reply(msg)).status).toBe(500);
    },
  );

  it('a message that merely contains the word is not matched', () => {
    expect(isUnavailable(reply('ERR job failed: LOADING screen'))).toBe(false);
  });
});
