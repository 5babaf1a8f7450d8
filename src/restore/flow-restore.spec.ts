import { v7 as uuidv7 } from 'uuid';
import { mayBePruned } from './flow-restore';

describe('mayBePruned (a dependency PostgreSQL does not know: pruned by retention, or lost with Redis)', () => {
  const now = Date.UTC(2026, 11, 5, 12);
  const at = (ms: number) => uuidv7({ msecs: ms });

  it('a job younger than the shortest retention (1 day) was never pruned: it was lost', () => {
    expect(mayBePruned(at(now), now)).toBe(false);
    expect(mayBePruned(at(now - 86_400_000 + 1000), now)).toBe(false);
  });

  it('an older one may have been (retention then counts it as met)', () => {
    expect(mayBePruned(at(now - 86_400_000 - 1000), now)).toBe(true);
    expect(mayBePruned(at(now - 40 * 86_400_000), now)).toBe(true);
  });

  it('reads upper-case ids the same', () => {
    expect(mayBePruned(at(now - 2 * 86_400_000).toUpperCase(), now)).toBe(true);
  });
});
