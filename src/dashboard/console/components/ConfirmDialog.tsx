import { useEffect, useId, useRef, type ReactNode } from 'react';

/**
 * A modal question before a destructive action: focus goes to Cancel (the safe
 * choice), Escape cancels, Tab stays inside, focus returns to the opener on close.
 */
export function ConfirmDialog({ title, children, confirmLabel, onConfirm, onCancel }: { title: string; children?: ReactNode; confirmLabel: string; onConfirm: () => void; onCancel: () => void }) {
  const id = useId();
  const ref = useRef<HTMLDivElement>(null);
  const cancelRef = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    const opener = document.activeElement as HTMLElement | null;
    cancelRef.current?.focus();
    return () => opener?.focus?.();
  }, []);
  const onKeyDown = (e: React.KeyboardEvent) => {
    if (e.key === 'Escape') onCancel();
    if (e.key === 'Tab') {
      const f = ref.current?.querySelectorAll<HTMLElement>('button');
      if (!f || f.length === 0) return;
      const first = f[0];
      const last = f[f.length - 1];
      if (e.shiftKey && document.activeElement === first) {
        e.preventDefault();
        last.focus();
      } else if (!e.shiftKey && document.activeElement === last) {
        e.preventDefault();
        first.focus();
      }
    }
  };
  return (
    <div className="backdrop">
      <div ref={ref} className="dialog" role="alertdialog" aria-modal="true" aria-labelledby={`${id}-t`} aria-describedby={`${id}-d`} onKeyDown={onKeyDown}>
        <h2 id={`${id}-t`}>{title}</h2>
        <div id={`${id}-d`}>{children}</div>
        <div className="row">
          <button ref={cancelRef} type="button" onClick={onCancel}>
            Cancel
          </button>
          <button type="button" className="danger" onClick={onConfirm}>
            {confirmLabel}
          </button>
        </div>
      </div>
    </div>
  );
}
