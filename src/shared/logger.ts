import { pino, type Logger, type LevelWithSilent } from 'pino';

export type { Logger };

/** Paths never written to a log: keys, passwords, authorization headers. */
export const redactPaths = [
  'key',
  'apiKey',
  'password',
  'secret',
  '*.key',
  '*.apiKey',
  '*.password',
  '*.secret',
  'req.headers.authorization',
  'headers.authorization',
];

/** The one logger of a process; modules take children (`logger.child({ mod: 'wire' })`). */
export function createLogger(level: LevelWithSilent, destination?: pino.DestinationStream): Logger {
  const options = { level, redact: { paths: redactPaths, censor: '[redacted]' } };
  return destination ? pino(options, destination) : pino(options);
}

/** SQL in debug logs is cut to 1 KB. */
export function sqlForLog(sql: string): string {
  return sql.length > 1024 ? sql.slice(0, 1024) + '…' : sql;
}
