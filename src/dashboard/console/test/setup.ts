import { cleanup } from '@testing-library/react';
import { afterEach } from 'vitest';
import { resetServer, serverFetch } from './fake-server';

// openapi-fetch keeps the fetch it found when the client was made: a trampoline to the fake server of each test.
globalThis.fetch = serverFetch as typeof fetch;

afterEach(() => {
  cleanup();
  resetServer();
});
