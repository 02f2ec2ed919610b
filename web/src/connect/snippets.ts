/**
 * The connection details the Connect dialog shows: one connection URL and the same example
 * query in each client's own syntax. Pure functions of the target; every name reaches SQL text
 * through quoteIdent, and every piece of text reaches a language's string literal or a shell
 * argument through that language's quoting.
 */
import type { ConnectionInfo } from '../api.ts';
import { qualifiedTable } from '../lib/sql.ts';

/** What the snippets say until a key is created in the dialog. */
export const KEY_PLACEHOLDER = '<API_KEY>';
const TABLE_PLACEHOLDER = 'your_table';

export interface ConnectTarget {
  connection: ConnectionInfo;
  /** The logged-in user: the Postgres user name. */
  user: string;
  owner: string;
  repo: string;
  /** A table of the repo for the example query; a placeholder is used without one. */
  table: string | null;
  /** The key just created in the dialog, else null (the snippets show KEY_PLACEHOLDER). */
  key: string | null;
}

export interface Snippet {
  id: string;
  name: string;
  code: string;
}

// --- quoting -------------------------------------------------------------------------------

const SHELL_SAFE = /^[A-Za-z0-9_@%+=:,./-]+$/;

/** One POSIX shell word: bare when harmless, else in single quotes (a `'` as `'\''`). */
export function shellArg(text: string): string {
  if (SHELL_SAFE.test(text)) return text;
  return `'${text.replaceAll("'", `'\\''`)}'`;
}

/** A JavaScript or Python string literal: single quotes when nothing needs escaping, else JSON's. */
function stringLiteral(text: string): string {
  return /['\\\n\r\u2028\u2029]/.test(text) ? JSON.stringify(text) : `'${text}'`;
}

/** A Java string literal (JSON's escapes are Java's). */
function javaString(text: string): string {
  return JSON.stringify(text);
}

// --- pieces --------------------------------------------------------------------------------

function hostPort({ pg_host, pg_port }: ConnectionInfo): string {
  const host = pg_host.includes(':') && !pg_host.startsWith('[') ? `[${pg_host}]` : pg_host;
  return `${host}:${pg_port}`;
}

function password(t: ConnectTarget): string {
  return t.key === null ? KEY_PLACEHOLDER : encodeURIComponent(t.key);
}

/** The database of a repo is its full name, `owner/repo`; in a URL the `/` is `%2F`. */
export function databaseName(t: Pick<ConnectTarget, 'owner' | 'repo'>): string {
  return `${t.owner}/${t.repo}`;
}

/** `postgresql://<user>:<key>@<host>:<port>/<owner>%2F<repo>?sslmode=require` */
export function connectionUrl(t: ConnectTarget, scheme = 'postgresql'): string {
  return `${scheme}://${encodeURIComponent(t.user)}:${password(t)}@${hostPort(t.connection)}/${encodeURIComponent(databaseName(t))}?sslmode=require`;
}

export function exampleQuery(t: ConnectTarget): string {
  return `SELECT * FROM ${qualifiedTable(databaseName(t), t.table ?? TABLE_PLACEHOLDER)} LIMIT 10`;
}

/** The server's base URL, as the CLI's `--url` wants it (without /api/v1beta). */
function serverUrl(c: ConnectionInfo): string {
  return c.api_url.replace(/\/+$/, '').replace(/\/api\/v1beta$/, '');
}

function shellKey(t: ConnectTarget): string {
  return t.key === null ? KEY_PLACEHOLDER : shellArg(t.key);
}

export function psqlCommand(t: ConnectTarget): string {
  return `psql ${shellArg(connectionUrl(t))}`;
}

// --- the snippets --------------------------------------------------------------------------

export function buildSnippets(t: ConnectTarget): Snippet[] {
  const url = connectionUrl(t);
  const sql = exampleQuery(t);
  const api = t.connection.api_url.replace(/\/+$/, '');
  const bearer = `Authorization: Bearer ${t.key ?? KEY_PLACEHOLDER}`;
  const jdbcUrl = `jdbc:postgresql://${hostPort(t.connection)}/${encodeURIComponent(databaseName(t))}?sslmode=require&user=${encodeURIComponent(t.user)}&password=${password(t)}`;
  return [
    { id: 'url', name: 'Connection URL', code: url },
    { id: 'psql', name: 'psql', code: psqlCommand(t) },
    {
      id: 'node-postgres',
      name: 'node-postgres',
      code: `import pg from 'pg';

// uselibpqcompat: sslmode=require means what it means to psql (encrypted)
const client = new pg.Client({ connectionString: ${stringLiteral(`${url}&uselibpqcompat=true`)} });
await client.connect();
const { rows } = await client.query(${stringLiteral(sql)});
console.log(rows);
await client.end();`,
    },
    {
      id: 'postgres-js',
      name: 'postgres.js',
      code: `import postgres from 'postgres';

const sql = postgres(${stringLiteral(url)});
const rows = await sql.unsafe(${stringLiteral(sql)});
console.log(rows);
await sql.end();`,
    },
    {
      id: 'psycopg',
      name: 'psycopg (Python)',
      code: `import psycopg

with psycopg.connect(${stringLiteral(url)}) as conn:
    for row in conn.execute(${stringLiteral(sql)}):
        print(row)`,
    },
    {
      id: 'sqlalchemy',
      name: 'SQLAlchemy',
      code: `from sqlalchemy import create_engine, text

engine = create_engine(${stringLiteral(connectionUrl(t, 'postgresql+psycopg'))})
with engine.connect() as conn:
    for row in conn.execute(text(${stringLiteral(sql)})):
        print(row)`,
    },
    {
      id: 'jdbc',
      name: 'JDBC (Java)',
      code: `import java.sql.*;

String url = ${javaString(jdbcUrl)};
try (Connection conn = DriverManager.getConnection(url);
     Statement st = conn.createStatement();
     ResultSet rs = st.executeQuery(${javaString(sql)})) {
    while (rs.next()) System.out.println(rs.getString(1));
}`,
    },
    {
      id: 'curl',
      name: 'curl (REST API)',
      code: `curl ${shellArg(`${api}/query/`)} \\
  -H ${shellArg(bearer)} \\
  -H 'Content-Type: application/json' \\
  -d ${shellArg(`{"query_string": ${JSON.stringify(sql)}}`)}`,
    },
    {
      id: 'cli',
      name: 'repobase CLI',
      code: `REPOBASE_API_KEY=${shellKey(t)} npx repobase query --url ${shellArg(serverUrl(t.connection))} ${shellArg(sql)}`,
    },
  ];
}

/** The parameters one by one, for tools with a form (DBeaver, TablePlus, BI tools). */
export function connectionParameters(t: ConnectTarget): Array<[string, string]> {
  return [
    ['Host', t.connection.pg_host],
    ['Port', String(t.connection.pg_port)],
    ['Database', databaseName(t)],
    ['User', t.user],
    ['Password', t.key ?? 'your API key'],
    ['SSL mode', 'require'],
  ];
}
