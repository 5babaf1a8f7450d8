import { prefersMinimal } from './prefer';

describe('prefersMinimal (RFC 7240 Prefer)', () => {
  it.each([
    ['return=minimal', true],
    ['Return=Minimal', true],
    ['return="minimal"', true],
    [' respond-async, return=minimal ; foo=bar', true],
    ['wait=10, return=minimal', true],
    [['respond-async', 'return=minimal'], true],
    ['return=representation', false],
    ['return=representation, return=minimal', false], // the first return preference decides
    ['return', false],
    ['returnx=minimal', false],
    ['minimal', false],
    ['', false],
    [undefined, false],
    [`${'x,'.repeat(3000)}return=minimal`, false], // beyond the scanned bound
  ] as [string | string[] | undefined, boolean][])('%j → %s', (header, want) => {
    expect(prefersMinimal(header)).toBe(want);
  });
});
