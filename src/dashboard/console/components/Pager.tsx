import { useState } from 'react';

/**
 * Keyset paging state: the cursors of the pages seen so far. "Next" follows the
 * server's `nextCursor`, "Previous" goes back to the cursor that produced the
 * previous page, so a page is always the same server query: nothing is repeated
 * or skipped, whatever was enqueued meanwhile. Reset when the filter changes (key the owner by the filter).
 */
export function useCursorStack() {
  const [stack, setStack] = useState<(string | undefined)[]>([undefined]);
  return {
    cursor: stack[stack.length - 1],
    page: stack.length,
    next: (c: string) => setStack((s) => [...s, c]),
    prev: () => setStack((s) => (s.length > 1 ? s.slice(0, -1) : s)),
    reset: () => setStack([undefined]),
  };
}

export function Pager({ page, nextCursor, onNext, onPrev, busy }: { page: number; nextCursor: string | null | undefined; onNext: (c: string) => void; onPrev: () => void; busy?: boolean }) {
  return (
    <nav className="row pager" aria-label="Pages">
      <button type="button" onClick={onPrev} disabled={page <= 1 || busy}>
        ← Previous
      </button>
      <span aria-live="polite">Page {page}</span>
      <button type="button" onClick={() => nextCursor && onNext(nextCursor)} disabled={!nextCursor || busy}>
        Next →
      </button>
    </nav>
  );
}
