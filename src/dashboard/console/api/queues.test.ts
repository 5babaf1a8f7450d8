import { describe, expect, it } from 'vitest';
import { calls, route } from '../test/fake-server';
import { removeKeyOverride, setKeyOverride } from './queues';

describe('key override requests', () => {
  it('send the key as one encoded path segment', async () => {
    route('PUT /queues/q/keys/a%2Fb%3Fc%20d', { key: 'a/b?c d' });
    route('DELETE /queues/q/keys/%25..', { key: '%..' });
    await setKeyOverride('q', 'a/b?c d', { concurrency: 2 });
    await removeKeyOverride('q', '%..');
    expect(calls.map((c) => `${c.method} ${c.url.pathname} ${c.url.search}`)).toEqual(['PUT /queues/q/keys/a%2Fb%3Fc%20d ', 'DELETE /queues/q/keys/%25.. ']);
  });

  it('refuse "", "." and "..": the URL parser would resolve the dot segment and send PUT /queues/q/', async () => {
    for (const key of ['', '.', '..']) {
      await expect(setKeyOverride('q', key, { concurrency: 1 })).rejects.toThrow(/dot segment|empty/);
      await expect(removeKeyOverride('q', key)).rejects.toThrow(/dot segment|empty/);
    }
    expect(calls).toEqual([]);
  });
});
