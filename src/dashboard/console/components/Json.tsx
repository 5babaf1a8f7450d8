import { useId, useState } from 'react';
import { allExpanded, darkStyles, defaultStyles, JsonView } from 'react-json-view-lite';
import 'react-json-view-lite/dist/index.css';

/** Stored job data, formatted. Always rendered as text (React escapes it): markup in a payload stays inert. */
export function JsonBlock({ value, label }: { value: unknown; label: string }) {
  const dark = typeof document !== 'undefined' && document.documentElement.dataset.theme === 'dark';
  if (value === null || value === undefined) return <p className="muted">{label}: none</p>;
  if (typeof value !== 'object') return <pre aria-label={label}>{JSON.stringify(value)}</pre>;
  return (
    <div className="json" aria-label={label} role="group">
      <JsonView data={value as object} shouldExpandNode={allExpanded} style={dark ? darkStyles : defaultStyles} />
    </div>
  );
}

/** Where JSON.parse stopped, as "line 3, column 7" when the engine says so. */
export function parseJsonObject(text: string): { value: Record<string, unknown> } | { error: string } {
  try {
    const v: unknown = JSON.parse(text);
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return { error: 'the payload must be a JSON object ({…})' };
    return { value: v as Record<string, unknown> };
  } catch (e) {
    const msg = (e as Error).message;
    const pos = /position (\d+)/.exec(msg);
    if (pos) {
      const before = text.slice(0, Number(pos[1]));
      const line = before.split('\n').length;
      const col = Number(pos[1]) - before.lastIndexOf('\n');
      return { error: `${msg.replace(/ in JSON at position \d+.*$/, '')} (line ${line}, column ${col})` };
    }
    return { error: msg };
  }
}

/**
 * A JSON object editor: a plain textarea, parsed on every keystroke, the parse
 * error shown under it (and the field marked invalid). `onSubmit` gets the parsed object.
 */
export function JsonEditor({ initial, label, submitLabel, onSubmit, onCancel }: { initial: unknown; label: string; submitLabel: string; onSubmit: (v: Record<string, unknown>) => void; onCancel: () => void }) {
  const id = useId();
  const [text, setText] = useState(() => JSON.stringify(initial ?? {}, null, 2));
  const parsed = parseJsonObject(text);
  const error = 'error' in parsed ? parsed.error : null;
  return (
    <form
      className="json-editor"
      onSubmit={(e) => {
        e.preventDefault();
        if ('value' in parsed) onSubmit(parsed.value);
      }}
    >
      <label htmlFor={id}>{label}</label>
      <textarea id={id} value={text} rows={Math.min(20, Math.max(6, text.split('\n').length + 1))} spellCheck={false} aria-invalid={error !== null} aria-describedby={`${id}-e`} onChange={(e) => setText(e.target.value)} />
      <p id={`${id}-e`} className={error ? 'err' : 'muted'} role={error ? 'alert' : undefined}>
        {error ?? 'Valid JSON object'}
      </p>
      <div className="row">
        <button type="submit" disabled={error !== null}>
          {submitLabel}
        </button>
        <button type="button" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}
