import { bareQueue, DEFAULT_PROJECT, inProject, isProjectName, isQualifiedQueue, projectOf, qualify, splitQualified } from './project-queue';

describe('qualified queue names', () => {
  it('keeps the default project’s names bare (the upgrade moves nothing)', () => {
    expect(qualify(DEFAULT_PROJECT, 'emails')).toBe('emails');
    expect(splitQualified('emails')).toEqual({ project: 'default', queue: 'emails' });
    expect(projectOf('emails')).toBe('default');
    expect(bareQueue('emails')).toBe('emails');
  });

  it('prefixes any other project with `<project>/`', () => {
    expect(qualify('acme', 'emails')).toBe('acme/emails');
    expect(splitQualified('acme/emails')).toEqual({ project: 'acme', queue: 'emails' });
    expect(projectOf('acme/emails')).toBe('acme');
    expect(bareQueue('acme/emails')).toBe('emails');
  });

  it('round-trips every project and queue name, and never maps two pairs to one name', () => {
    const projects = ['default', 'acme', 'a', 'p_1', 'x-y', 'z'.repeat(64)];
    const queues = ['default', 'emails', 'a', 'q-1', 'acme', 'q'.repeat(64)];
    const seen = new Map<string, string>();
    for (const p of projects) {
      for (const q of queues) {
        const name = qualify(p, q);
        expect(splitQualified(name)).toEqual({ project: p, queue: q });
        expect(isQualifiedQueue(name)).toBe(true);
        expect(inProject(name, p)).toBe(true);
        for (const other of projects) if (other !== p) expect(inProject(name, other)).toBe(false);
        const pair = `${p}|${q}`;
        expect(seen.get(name) ?? pair).toBe(pair);
        seen.set(name, pair);
      }
    }
  });

  it('refuses invalid names (a caller must validate first)', () => {
    expect(() => qualify('Acme', 'q')).toThrow();
    expect(() => qualify('acme', 'a/b')).toThrow();
    expect(() => qualify('acme/x', 'q')).toThrow();
    expect(() => qualify('', 'q')).toThrow();
    expect(() => qualify('acme', '')).toThrow();
  });

  it('tells valid qualified names (QUEUES entries) from invalid ones', () => {
    for (const ok of ['emails', 'acme/emails', 'a/b']) expect(isQualifiedQueue(ok)).toBe(true);
    for (const bad of ['default/emails', 'acme/', '/emails', 'a/b/c', 'Acme/x', 'acme/X', '', '-x']) expect(isQualifiedQueue(bad)).toBe(false);
  });

  it('checks project names by the queue-name rule', () => {
    for (const ok of ['default', 'acme', 'a1', '0', 'a_b-c', 'p'.repeat(64)]) expect(isProjectName(ok)).toBe(true);
    for (const bad of ['', 'Acme', '-a', '_a', 'a/b', 'p'.repeat(65), 'a b', 1, null]) expect(isProjectName(bad)).toBe(false);
  });
});
