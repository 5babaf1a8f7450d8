import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { BrowserRouter } from 'react-router';
import { AppRoutes, makeQueryClient, Providers } from './app';
import './styles.css';

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <Providers client={makeQueryClient()}>
      <BrowserRouter basename="/ui">
        <AppRoutes />
      </BrowserRouter>
    </Providers>
  </StrictMode>,
);
