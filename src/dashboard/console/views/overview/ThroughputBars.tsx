import { Bar, BarChart, CartesianGrid, Legend, ResponsiveContainer, Tooltip, XAxis, YAxis } from 'recharts';
import type { MetricsPoint } from '../../api/types';
import type { RangeName } from '../../hooks/dashboard';

const fmt = (range: RangeName) => (at: string) => {
  const d = new Date(at);
  return range === '7d' ? d.toLocaleDateString(undefined, { month: 'short', day: 'numeric' }) : d.toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' });
};

/** Stacked bars of completed and failed jobs per step (a chunk of its own: ThroughputChart loads it lazily). */
export default function ThroughputBars({ series, range }: { series: MetricsPoint[]; range: RangeName }) {
  return (
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
  );
}
