import { createHash } from 'node:crypto';
import { createRedis, RedisClient } from '../../../src/redis/connection';
import { RedisScripts } from '../../../src/redis/scripts';
import { RedisServer, startRedisServer, stopAllRedisServers } from '../../support/redis-server';

/**
 * RedisScripts.run sends one EVALSHA per call with the keys and arguments as
 * one array, on a private redis-server (its script cache is flushed here):
 * - a script listed as unpipelined (claimJobs, written at once) and one that
 *   goes through the auto-pipeline (completeJobs) both get every key and
 *   argument, in order, also when there are tens of thousands of them;
 * - after SCRIPT FLUSH (a master restarted or replaced: its cache is empty)
 *   the call still runs, once: NOSCRIPT means it did not run, and it is sent
 *   again as EVAL with the source.
 */
const ECHO = `redis.call('INCR', KEYS[1]) return {#KEYS, #ARGV, KEYS[1], ARGV[1], ARGV[#ARGV]}`;
const scripts = [
  { name: 'claimJobs', numberOfKeys: 1, source: ECHO },
  { name: 'completeJobs', numberOfKeys: 1, source: ECHO + ' -- pipelined' },
];

let server: RedisServer;
let redis: RedisClient;
let s: RedisScripts;

beforeAll(async () => {
  server = await startRedisServer({ name: 'script-calls' });
  redis = createRedis({ redisUrl: server.url, redisClusterNodes: null });
  s = new RedisScripts(redis, scripts);
});
afterAll(async () => {
  redis?.disconnect();
  await stopAllRedisServers();
});

test.each(['claimJobs', 'completeJobs'] as const)('%s: every key and argument arrives in order, 1 and 20,000 of them', async (name) => {
  expect(await s.run(name, [`k:${name}`], ['only'])).toEqual([1, 1, `k:${name}`, 'only', 'only']);
  const many = Array.from({ length: 20000 }, (_, i) => (i % 2 ? i : `a${i}`));
  expect(await s.run(name, [`k:${name}`], many)).toEqual([1, 20000, `k:${name}`, 'a0', '19999']);
  // concurrent calls (one auto-pipeline write for completeJobs) keep their own arguments
  const replies = await Promise.all(Array.from({ length: 50 }, (_, i) => s.run<unknown[]>(name, [`k:${name}`], [`x${i}`, i])));
  expect(replies.map((r) => r[3])).toEqual(Array.from({ length: 50 }, (_, i) => `x${i}`));
});

test.each(['claimJobs', 'completeJobs'] as const)('%s: runs exactly once after the script cache was flushed', async (name) => {
  const key = `once:${name}`;
  await s.run(name, [key], [1]);
  await redis.script('FLUSH');
  expect(await redis.script('EXISTS', createHash('sha1').update(scripts.find((x) => x.name === name)!.source).digest('hex'))).toEqual([0]);
  await Promise.all([s.run(name, [key], [2]), s.run(name, [key], [3])]);
  expect(await redis.get(key)).toBe('3');
  await s.run(name, [key], [4]);
  expect(await redis.get(key)).toBe('4');
});

test('a wrong key count is refused before anything is sent', () => {
  expect(() => s.run('claimJobs', ['a', 'b'], [])).toThrow('claimJobs takes 1 keys, got 2');
});
