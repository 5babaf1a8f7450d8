/*
 * The load scenario's POST /jobs bodies, shared by `npm run load`
 * (scripts/load.js, autocannon). load-test.js (k6) carries the same mix;
 * keep the two in step. Per 100 requests: 60 emails, 29 payment SMS at high
 * priority, 10 thumbnails, 1 email with a malformed address (unrecoverable:
 * straight to the dead-letter queue, so the DLQ path is under load too).
 */

/** The body of request number `i` (0-based). */
function loadJobBody(i) {
  const k = i % 100;
  if (k === 99) return { type: 'send_email', queue: 'default', payload: { to: `broken-${i}`, subject: 'load' } };
  if (k < 60) return { type: 'send_email', queue: 'default', payload: { to: `user${i}@example.com`, subject: `load #${i}` } };
  if (k < 89) return { type: 'SEND_PAYMENT_SMS', queue: 'critical', priority: 'high', payload: { phone: `+1555${String(i % 1e7).padStart(7, '0')}`, amount: 1 + (i % 500), currency: 'EUR' } };
  return { type: 'image_processing', queue: 'media', payload: { imageUrl: `https://cdn.example.com/load/${i}.jpg`, sizes: ['thumb'] } };
}

module.exports = { loadJobBody };
