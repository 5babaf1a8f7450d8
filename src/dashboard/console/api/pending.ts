import type { DlqGroup, MetricsPoint } from './types';

type NoParams = { query?: never; header?: never; path?: never; cookie?: never };
type Json<T> = { 200: { headers: { [name: string]: unknown }; content: { 'application/json': T } } };
type Get<Q, T> = {
  parameters: NoParams;
  get: { parameters: { query: Q; header?: never; path?: never; cookie?: never }; requestBody?: never; responses: Json<T> };
  put?: never;
  post?: never;
  delete?: never;
  options?: never;
  head?: never;
  patch?: never;
  trace?: never;
};

/**
 * Paths of API.md v1.1 whose server side is built on other branches (not in
 * the generated document yet): typed here from the contract. A path the
 * generated document has wins (client.ts), so regenerating schema.d.ts retires these.
 */
export interface pending {
  '/dashboard/metrics': Get<{ queue?: string; from: string; to: string; stepMs: number }, { series: MetricsPoint[] }>;
  '/jobs/dlq/groups': Get<{ queue?: string }, { items: DlqGroup[] }>;
}
