import pino, { Logger } from 'pino';

/**
 * The process logger: JSON lines in production, pretty when stdout is a TTY.
 * Payload values are never logged by Sluice code; log ids, sizes and keys.
 */
export function createLogger(level: string, name = 'sluice'): Logger {
  const pretty = process.stdout.isTTY && process.env.NODE_ENV !== 'production';
  return pino({
    name,
    level,
    base: { pid: process.pid },
    ...(pretty ? { transport: { target: 'pino-pretty', options: { colorize: true, translateTime: 'SYS:HH:MM:ss.l' } } } : {}),
  });
}

export type { Logger };
