/**
 * Versioned migrations of the control plane schema. Applied at start-up under an advisory lock,
 * so instances starting at once apply each migration exactly once.
 */
import type pg from 'pg';
import { escapeIdentifier } from 'pg';
import { inTransaction } from './db.js';

/** The private schema of the control plane; user roles have no privilege on it. */
export const CONTROL_SCHEMA = '_repobase';

interface Migration {
  version: number;
  name: string;
  sql: (database: string) => string;
}

const migrations: Migration[] = [
  {
    version: 1,
    name: 'users, api keys, repos, collaborators',
    sql: (database) => `
      -- Users may create nothing outside the repos the control plane gives them.
      REVOKE CREATE ON DATABASE ${escapeIdentifier(database)} FROM PUBLIC;
      REVOKE CREATE ON SCHEMA public FROM PUBLIC;
      REVOKE ALL ON SCHEMA ${CONTROL_SCHEMA} FROM PUBLIC;

      CREATE TABLE ${CONTROL_SCHEMA}.users (
        name text PRIMARY KEY,
        -- SCRAM salt and iterations shared by all keys of the user (the wire front end's
        -- SCRAM exchange sends one salt before it knows which key the client holds).
        scram_salt bytea NOT NULL,
        scram_iterations integer NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE TABLE ${CONTROL_SCHEMA}.api_keys (
        id text PRIMARY KEY,
        user_name text NOT NULL REFERENCES ${CONTROL_SCHEMA}.users(name) ON DELETE CASCADE,
        secret_hash bytea NOT NULL,
        scram_stored_key bytea NOT NULL,
        scram_server_key bytea NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        last_used_at timestamptz,
        revoked_at timestamptz
      );
      CREATE INDEX ON ${CONTROL_SCHEMA}.api_keys (user_name);
      CREATE TABLE ${CONTROL_SCHEMA}.repos (
        owner text NOT NULL REFERENCES ${CONTROL_SCHEMA}.users(name) ON DELETE CASCADE,
        name text NOT NULL,
        is_private boolean NOT NULL DEFAULT true,
        description text NOT NULL DEFAULT '',
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (owner, name)
      );
      CREATE INDEX ON ${CONTROL_SCHEMA}.repos (is_private) WHERE NOT is_private;
      CREATE TABLE ${CONTROL_SCHEMA}.collaborators (
        owner text NOT NULL,
        repo text NOT NULL,
        user_name text NOT NULL REFERENCES ${CONTROL_SCHEMA}.users(name) ON DELETE CASCADE,
        permission text NOT NULL CHECK (permission IN ('read', 'write')),
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (owner, repo, user_name),
        FOREIGN KEY (owner, repo) REFERENCES ${CONTROL_SCHEMA}.repos(owner, name) ON DELETE CASCADE ON UPDATE CASCADE
      );
      CREATE INDEX ON ${CONTROL_SCHEMA}.collaborators (user_name);
      CREATE TABLE ${CONTROL_SCHEMA}.settings (
        key text PRIMARY KEY,
        value text NOT NULL
      );
    `,
  },
  {
    version: 2,
    name: 'import jobs',
    sql: () => `
      CREATE TABLE ${CONTROL_SCHEMA}.imports (
        id uuid PRIMARY KEY,
        user_name text NOT NULL REFERENCES ${CONTROL_SCHEMA}.users(name) ON DELETE CASCADE,
        repo text NOT NULL,
        table_name text NOT NULL,
        mode text NOT NULL,
        status text NOT NULL CHECK (status IN ('RECEIVED', 'PROCESSING', 'DONE', 'FAILED')),
        bytes bigint NOT NULL DEFAULT 0,
        rows bigint NOT NULL DEFAULT 0,
        -- format, header, delimiter and inferred columns, once known
        result jsonb,
        error jsonb,
        created_at timestamptz NOT NULL DEFAULT now(),
        -- heartbeat of the instance running it: a stale running job was interrupted
        updated_at timestamptz NOT NULL DEFAULT now(),
        finished_at timestamptz
      );
      CREATE INDEX ON ${CONTROL_SCHEMA}.imports (user_name, created_at);
    `,
  },
  {
    version: 3,
    name: 'passwords and web console sessions',
    sql: () => `
      -- scrypt$<N>$<r>$<p>$<salt>$<hash>; null: the user has only API keys (no console log-in).
      ALTER TABLE ${CONTROL_SCHEMA}.users ADD COLUMN password_hash text;

      CREATE TABLE ${CONTROL_SCHEMA}.web_sessions (
        -- SHA-256 of the cookie's random id: a leaked table cannot be replayed as cookies.
        id_hash bytea PRIMARY KEY,
        -- Deleting a user ends their sessions with it.
        user_name text NOT NULL REFERENCES ${CONTROL_SCHEMA}.users(name) ON DELETE CASCADE,
        csrf_token text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        expires_at timestamptz NOT NULL
      );
      CREATE INDEX ON ${CONTROL_SCHEMA}.web_sessions (user_name);
      CREATE INDEX ON ${CONTROL_SCHEMA}.web_sessions (expires_at);
    `,
  },
];

/** Applies every migration not yet applied; returns the versions it applied. */
export async function migrate(admin: pg.Pool): Promise<number[]> {
  return inTransaction(admin, async (client) => {
    // Transaction-scoped: released at COMMIT/ROLLBACK even if this process dies.
    await client.query("SELECT pg_advisory_xact_lock(hashtext('repobase.migrations'))");
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${CONTROL_SCHEMA}`);
    await client.query(`CREATE TABLE IF NOT EXISTS ${CONTROL_SCHEMA}.migrations (
      version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
    const done = await client.query<{ version: number }>(`SELECT version FROM ${CONTROL_SCHEMA}.migrations`);
    const applied = new Set(done.rows.map((r) => r.version));
    const db = await client.query<{ name: string }>('SELECT current_database() AS name');
    const database = db.rows[0]!.name;
    const now: number[] = [];
    for (const m of migrations) {
      if (applied.has(m.version)) continue;
      await client.query(m.sql(database));
      await client.query(`INSERT INTO ${CONTROL_SCHEMA}.migrations (version, name) VALUES ($1, $2)`, [m.version, m.name]);
      now.push(m.version);
    }
    return now;
  });
}
