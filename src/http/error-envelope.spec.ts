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
