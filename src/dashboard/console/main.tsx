import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { BrowserRouter } from 'react-router';
import { AppRoutes, makeQueryClient, Providers } from './app';
import { prefetchFirstView } from './prefetch';
import './styles.css';

const client = makeQueryClient();
// The first view's reads go out now, while React renders (prefetch.ts).
prefetchFirstView(client, location.pathname, location.search);

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <Providers client={client}>
      <BrowserRouter basename="/ui">
        <AppRoutes />
      </BrowserRouter>
    </Providers>
  </StrictMode>,
);
