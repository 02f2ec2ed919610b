/**
 * One SQL statement through `POST /query/`, its answer parsed with exact numbers. Every read and
 * every change of the table page goes through here: one statement per request, like any client.
 */
import { ApiError, postQueryText } from '../api.ts';
import { JsonNumber, JsonObject, parseExactJson, type JsonValue } from './exact-json.ts';

/** A result column: its name and its SQL type as the API spells it (`BIGINT`, `NUMERIC(10,2)`, `TEXT[]`). */
export interface Field {
  name: string;
  type: string;
}

export type Row = JsonValue[];

export interface QueryAnswer {
  fields: Field[];
  rows: Row[];
  command: string | null;
  rowCount: number | null;
}

function isObject(value: JsonValue | undefined): value is JsonObject {
  return value instanceof JsonObject;
}

function text(value: JsonValue | undefined): string | null {
  return typeof value === 'string' ? value : null;
}

/** The ApiError of an `error` member (a statement that failed after its answer had started). */
function errorOf(error: JsonObject): ApiError {
  return new ApiError(200, text(error.get('code')) ?? '', text(error.get('message')) ?? 'The statement failed.', text(error.get('hint')), text(error.get('detail')));
}

/** Reads an answer's text; exported for its own checks. */
export function parseAnswer(body: string): QueryAnswer {
  const json = parseExactJson(body);
  if (!isObject(json)) throw new ApiError(200, '', 'The server sent an answer that is not a query result.');
  const error = json.get('error');
  if (isObject(error)) throw errorOf(error);
  const fieldMap = json.get('fields');
  // In the order written: the order of the values in each row.
  const fields: Field[] = isObject(fieldMap) ? fieldMap.entries.map(([name, type]) => ({ name, type: text(type) ?? '' })) : [];
  const data = json.get('data');
  const rows = Array.isArray(data) ? data.filter((r): r is Row => Array.isArray(r)) : [];
  const count = json.get('row_count');
  return { fields, rows, command: text(json.get('command')), rowCount: count instanceof JsonNumber ? Number(count.text) : null };
}

/** Runs one statement. */
export async function runQuery(sql: string, signal?: AbortSignal): Promise<QueryAnswer> {
  return parseAnswer(await postQueryText(sql, signal));
}
