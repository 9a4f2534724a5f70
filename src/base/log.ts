// Structured JSON logs. Secrets never reach a log line: handlers log ids and codes, never tokens,
// initData or event payloads, and the paths below are redacted should an object carry them.
import { pino, type Logger } from 'pino';
import type { LogLevel } from '../config/config.js';

export type { Logger };

export function createLogger(level: LogLevel): Logger {
  return pino({
    level,
    base: { service: 'tg-ingest' },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: {
      paths: [
        'token',
        'adminToken',
        'initData',
        'headers["x-api-key"]',
        'headers.authorization',
        '*.token',
        '*.initData',
      ],
      censor: '[redacted]',
    },
  });
}
