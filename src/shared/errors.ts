/**
 * The one error type of repobase. Every failure a client can see carries a SQLSTATE, the same
 * over the wire (ErrorResponse) and over HTTP (`{"error":{code,message,…}}`).
 *
 * @see https://www.postgresql.org/docs/current/errcodes-appendix.html
 */
export const SqlState = {
  SuccessfulCompletion: '00000',
  ConnectionException: '08000',
  ConnectionFailure: '08006',
  ProtocolViolation: '08P01',
  FeatureNotSupported: '0A000',
  InvalidParameterValue: '22023',
  DataException: '22000',
  CharacterNotInRepertoire: '22021',
  ActiveSqlTransaction: '25001',
  BadCopyFileFormat: '22P04',
  InvalidTextRepresentation: '22P02',
  InvalidDatetimeFormat: '22007',
  UniqueViolation: '23505',
  InvalidAuthorizationSpecification: '28000',
  InvalidPassword: '28P01',
  InvalidCatalogName: '3D000',
  InvalidSqlStatementName: '26000',
  InvalidSchemaName: '3F000',
  SyntaxError: '42601',
  InsufficientPrivilege: '42501',
  InvalidName: '42602',
  UndefinedTable: '42P01',
  UndefinedObject: '42704',
  DuplicateObject: '42710',
  DuplicateSchema: '42P06',
  DuplicateTable: '42P07',
  DuplicatePreparedStatement: '42P05',
  ReservedName: '42939',
  ProgramLimitExceeded: '54000',
  StatementTooComplex: '54001',
  DiskFull: '53100',
  TooManyConnections: '53300',
  ConfigurationLimitExceeded: '53400',
  ObjectNotInPrerequisiteState: '55000',
  CannotConnectNow: '57P03',
  QueryCanceled: '57014',
  IdleInTransactionSessionTimeout: '25P03',
  AdminShutdown: '57P01',
  InternalError: 'XX000',
} as const;

export type SqlStateCode = (typeof SqlState)[keyof typeof SqlState];

export type Severity = 'ERROR' | 'FATAL' | 'PANIC' | 'WARNING' | 'NOTICE';

export interface PgErrorFields {
  detail?: string | undefined;
  hint?: string | undefined;
  /** 1-based character position in the statement, as Postgres reports it. */
  position?: number | undefined;
  severity?: Severity | undefined;
  /** Further Postgres fields (schema, table, column, constraint, where, …) kept as received. */
  extra?: Readonly<Record<string, string>> | undefined;
  /** Reported by the upstream Postgres (its ErrorResponse), not made by repobase. */
  fromUpstream?: boolean | undefined;
}

/** An error with a SQLSTATE. `code` is any five-character SQLSTATE, not only the ones named above. */
export class PgError extends Error {
  readonly code: string;
  readonly detail: string | undefined;
  readonly hint: string | undefined;
  readonly position: number | undefined;
  readonly severity: Severity;
  readonly extra: Readonly<Record<string, string>> | undefined;
  readonly fromUpstream: boolean;

  constructor(code: string, message: string, fields: PgErrorFields = {}) {
    super(message);
    this.name = 'PgError';
    this.code = code;
    this.detail = fields.detail;
    this.hint = fields.hint;
    this.position = fields.position;
    this.severity = fields.severity ?? 'ERROR';
    this.extra = fields.extra;
    this.fromUpstream = fields.fromUpstream ?? false;
  }

  /** Plain fields, for logs and the HTTP error body. */
  toJSON(): { code: string; message: string; detail?: string; hint?: string; position?: number } {
    return {
      code: this.code,
      message: this.message,
      ...(this.detail !== undefined && { detail: this.detail }),
      ...(this.hint !== undefined && { hint: this.hint }),
      ...(this.position !== undefined && { position: this.position }),
    };
  }
}

/** What a client sees for an error that is not a PgError: no internals. */
export function internalError(): PgError {
  return new PgError(SqlState.InternalError, 'internal error');
}

export function isPgError(err: unknown): err is PgError {
  return err instanceof PgError;
}
