import { jobsJsonSlices } from './large-answer';

const text = async (answer: { jobs: unknown[] } & Record<string, unknown>) => {
  let out = '';
  for await (const s of jobsJsonSlices(answer)) out += s;
  return out;
};

describe('jobsJsonSlices', () => {
  it('writes the same bytes as JSON.stringify, jobs last', async () => {
    const jobs = Array.from({ length: 250 }, (_, i) => ({ id: `j${i}`, payload: { s: 'é\u2028"', n: i, a: [1, null, { x: -0 }] } }));
    for (const answer of [{ jobs }, { flowId: 'f', jobs }, { jobs: [] }, { flowId: 'f', jobs: [] }, { jobs: jobs.slice(0, 100) }, { jobs: jobs.slice(0, 101) }]) {
      expect(await text(answer)).toBe(JSON.stringify(answer));
    }
  });

  it('cuts slices by time (a clock 15 ms later at each read): several slices, the same bytes', async () => {
    let now = 0;
    const clock = jest.spyOn(Date, 'now').mockImplementation(() => (now += 15));
    try {
      const answer = { flowId: 'f', jobs: Array.from({ length: 5 }, (_, i) => ({ id: i })) };
      const slices: string[] = [];
      for await (const s of jobsJsonSlices(answer)) slices.push(s);
      expect(slices.length).toBeGreaterThan(3);
      expect(slices.join('')).toBe(JSON.stringify(answer));
    } finally {
      clock.mockRestore();
    }
  });
});
