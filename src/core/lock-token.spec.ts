import { executionSeqOfToken } from './lock-token';

describe('executionSeqOfToken', () => {
  it('reads the execution at the end of a claim token', () => {
    expect(executionSeqOfToken('AbCdEfGhIjKlMn-_.0.1')).toBe(1);
    expect(executionSeqOfToken('AbCdEfGhIjKlMn-_.99.12')).toBe(12);
  });
  it('null for any other form (older tokens, forged or cut ones)', () => {
    for (const t of ['AbCdEfGhIjKlMn-_.0', 'AbCdEfGhIjKlMn-_.0.', 'short.0.1', 'AbCdEfGhIjKlMn-_.0.1x', '', 'AbCdEfGhIjKlMn-_.0.1234567890']) {
      expect(executionSeqOfToken(t)).toBeNull();
    }
  });
});
