import { describe, expect, it } from 'vitest';
import type { Flow } from '../../api/types';
import { countsText, dependentsOf, flowLines } from './flow-graph';

const counts = { waiting: 0, delayed: 0, active: 0, completed: 0, failed: 0, cancelled: 0, blocked: 0 };
const flow = (jobs: { ref: string | null; id: string; dependsOn: string[] }[]): Flow => ({ flowId: 'f', status: 'running', counts, jobs: jobs.map((j) => ({ ...j, status: 'blocked' })) });

describe('flow graph', () => {
  it('a diamond listed submitted leaf-first: roots first, each job below its dependencies, request order within a depth', () => {
    const f = flow([
      { ref: 'd', id: 'id-d', dependsOn: ['id-b', 'id-c'] },
      { ref: 'c', id: 'id-c', dependsOn: ['id-a'] },
      { ref: 'b', id: 'id-b', dependsOn: ['id-a'] },
      { ref: 'a', id: 'id-a', dependsOn: [] },
    ]);
    expect(flowLines(f).map((l) => [l.job.ref, l.depth, l.waitsFor.join()])).toEqual([
      ['a', 0, ''],
      ['c', 1, 'a'],
      ['b', 1, 'a'],
      ['d', 2, 'b,c'],
    ]);
    expect(dependentsOf(f, 'id-a').map((j) => j.ref)).toEqual(['c', 'b']);
    expect(dependentsOf(f, 'id-d')).toEqual([]);
  });

  it('depth is the longest chain above a job', () => {
    const f = flow([
      { ref: 'a', id: '1', dependsOn: [] },
      { ref: 'b', id: '2', dependsOn: ['1'] },
      { ref: 'c', id: '3', dependsOn: ['1', '2'] },
    ]);
    expect(flowLines(f).map((l) => l.depth)).toEqual([0, 1, 2]);
  });

  it('an unknown dependency is ignored (named by its id), a cycle ends the list instead of looping', () => {
    const f = flow([
      { ref: 'x', id: '1', dependsOn: ['2'] },
      { ref: 'y', id: '2', dependsOn: ['1'] },
      { ref: null, id: '0190f5a0-0000-7000-8000-000000000009', dependsOn: ['0190f5a0-0000-7000-8000-0000000000ff'] },
    ]);
    expect(flowLines(f).map((l) => [l.job.ref, l.depth, l.waitsFor.join()])).toEqual([
      [null, 0, '0000000000ff'],
      ['x', 0, 'y'],
      ['y', 0, 'x'],
    ]);
  });

  it('a chain of 10,000 jobs (the engine\'s most per record) is ordered at once', () => {
    const jobs = Array.from({ length: 10_000 }, (_, i) => ({ ref: `j${i}`, id: `id${i}`, dependsOn: i ? [`id${i - 1}`] : [] })).reverse();
    const t = performance.now();
    const lines = flowLines(flow(jobs));
    expect(performance.now() - t).toBeLessThan(500);
    expect(lines[0].job.ref).toBe('j0');
    expect(lines[9_999]).toMatchObject({ depth: 9_999, waitsFor: ['j9998'] });
  });

  it('counts in status order, zeros left out, thousands separated', () => {
    expect(countsText({ ...counts, completed: 1200, blocked: 2 }, ['waiting', 'completed', 'blocked'])).toBe('1,200 completed · 2 blocked');
    expect(countsText(counts, ['waiting'])).toBe('no jobs');
  });
});
