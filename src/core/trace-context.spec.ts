import {
  formatTraceParent,
  MAX_TRACESTATE_CHARS,
  parseTraceParent,
  parseTraceState,
} from './trace-context';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const SPAN = '00f067aa0ba902b7';
const VALID = `00-${TRACE}-${SPAN}-01`;

describe('parseTraceParent (W3C traceparent, version 00)', () => {
  it('parses a valid header into its parts', () => {
    expect(parseTraceParent(VALID)).toEqual({
      traceparent: VALID,
      traceId: TRACE,
      spanId: SPAN,
      flags: 1,
      tracestate: null,
    });
    expect(parseTraceParent(`00-${TRACE}-${SPAN}-00`)?.flags).toBe(0);
    // Flags other than `sampled` are not defined yet, but a receiver must accept them.
    expect(parseTraceParent(`00-${TRACE}-${SPAN}-ff`)?.flags).toBe(255);
  });

  it.each([
    ['missing', undefined],
    ['empty', ''],
    ['sent twice', [VALID, VALID]],
    ['uppercase hex', `00-${TRACE.toUpperCase()}-${SPAN}-01`],
    ['uppercase flags', `00-${TRACE}-${SPAN}-0A`],
    ['all-zero trace id', `00-${'0'.repeat(32)}-${SPAN}-01`],
    ['all-zero parent id', `00-${TRACE}-${'0'.repeat(16)}-01`],
    ['short trace id', `00-${TRACE.slice(1)}-${SPAN}-01`],
    ['long parent id', `00-${TRACE}-${SPAN}0-01`],
    ['one-digit flags', `00-${TRACE}-${SPAN}-1`],
    ['version ff', `ff-${TRACE}-${SPAN}-01`],
    ['a future version', `01-${TRACE}-${SPAN}-01`],
    ['trailing data', `${VALID}-extra`],
    ['leading space', ` ${VALID}`.slice(0, 55)],
    ['non-hex', `00-${TRACE.slice(0, 31)}g-${SPAN}-01`],
    ['wrong separators', VALID.replace(/-/g, '_')],
  ])('refuses %s', (_why, header) => {
    expect(parseTraceParent(header as string | string[] | undefined, 'a=b')).toBeNull();
  });

  it('keeps a valid tracestate and joins repeated headers', () => {
    expect(parseTraceParent(VALID, 'rojo=00f067aa0ba902b7,congo=t61rcWkgMzE')?.tracestate).toBe(
      'rojo=00f067aa0ba902b7,congo=t61rcWkgMzE',
    );
    expect(parseTraceParent(VALID, ['rojo=1', 'congo=2'])?.tracestate).toBe('rojo=1,congo=2');
  });

  it('drops an invalid tracestate but keeps the traceparent', () => {
    const p = parseTraceParent(VALID, 'not a list');
    expect(p?.traceparent).toBe(VALID);
    expect(p?.tracestate).toBeNull();
  });
});

describe('parseTraceState (W3C tracestate list)', () => {
  it('accepts simple and multi-tenant keys, drops empty members and optional whitespace', () => {
    expect(parseTraceState(' rojo=1 ,\t,fw529a3039@dt=x y z ,  a_b-c*d/e=!')).toBe(
      'rojo=1,fw529a3039@dt=x y z,a_b-c*d/e=!',
    );
  });

  it.each([
    ['absent', undefined],
    ['only commas', ' , ,'],
    ['no =', 'rojo'],
    ['empty key', '=1'],
    ['empty value', 'rojo='],
    ['uppercase key', 'Rojo=1'],
    ['key starting with a digit', '1rojo=1'],
    ['= in the value', 'rojo=a=b'],
    ['non-ASCII value', 'rojo=é'],
    ['duplicate key', 'rojo=1,rojo=2'],
    ['tenant too long', `${'a'.repeat(242)}@dt=1`],
    ['system too long', `t@${'a'.repeat(15)}=1`],
    ['33 members', Array.from({ length: 33 }, (_, i) => `k${i}=v`).join(',')],
    ['over the length bound', ['a', 'b', 'c'].map((k) => `${k}=${'v'.repeat(170)}`).join(',')],
  ])('refuses %s', (_why, header) => {
    expect(parseTraceState(header)).toBeNull();
  });

  it('accepts a list exactly at the length bound', () => {
    // A value is at most 256 characters: the bound is reached with two members.
    const list = `a=${'v'.repeat(254)},b=${'v'.repeat(253)}`;
    expect(list.length).toBe(MAX_TRACESTATE_CHARS);
    expect(parseTraceState(list)).toBe(list);
    expect(parseTraceState(`a=${'v'.repeat(257)}`)).toBeNull();
  });
});

describe('formatTraceParent', () => {
  it('round-trips through the parser', () => {
    const tp = formatTraceParent(TRACE, SPAN, 1);
    expect(tp).toBe(VALID);
    expect(parseTraceParent(tp)?.spanId).toBe(SPAN);
    expect(formatTraceParent(TRACE, SPAN, 0)).toBe(`00-${TRACE}-${SPAN}-00`);
  });
});
