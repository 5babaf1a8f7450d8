/**
 * Resolves after `ms`, or rejects with the signal's reason when it aborts.
 * @throws Error `aborted: <reason>` when `signal` aborts first.
 */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(new Error(`aborted: ${String(signal.reason)}`));
    const t = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      reject(new Error(`aborted: ${String(signal?.reason)}`));
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
