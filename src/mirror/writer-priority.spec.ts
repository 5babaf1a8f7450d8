import { mayRaisePriority, RESUME_LAG_MS, WriterPriority, YIELD_LAG_MS } from './writer-priority';

describe('WriterPriority', () => {
  it('yields once the mirror is more than YIELD_LAG_MS behind and resumes under RESUME_LAG_MS, with no flapping between', () => {
    const set: number[] = [];
    const p = new WriterPriority(10, (n) => set.push(n), () => true);
    const seen = [100, YIELD_LAG_MS, YIELD_LAG_MS + 1, 5_000, 1_000, RESUME_LAG_MS, RESUME_LAG_MS - 1, 300, YIELD_LAG_MS - 1].map((lag) => p.observe(lag));
    expect(seen).toEqual([false, false, true, true, true, true, false, false, false]);
    expect(set).toEqual([10, 0]);
  });

  it('does nothing when turned off (0)', () => {
    const set: number[] = [];
    const p = new WriterPriority(0, (n) => set.push(n), () => true);
    expect([p.observe(10_000), p.observe(0)]).toEqual([false, false]);
    expect(set).toEqual([]);
  });

  it('never yields where it could not raise its priority back (no CAP_SYS_NICE, RLIMIT_NICE under 20)', () => {
    const set: number[] = [];
    const p = new WriterPriority(10, (n) => set.push(n), () => false);
    expect(p.enabled).toBe(false);
    expect([p.observe(10_000), p.observe(0)]).toEqual([false, false]);
    expect(set).toEqual([]);
  });

  it('stays yielding when raising it back fails all the same', () => {
    const set: number[] = [];
    const p = new WriterPriority(
      10,
      (n) => {
        if (n < 10) throw Object.assign(new Error('EACCES'), { code: 'EACCES' });
        set.push(n);
      },
      () => true,
    );
    expect(p.observe(3_000)).toBe(true);
    expect(p.observe(0)).toBe(true);
    expect(set).toEqual([10]);
  });

  it('mayRaisePriority reads CAP_SYS_NICE (capability 23) and RLIMIT_NICE from /proc/self', () => {
    const proc = (capEff: string, nice: string) => (f: string) =>
      f.endsWith('status') ? `Name:\tnode\nCapEff:\t${capEff}\n` : `Limit Soft Hard Units\nMax nice priority         ${nice}                    ${nice}\n`;
    expect(mayRaisePriority(proc('000001fffeffffff', '0'))).toBe(true); // root
    expect(mayRaisePriority(proc('00000000a80425fb', '0'))).toBe(false); // Docker's default set: no CAP_SYS_NICE
    expect(mayRaisePriority(proc('0000000000000000', '20'))).toBe(true);
    expect(mayRaisePriority(proc('0000000000000000', '19'))).toBe(false);
    expect(mayRaisePriority(proc('0000000000800000', '0'))).toBe(true);
    expect(mayRaisePriority(() => { throw new Error('ENOENT'); })).toBe(false);
  });
});
