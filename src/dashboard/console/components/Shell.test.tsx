import { fireEvent, screen, waitFor } from '@testing-library/react';
import { describe, expect, it } from 'vitest';
import { calls, envelope, route } from '../test/fake-server';
import { renderAt, signedInAs } from '../test/render';

describe('shell and login', () => {
  it('without a session (401) the console asks to log in, then goes back to the view', async () => {
    let loggedIn = false;
    route('GET /auth/session', () => (loggedIn ? { kind: 'user', user: { id: 'u', username: 'ana' }, keyId: null, project: 'default', role: 'viewer', expiresAt: null } : envelope(401, 'unauthorized', 'no credentials')));
    route('POST /auth/login', ({ body }: { body: unknown }) => {
      const b = body as { password: string };
      if (b.password !== 'correct horse') return envelope(401, 'unauthorized', 'wrong username or password');
      loggedIn = true;
      return { ok: true };
    });
    route('GET /workers', []);
    renderAt('/workers');
    fireEvent.change(await screen.findByLabelText('Username'), { target: { value: 'ana' } });
    fireEvent.change(screen.getByLabelText('Password'), { target: { value: 'nope' } });
    fireEvent.click(screen.getByRole('button', { name: 'Log in' }));
    await screen.findByText('401 unauthorized: wrong username or password');
    fireEvent.change(screen.getByLabelText('Password'), { target: { value: 'correct horse' } });
    fireEvent.click(screen.getByRole('button', { name: 'Log in' }));
    await screen.findByRole('heading', { name: 'Workers' });
    await waitFor(() => expect(screen.getByRole('banner').textContent).toContain('ana (viewer)'));
    expect(screen.getByRole('button', { name: 'Log out' })).toBeTruthy();
    expect(calls.filter((c) => c.url.pathname === '/auth/login').map((c) => c.body)).toEqual([{ username: 'ana', password: 'nope' }, { username: 'ana', password: 'correct horse' }]);
  });

  it('AUTH=off (anonymous admin): no login asked, no logout offered', async () => {
    signedInAs('anonymous');
    route('GET /workers', []);
    renderAt('/workers');
    await screen.findByRole('heading', { name: 'Workers' });
    await screen.findByText('anonymous');
    expect(screen.queryByRole('button', { name: 'Log out' })).toBeNull();
    expect(screen.getByRole('navigation', { name: 'Views' })).toBeTruthy();
  });

  it('the theme toggle switches the colour scheme and remembers it', async () => {
    signedInAs('anonymous');
    route('GET /workers', []);
    renderAt('/workers');
    const before = document.documentElement.dataset.theme;
    const toggle = await screen.findByRole('button', { name: /mode/ });
    fireEvent.click(toggle);
    await waitFor(() => expect(document.documentElement.dataset.theme).not.toBe(before));
    expect(localStorage.getItem('sluice.theme')).toBe(document.documentElement.dataset.theme);
  });
});
