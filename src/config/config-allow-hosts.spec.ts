import { ConfigError, loadConfig } from './config';

describe('HTTP_HANDLER_ALLOW_HOSTS', () => {
  it('defaults to no host', () => {
    expect(loadConfig({}).httpHandlerAllowHosts).toEqual([]);
    expect(loadConfig({ HTTP_HANDLER_ALLOW_HOSTS: ' ' }).httpHandlerAllowHosts).toEqual([]);
  });
  it('is a comma list of host names or IP literals, normalized (case, trailing dot, IDN, brackets)', () => {
    expect(loadConfig({ HTTP_HANDLER_ALLOW_HOSTS: 'localhost, Hooks.Internal., bücher.example,[::1],127.0.0.1,' }).httpHandlerAllowHosts).toEqual([
      'localhost',
      'hooks.internal',
      'xn--bcher-kva.example',
      '::1',
      '127.0.0.1',
    ]);
  });
  it.each(['http://x', 'a b', 'host:8080', '*.example.com', 'a/b'])('refuses %j, naming the variable', (entry) => {
    expect(() => loadConfig({ HTTP_HANDLER_ALLOW_HOSTS: `localhost,${entry}` })).toThrow(ConfigError);
    expect(() => loadConfig({ HTTP_HANDLER_ALLOW_HOSTS: `localhost,${entry}` })).toThrow(/^HTTP_HANDLER_ALLOW_HOSTS is invalid/);
  });
});
