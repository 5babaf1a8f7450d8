import { tableFeatures, useTable, type ColumnDef, type RowData } from '@tanstack/react-table';

export const features = tableFeatures({});
/** A column of a {@link DataTable}: `meta.optional` columns hide on narrow screens. */
export type Column<T extends RowData> = ColumnDef<typeof features, T, any>;

/**
 * A table through TanStack Table (headless: the markup here is plain, semantic
 * HTML). Rows are keyed by `rowId`, so a refresh updates cells in place and never
 * reorders what the server did not reorder. Wide tables scroll inside their box,
 * never the page.
 */
export function DataTable<T extends RowData>({ columns, data, rowId, rowClass, caption, empty = 'Nothing here.' }: { columns: Column<T>[]; data: T[]; rowId: (row: T) => string; rowClass?: (row: T) => string | undefined; caption: string; empty?: string }) {
  const table = useTable({ features, columns, data, getRowId: (r: T) => rowId(r) });
  return (
    <div className="table-wrap" role="region" aria-label={caption} tabIndex={0}>
      <table>
        <caption className="sr-only">{caption}</caption>
        <thead>
          {table.getHeaderGroups().map((g) => (
            <tr key={g.id}>
              {g.headers.map((h) => (
                <th key={h.id} scope="col" className={(h.column.columnDef.meta as { optional?: boolean } | undefined)?.optional ? 'opt' : undefined}>
                  {h.isPlaceholder ? null : <table.FlexRender header={h} />}
                </th>
              ))}
            </tr>
          ))}
        </thead>
        <tbody>
          {table.getRowModel().rows.map((r) => (
            <tr key={r.id} className={rowClass?.(r.original)}>
              {r.getAllCells().map((c) => (
                <td key={c.id} className={(c.column.columnDef.meta as { optional?: boolean } | undefined)?.optional ? 'opt' : undefined}>
                  <table.FlexRender cell={c} />
                </td>
              ))}
            </tr>
          ))}
          {data.length === 0 && (
            <tr>
              <td colSpan={columns.length} className="muted">
                {empty}
              </td>
            </tr>
          )}
        </tbody>
      </table>
    </div>
  );
}
