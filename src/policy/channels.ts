// LISTEN/NOTIFY channels are shared by the whole server, so each user's live under their name:
// `LISTEN news` by alice listens upstream on "alice/news", `NOTIFY news` and
// `pg_notify('news', …)` send there, and the wire front end shows notifications on "alice/news"
// to alice as "news" (`clientChannel`). Two users' "news" are two channels; the service's own
// channels (`repobase_schema`, `repobase_cancel`) are out of every user's reach.
//
// A name already in the user's namespace (`"alice/news"`, the rule before plain names) is the same
// channel and left as it is, so old clients and trigger functions calling
// `pg_notify('alice/news', …)` keep talking to each other; a client that listened by that name is
// shown it (the decision's `listens`).
//
// The statement's channel is user-dependent, so it is spliced at decision time from spans the
// analysis found (`channelSpan`); `pg_notify` is user-independent: its call is redirected to
// `repobase_catalog.pg_notify`, which prefixes `current_user` (`catalog-rewrite.ts`) — for a
// scoped key's role `<user>#<key id>` its user (migration 12: `tenantNotifySql`).
import { applySplices, type Edit } from './splices.js';
import { CATALOG_SCHEMA } from './catalog-views.js';
import { SqlState } from '../shared/errors.js';
import type { ChannelSpan, Refusal, StatementFacts } from './facts.js';
import type { JsonObject } from './json.js';
import { str } from './json.js';
import { scanTokens } from './lexer.js';
import { quoteIdent } from './names.js';
import type { Walker } from './walker.js';

/** Channel names a user may not use even in their namespace: the service's own. */
const reservedPrefix = 'repobase_';
/**
 * The wire front end's channels of sender announcements, one per user (src/wire/notifications.ts):
 * listened to on the backends of clients that listen, and left out of pg_listening_channels().
 */
export const SENDERS_PREFIX = `${reservedPrefix}senders_`;
/** Postgres' NAMEDATALEN - 1: a longer channel name is an error. */
const maxChannelBytes = 63;

/**
 * The SQL of migration 12's pg_notify stand-in: the namespace is the user of the role that calls
 * it (a user's own role, or a scoped key's `<user>#<key id>`), so that a key and its user share
 * their channels.
 */
export function tenantNotifySql(): string {
  return `CREATE OR REPLACE FUNCTION ${CATALOG_SCHEMA}.pg_notify(channel text, payload text) RETURNS void
    LANGUAGE sql VOLATILE PARALLEL UNSAFE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
      SELECT pg_notify(CASE WHEN starts_with(channel, split_part(current_user, '#', 1) || '/') THEN channel ELSE split_part(current_user, '#', 1) || '/' || channel END, payload)
    $fn$;`;
}

/** The upstream channel of `name` as `user` uses it. */
export function upstreamChannel(user: string, name: string): string {
  return name.startsWith(`${user}/`) ? name : `${user}/${name}`;
}

/**
 * The name a client of `user` sees for a notification on upstream `channel`: without the user's
 * prefix, unless the client listened by the prefixed name (`listenedAs`).
 */
export function clientChannel(user: string, channel: string, listenedAs: ReadonlySet<string>): string {
  if (listenedAs.has(channel) || !channel.startsWith(`${user}/`)) return channel;
  return channel.slice(user.length + 1);
}

/** LISTEN/NOTIFY/UNLISTEN: where the channel is named (UNLISTEN * names none). */
export function channelStatement(w: Walker, n: JsonObject, listen: boolean): void {
  const name = str(n.conditionname);
  if (name === undefined) return;
  // In a body (SQL function, rule action) the text runs later: the old rule applies.
  if (w.ctx.body || w.ctx.offsets === null) {
    w.facts.channels.push(name);
    return;
  }
  // The statement's first word is LISTEN/NOTIFY/UNLISTEN and the channel the second token;
  // anything else (a rule's NOTIFY action) is refused rather than guessed.
  const [keyword, channel] = scanTokens(w.ctx.text, 0, Math.min(w.ctx.text.length, 4096)).slice(0, 2);
  const word = keyword?.kind === 'ident' ? keyword.text.toUpperCase() : undefined;
  const named = channel !== undefined && (channel.kind === 'qident' ? channel.text === name : channel.kind === 'ident' && channel.text.toLowerCase() === name);
  if ((word !== 'LISTEN' && word !== 'NOTIFY' && word !== 'UNLISTEN') || !named) {
    w.refuse({ code: SqlState.FeatureNotSupported, message: `${w.command} here is not supported`, hint: `send ${w.command} as a statement of its own` });
    return;
  }
  w.facts.channelSpans.push({ from: w.facts.start + channel.start, to: w.facts.start + channel.end, name, listen });
}

/** The refusal of a channel name `user` may not use, or null. */
export function channelRefusal(user: string, name: string): Refusal | null {
  const bare = name.startsWith(`${user}/`) ? name.slice(user.length + 1) : name;
  if (bare.startsWith(reservedPrefix)) {
    return { code: SqlState.InsufficientPrivilege, message: `channel names starting with "${reservedPrefix}" are reserved for the service` };
  }
  const upstream = upstreamChannel(user, name);
  if (Buffer.byteLength(upstream) > maxChannelBytes) {
    return {
      code: SqlState.InvalidParameterValue, // as Postgres' own "channel name too long"
      message: `channel name "${name}" is too long`,
      hint: `channels live under your user name: "${upstream}" must fit in ${maxChannelBytes} bytes`,
    };
  }
  return null;
}

/** `sql` with every channel span named as `user`'s upstream channel (spans in descending order of position). */
export function channelSql(sql: string, user: string, spans: readonly ChannelSpan[]): { text: string; edits: Edit[] } {
  return applySplices(sql, spans.map((span) => ({ from: span.from, to: span.to, text: quoteIdent(upstreamChannel(user, span.name)) })));
}

/** The channel spans of an analysed string, or undefined when it has none (the usual case). */
export function channelSpans(statements: readonly StatementFacts[]): ChannelSpan[] | undefined {
  let spans: ChannelSpan[] | undefined;
  for (const s of statements) if (s.channelSpans.length > 0) (spans ??= []).push(...s.channelSpans);
  return spans;
}
