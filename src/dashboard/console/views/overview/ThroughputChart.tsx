import { lazy, Suspense, useState } from 'react';
import { QueryState } from '../../components/bits';
import { RANGES, useThroughput, type RangeName } from '../../hooks/dashboard';

/**
 * The bars (recharts, most of the console's script) load on their own after
 * the first paint: a view's data shows without waiting for the chart library
 * (docs/benchmarks.md, "Console: first useful paint").
 */
const ThroughputBars = lazy(() => import('./ThroughputBars'));

/**
 * Completed and failed jobs per step over 1 h / 24 h / 7 d (`GET /dashboard/metrics`), with the totals as text.
 * `defer`: fetch the series but draw no bars yet (the view's main content is still loading; the chart waits for it).
 */
export function ThroughputChart({ queue, defer = false }: { queue?: string; defer?: boolean }) {
  const [range, setRange] = useState<RangeName>('1h');
  const q = useThroughput(range, queue);
  const series = q.data?.series ?? [];
  const total = series.reduce((a, p) => ({ completed: a.completed + p.completed, failed: a.failed + p.failed }), { completed: 0, failed: 0 });
  return (
    <div>
      <div className="row" role="group" aria-label="Chart range">
        {(Object.keys(RANGES) as RangeName[]).map((r) => (
          <button key={r} type="button" aria-pressed={r === range} onClick={() => setRange(r)}>
            {r}
          </button>
        ))}
      </div>
      <QueryState q={q} what="throughput" />
      {q.data && (
        <>
          <p>
            Last {range}: <strong>{total.completed}</strong> completed, <strong>{total.failed}</strong> failed (per {RANGES[range].stepMs / 60000} min step).
          </p>
          <div className="chart" role="img" aria-label={`Completed and failed jobs per step over the last ${range}: ${total.completed} completed, ${total.failed} failed`}>
            {defer ? (
              <div className="chart-placeholder" />
            ) : (
              <Suspense fallback={<div className="chart-placeholder" />}>
                <ThroughputBars series={series} range={range} />
              </Suspense>
            )}
          </div>
        </>
      )}
    </div>
  );
}
