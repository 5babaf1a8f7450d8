/*
 * The demo's mixed workload: POST /jobs bodies (API.md) for the example
 * handlers in src/handlers/examples and the diagnostic `diag.fail`. Which
 * payloads succeed or fail is decided by those handlers:
 *   send_email        `to` ending @bounce.test → transient error (retried, then DLQ);
 *                     a malformed `to` → unrecoverable (DLQ at once)
 *   SEND_PAYMENT_SMS  phone +999… (no such country code) → unrecoverable (DLQ at once)
 *   image_processing  an unknown size → unrecoverable
 *   diag.fail         {times: n} fails its first n attempts, then succeeds
 */

const fixed = (delayMs) => ({ type: 'fixed', delayMs, maxDelayMs: delayMs, jitter: 'none' });

/**
 * @param scale   1 for the full demo (~2,000 jobs), less for --ci
 * @param delayed {baseMs, stepMs, steps}: spread of the delayed reminders
 * @returns {{kind: string, body: object}[]} interleaved so every queue moves at once
 */
function demoWorkload(scale, delayed) {
  const n = (x) => Math.max(1, Math.round(x * scale));
  const jobs = [];
  const add = (kind, body) => jobs.push({ kind, body });
  for (let i = 0; i < n(1000); i++) {
    const bounce = i % 25 === 7; // ~4 % hit a mailbox that keeps deferring
    add(bounce ? 'email (bounces → DLQ)' : 'email', {
      type: 'send_email', queue: 'default', maxAttempts: 3, backoff: fixed(500),
      payload: { to: bounce ? `user${i}@bounce.test` : `user${i}@example.com`, subject: `Welcome #${i}`, body: 'Hello and welcome!' },
    });
  }
  for (let i = 0; i < n(300); i++) {
    add('newsletter (low priority)', { type: 'send_email', queue: 'default', priority: 'low', payload: { to: `reader${i}@example.com`, subject: 'Weekly digest' } });
  }
  for (let i = 0; i < n(300); i++) {
    const dead = i % 30 === 3; // an invalid number: no retry can fix it
    add(dead ? 'payment SMS (invalid number → DLQ)' : 'payment SMS', {
      type: 'SEND_PAYMENT_SMS', queue: 'critical', priority: 'high', maxAttempts: 2, backoff: fixed(300),
      payload: { phone: dead ? `+9990000${1000 + i}` : `+1555000${1000 + i}`, amount: 10 + (i % 90), currency: 'EUR' },
    });
  }
  for (let i = 0; i < n(150); i++) {
    add('thumbnail', { type: 'image_processing', queue: 'media', payload: { imageUrl: `https://cdn.example.com/img/${i}.jpg`, sizes: ['thumb', 'small', 'medium'] } });
  }
  for (let i = 0; i < n(150); i++) {
    add('partner webhook (flaky: retried, then succeeds)', {
      type: 'diag.fail', queue: 'webhooks', maxAttempts: 4,
      backoff: { type: 'exponential', delayMs: 200, maxDelayMs: 2000, jitter: 'equal' },
      payload: { message: 'partner API 503: try again later', times: 1 + (i % 2), event: 'order.paid', orderId: 5000 + i },
    });
  }
  for (let i = 0; i < n(100); i++) {
    add('reminder (delayed)', {
      type: 'send_email', queue: 'default', delayMs: delayed.baseMs + (i % delayed.steps) * delayed.stepMs,
      payload: { to: `cart${i}@example.com`, subject: 'You left something in your cart' },
    });
  }
  // Unrecoverable inputs: no retry can fix them, straight to the DLQ.
  add('email (bad address → DLQ)', { type: 'send_email', queue: 'default', payload: { to: 'not-an-address', subject: 'x' } });
  add('thumbnail (bad size → DLQ)', { type: 'image_processing', queue: 'media', payload: { imageUrl: 'https://cdn.example.com/img/x.jpg', sizes: ['huge'] } });
  // Deterministic interleave (a fixed multiplicative shuffle): reproducible runs.
  return jobs.map((j, i) => ({ j, k: (i * 2654435761) % 4294967296 })).sort((a, b) => a.k - b.k).map((x) => x.j);
}

/** The order receipt sent twice with one idempotency key (API.md: 201, then 200 + Idempotent-Replayed). */
const idempotentOrder = {
  type: 'SEND_PAYMENT_SMS', queue: 'critical', priority: 'high', idempotencyKey: 'order-42-receipt',
  payload: { phone: '+15550001234', amount: 42, currency: 'EUR' },
};

module.exports = { demoWorkload, idempotentOrder };
