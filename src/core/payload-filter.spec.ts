import { parsePayloadFilter, PAYLOAD_FILTER_MAX_BYTES, PAYLOAD_FILTER_MAX_DEPTH } from './payload-filter';

const path = (f: () => unknown) => {
  try {
    f();
    return 'accepted';
  } catch (e) {
    return (e as { details?: { path: string }[] }).details?.[0]?.path;
  }
};

describe('parsePayloadFilter', () => {
  it('accepts a JSON object, re-serialized', () => {
    expect(parsePayloadFilter('{ "orderId" : 42 }')).toBe('{"orderId":42}');
    expect(parsePayloadFilter('{"a":{"b":[1,{"c":null}]}}')).toBe('{"a":{"b":[1,{"c":null}]}}');
  });

  it('refuses what is not a small, shallow JSON object, naming payload', () => {
    for (const t of ['42', '"x"', 'null', '[1]', '{', "{'a':1}", '']) expect(path(() => parsePayloadFilter(t))).toBe('payload');
    expect(path(() => parsePayloadFilter(JSON.stringify({ a: 'x'.repeat(PAYLOAD_FILTER_MAX_BYTES) })))).toBe('payload');
    const deep = (n: number): string => (n === 0 ? '1' : `{"a":${deep(n - 1)}}`);
    expect(path(() => parsePayloadFilter(deep(PAYLOAD_FILTER_MAX_DEPTH)))).toBe('accepted');
    expect(path(() => parsePayloadFilter(deep(PAYLOAD_FILTER_MAX_DEPTH + 1)))).toBe('payload');
    expect(path(() => parsePayloadFilter('['.repeat(1000) + ']'.repeat(1000)))).toBe('payload');
    expect(path(() => parsePayloadFilter(`{"a":${'['.repeat(2000)}${']'.repeat(2000)}}`))).toBe('payload');
  });
});
