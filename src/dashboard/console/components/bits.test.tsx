import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { render } from '@testing-library/react';
import { describe, expect, it } from 'vitest';
import { JOB_STATUSES, isUnfinished } from '../api/types';
import { StatusBadge } from './bits';

const CSS = readFileSync(join(__dirname, '..', 'styles.css'), 'utf8');
/** The background a `.s-<status>` rule of styles.css gives the badge, or null when no rule names it. */
function badgeBackground(status: string): string | null {
  for (const m of CSS.matchAll(/([^{}]+)\{([^}]*)\}/g)) {
    const selectors = m[1].split(',').map((s) => s.trim());
    const bg = /background:\s*([^;]+)/.exec(m[2]);
    if (bg && selectors.includes(`.s-${status}`)) return bg[1].trim();
  }
  return null;
}

describe('status badge', () => {
  it('every job status, blocked included, is a tinted badge with its word', () => {
    expect(JOB_STATUSES).toContain('blocked');
    for (const s of JOB_STATUSES) {
      const { container, unmount } = render(<StatusBadge status={s} />);
      const badge = container.querySelector('span.badge');
      expect([s, badge?.className, badge?.textContent]).toEqual([s, `badge s-${s}`, s]);
      expect([s, badgeBackground(s)]).toEqual([s, expect.stringMatching(/^var\(--b-[a-z]+\)$/)]);
      unmount();
    }
  });

  it('blocked has a look of its own: a tint and a dashed outline (not ready, not finished)', () => {
    expect(badgeBackground('blocked')).toBe('var(--b-none)');
    expect(CSS).toMatch(/\.s-blocked\s*\{[^}]*border:\s*1px dashed/);
  });

  it('unfinished statuses (polled, cancellable) are waiting, delayed, active and blocked', () => {
    expect(JOB_STATUSES.filter(isUnfinished)).toEqual(['waiting', 'delayed', 'active', 'blocked']);
  });
});
