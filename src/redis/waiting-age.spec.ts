import { oldestWaitingSince, SEQ_SPAN, WaitingReader } from './waiting-age';

/** A waiting sorted set and job hashes in memory, counting the commands sent. */
class FakeRedis implements WaitingReader {
  readonly zset: { id: string; score: number }[] = [];
  readonly hashes = new Map<string, Record<string, string>>();
  calls = { zrangebyscore: 0, hmget: 0 };

  /** Adds a waiting job as the enqueue script does: score = (100 − priority)·2^44 + seq. */
  add(id: string, priority: number, seq: number, fields: Record<string, string>): void {
    this.zset.push({ id, score: (100 - priority) * SEQ_SPAN + seq });
    this.hashes.set(`p:{q}:job:${id}`, { s: 'waiting', ...fields });
  }

  async zrangebyscore(_key: string, min: string, max: string, ws: 'WITHSCORES', limit: 'LIMIT', offset: number, count: number): Promise<string[]> {
    this.calls.zrangebyscore++;
    expect([max, ws, limit, offset, count]).toEqual(['+inf', 'WITHSCORES', 'LIMIT', 0, 1]);
    this.zset.sort((a, b) => a.score - b.score);
    const lo = min === '-inf' ? -Infinity : Number(min);
    const first = this.zset.find((e) => e.score >= lo);
    return first ? [first.id, String(first.score)] : [];
  }

  async hmget(key: string, ...fields: string[]): Promise<(string | null)[]> {
    this.calls.hmget++;
    const h = this.hashes.get(key);
    return fields.map((f) => h?.[f] ?? null);
  }
}

const KEYS = { waiting: 'p:{q}:waiting', base: 'p:{q}:' };

describe('oldestWaitingSince', () => {
  it('null when nothing waits', async () => {
    expect(await oldestWaitingSince(new FakeRedis(), KEYS)).toBeNull();
  });

  it('FIFO within one priority: the first in line, its enqueue time', async () => {
    const r = new FakeRedis();
    r.add('a', 0, 1, { ca: '1000' });
    r.add('b', 0, 2, { ca: '2000' });
    expect(await oldestWaitingSince(r, KEYS)).toBe(1000);
  });

  it('a low-priority job behind newer high-priority ones is the oldest (not the set\'s first member)', async () => {
    const r = new FakeRedis();
    r.add('old-low', -50, 1, { ca: '1000' });
    r.add('new-high', 90, 2, { ca: '5000' });
    r.add('newer-normal', 0, 3, { ca: '6000' });
    expect((await r.zrangebyscore(KEYS.waiting, '-inf', '+inf', 'WITHSCORES', 'LIMIT', 0, 1))[0]).toBe('new-high');
    expect(await oldestWaitingSince(r, KEYS)).toBe(1000);
  });

  it('counts from the last move into waiting (ua): a planned delay is not waiting', async () => {
    const r = new FakeRedis();
    // Created at 1000 with a delay, promoted at 9000; an immediate job of another priority since 4000.
    r.add('delayed', 10, 1, { ca: '1000', ra: '9000', ua: '9000' });
    r.add('plain', 0, 2, { ca: '4000' });
    expect(await oldestWaitingSince(r, KEYS)).toBe(4000);
  });

  it('skips a band head claimed between the two reads', async () => {
    const r = new FakeRedis();
    r.add('gone', 5, 1, { ca: '1000' });
    r.hashes.get('p:{q}:job:gone')!.s = 'active';
    r.add('other', 0, 2, { ca: '3000' });
    expect(await oldestWaitingSince(r, KEYS)).toBe(3000);
  });

  it('the extreme priorities -100 and 100 are both reached', async () => {
    const r = new FakeRedis();
    r.add('top', 100, 7, { ca: '7000' });
    r.add('bottom', -100, 2 ** 40, { ca: '2000' });
    expect(await oldestWaitingSince(r, KEYS)).toBe(2000);
  });

  it('work per call grows with the priorities present, not with the backlog', async () => {
    const r = new FakeRedis();
    let seq = 0;
    for (const p of [10, 0, -10]) for (let i = 0; i < 5000; i++) r.add(`j${seq}`, p, ++seq, { ca: String(1000 + seq) });
    expect(await oldestWaitingSince(r, KEYS)).toBe(1001);
    // One read per band plus the one that finds nothing after the last band; one HMGET per band head.
    expect(r.calls).toEqual({ zrangebyscore: 4, hmget: 3 });
  });
});
