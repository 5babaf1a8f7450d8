import { findBadJsonString, findBadParam, jsonDepthExceeds, MAX_JSON_DEPTH } from './json-guard';

const nest = (n: number) => '['.repeat(n) + ']'.repeat(n);

describe('json-guard', () => {
  it('depth: exactly the limit passes, one more fails; brackets in strings and escaped quotes do not count', () => {
    expect(jsonDepthExceeds(nest(MAX_JSON_DEPTH))).toBe(false);
    expect(jsonDepthExceeds(nest(MAX_JSON_DEPTH + 1))).toBe(true);
    expect(jsonDepthExceeds(`{"a":"${'['.repeat(500)}\\"${'{'.repeat(500)}"}`)).toBe(false);
    // Many siblings are not depth.
    expect(jsonDepthExceeds(`[${Array.from({ length: 1000 }, () => '{"a":[1]}').join(',')}]`)).toBe(false);
  });

  it('depth: a million levels are scanned without recursion', () => {
    expect(jsonDepthExceeds(nest(1_000_000))).toBe(true);
    expect(jsonDepthExceeds('['.repeat(1_000_000))).toBe(true);
  });

  it('strings: finds NUL and lone surrogates in values and keys, with their path', () => {
    const find = (text: string) => findBadJsonString(JSON.parse(text), text);
    expect(find('{"a":[1,{"b":"x\\u0000"}]}')).toEqual({ path: 'a.1.b', message: expect.stringMatching(/NUL/) });
    expect(find('{"a":{"\\udc00k":1}}')).toEqual({ path: 'a.\uFFFDk', message: expect.stringMatching(/^key .*surrogate/) });
    expect(find('["\\ud800"]')).toEqual({ path: '0', message: expect.stringMatching(/surrogate/) });
    expect(find('{"ok":"\\ud83d\\ude00","e":"\\u00e9","s":"\\\\u0000"}')).toBeNull();
    // Without a suspect escape in the text, the value is not walked at all.
    expect(findBadJsonString({ a: '\u0000' }, '{"a":"plain"}')).toBeNull();
  });

  it('params: query and path values', () => {
    expect(findBadParam({ queue: 'a', type: ['x', 'y\u0000'] })).toEqual({ path: 'type', message: expect.stringMatching(/NUL/) });
    expect(findBadParam({ id: 'abc' })).toBeNull();
    expect(findBadParam(undefined)).toBeNull();
  });
});
