import { useState } from 'react';
import { Bar, BarChart, CartesianGrid, Legend, ResponsiveContainer, Tooltip, XAxis, YAxis } from 'recharts';
import { QueryState } from '../../components/bits';
import { RANGES, useThroughput, type RangeName } from '../../hooks/dashboard';

const fmt = (range: RangeName) => (at: string) => {
  const d = new Date(at);
  return range === '7d' ? d.toLocaleDateString(undefined, { month: 'short', day: 'numeric' }) : d.toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' });
};

/** Completed and failed jobs per step over 1 h / 24 h / 7 d (`GET /dashboard/metrics`), with the totals as text. */
export function ThroughputChart({ queue }: { queue?: string }) {
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
            <ResponsiveContainer width="100%" height={220}>
              <BarChart data={series} margin={{ top: 8, right: 8, bottom: 0, left: -16 }}>
                <CartesianGrid strokeDasharray="3 3" stroke="var(--grid)" />
                <XAxis dataKey="at" tickFormatter={fmt(range)} stroke="var(--muted)" fontSize={12} minTickGap={24} />
                <YAxis allowDecimals={false} stroke="var(--muted)" fontSize={12} />
                <Tooltip labelFormatter={(l) => new Date(String(l)).toISOString()} contentStyle={{ background: 'var(--bg)', border: '1px solid var(--border)', color: 'var(--fg)' }} />
                <Legend />
                <Bar dataKey="completed" stackId="a" fill="var(--ok)" isAnimationActive={false} />
                <Bar dataKey="failed" stackId="a" fill="var(--bad)" isAnimationActive={false} />
              </BarChart>
            </ResponsiveContainer>
          </div>
        </>
      )}
    </div>
  );
}
