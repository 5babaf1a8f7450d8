import { RESUME_LAG_MS, WriterPriority, YIELD_LAG_MS } from './writer-priority';

describe('WriterPriority', () => {
  it('yields once the mirror is more than YIELD_LAG_MS behind and resumes under RESUME_LAG_MS, with no flapping between', () => {
    const set: number[] = [];
    const p = new WriterPriority(10, (n) => set.push(n));
    const seen = [100, YIELD_LAG_MS, YIELD_LAG_MS + 1, 5_000, 1_000, RESUME_LAG_MS, RESUME_LAG_MS - 1, 300, YIELD_LAG_MS - 1].map((lag) => p.observe(lag));
    expect(seen).toEqual([false, false, true, true, true, true, false, false, false]);
    expect(set).toEqual([10, 0]);
  });

  it('does nothing when turned off (0)', () => {
    const set: number[] = [];
    const p = new WriterPriority(0, (n) => set.push(n));
    expect([p.observe(10_000), p.observe(0)]).toEqual([false, false]);
    expect(set).toEqual([]);
  });

  it('stays yielding when it may not raise its priority back (no CAP_SYS_NICE)', () => {
    const set: number[] = [];
    const p = new WriterPriority(10, (n) => {
      if (n < 10) throw Object.assign(new Error('EACCES'), { code: 'EACCES' });
      set.push(n);
    });
    expect(p.observe(3_000)).toBe(true);
    expect(p.observe(0)).toBe(true);
    expect(set).toEqual([10]);
  });
});
