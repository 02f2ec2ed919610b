/**
 * The live schema: `GET /api/v1beta/events` is a stream of Server-Sent Events, one `schema` event
 * (`{"repo","table","command"}`) for every schema change in a repo the person may read, from
 * whatever made it (psql, the REST API, an upload, another tab).
 *
 * One EventSource serves the whole page, however many components listen: it opens with the first
 * listener and closes shortly after the last one leaves (so moving between pages keeps it). EventSource reconnects by itself after a dropped connection;
 * events sent while it was away are lost, so after every reconnect each listener hears
 * `{repo, table: null, command: 'reconnect'}` and reloads what it shows. When the browser gives up
 * (the answer was not an event stream, e.g. the session ended or a proxy failed), a new stream is
 * tried after a growing pause, and its opening counts as a reconnect too.
 */
import { useEffect, useRef } from 'react';

export interface SchemaEvent {
  /** The repo's full name, `owner/repo`. */
  repo: string;
  /** The table changed, or null for a change of the repo itself (or a reconnect). */
  table: string | null;
  /** The command tag (`CREATE TABLE`, `ALTER TABLE`, `DROP TABLE`…), or `reconnect`. */
  command: string;
}

interface Listener {
  repo: string;
  handle(event: SchemaEvent): void;
}

const URL = '/api/v1beta/events';
const FIRST_RETRY_MS = 2_000;
const MAX_RETRY_MS = 60_000;
/** The stream outlives its last listener this long, so that going from page to page keeps it. */
const LINGER_MS = 1_000;

const listeners = new Set<Listener>();
let source: EventSource | null = null;
/** True once some stream of this page has opened: every later opening is a reconnect. */
let openedBefore = false;
let retryTimer: ReturnType<typeof setTimeout> | null = null;
let retryMs = FIRST_RETRY_MS;
let lingerTimer: ReturnType<typeof setTimeout> | null = null;

function tell(listener: Listener, event: SchemaEvent): void {
  try {
    listener.handle(event);
  } catch (err) {
    // One page's failure must not keep the others from hearing the event.
    console.error(err);
  }
}

function parse(data: string): SchemaEvent | null {
  try {
    const value = JSON.parse(data) as Partial<SchemaEvent> | null;
    if (!value || typeof value.repo !== 'string' || typeof value.command !== 'string') return null;
    return { repo: value.repo, table: typeof value.table === 'string' ? value.table : null, command: value.command };
  } catch {
    return null;
  }
}

function onSchema(message: MessageEvent<string>): void {
  const event = parse(message.data);
  if (!event) return;
  for (const listener of [...listeners]) if (listener.repo === event.repo) tell(listener, event);
}

function onOpen(): void {
  retryMs = FIRST_RETRY_MS;
  if (openedBefore) {
    for (const listener of [...listeners]) tell(listener, { repo: listener.repo, table: null, command: 'reconnect' });
  }
  openedBefore = true;
}

function onError(this: EventSource): void {
  // CONNECTING: the browser retries by itself. CLOSED: it gave up; try again later ourselves.
  if (this !== source || this.readyState !== EventSource.CLOSED) return;
  close();
  retryTimer = setTimeout(() => {
    retryTimer = null;
    if (listeners.size > 0) open();
  }, retryMs);
  retryMs = Math.min(retryMs * 2, MAX_RETRY_MS);
}

function open(): void {
  if (source || typeof EventSource === 'undefined') return;
  source = new EventSource(URL, { withCredentials: true });
  source.addEventListener('schema', onSchema);
  source.addEventListener('open', onOpen);
  source.addEventListener('error', onError);
}

function close(): void {
  if (!source) return;
  source.removeEventListener('schema', onSchema);
  source.removeEventListener('open', onOpen);
  source.removeEventListener('error', onError);
  source.close();
  source = null;
}

function subscribe(listener: Listener): () => void {
  listeners.add(listener);
  if (lingerTimer !== null) clearTimeout(lingerTimer);
  lingerTimer = null;
  if (!source && retryTimer === null) open();
  return () => {
    listeners.delete(listener);
    if (listeners.size === 0 && lingerTimer === null) lingerTimer = setTimeout(shutDown, LINGER_MS);
  };
}

/** Nobody listens any more: close the stream and forget it (the next one is a fresh start). */
function shutDown(): void {
  lingerTimer = null;
  if (listeners.size > 0) return;
  close();
  if (retryTimer !== null) clearTimeout(retryTimer);
  retryTimer = null;
  retryMs = FIRST_RETRY_MS;
  // A later page's stream is not a reconnect: that page loads its own data when it mounts.
  openedBefore = false;
}

/**
 * Calls `onEvent` for every schema change in `repo` (`owner/repo`) while the component is
 * mounted, and with `command: 'reconnect'` after the stream was away (reload everything then).
 * `onEvent` may be a new function on every render: the latest one is called.
 */
export function useLiveSchema(repo: string, onEvent: (e: { repo: string; table: string | null; command: string }) => void): void {
  const latest = useRef(onEvent);
  useEffect(() => {
    latest.current = onEvent;
  });
  useEffect(() => subscribe({ repo, handle: (event) => latest.current(event) }), [repo]);
}
