import { getUsage, type UsageInfo } from '../api.ts';
import { ErrorMessage } from '../lib/ErrorMessage.tsx';
import { formatBytes, formatDuration, formatTime } from '../lib/format.ts';
import { PageTitle } from '../lib/PageTitle.tsx';
import { useResource } from '../lib/useResource.ts';

/** `/account`: what you use of the shared service against your limits. */
export function AccountPage() {
  const usage = useResource(getUsage, []);
  return (
    <>
      <PageTitle title="Your account" />
      <p className="muted">
        The service is shared among its users: each has limits, set by its administrator, and a fair turn upstream when it is busy.
      </p>
      {usage.status === 'loading' && (
        <p className="muted" role="status">
          Loading your usage…
        </p>
      )}
      <ErrorMessage error={usage.error} />
      {usage.status === 'ready' && <Usage usage={usage.data} />}
    </>
  );
}

function Usage({ usage }: { usage: UsageInfo }) {
  const { limits, now, storage } = usage;
  const quota = limits.storage_bytes;
  const used = storage.repo_bytes;
  return (
    <>
      <section className="section card" aria-labelledby="storage-title">
        <h2 id="storage-title">Storage</h2>
        {quota > 0 ? (
          <>
            <meter className="usage-meter" id="storage-meter" min={0} max={quota} low={quota * 0.8} high={quota * 0.95} optimum={0} value={Math.min(used, quota)} aria-labelledby="storage-title" aria-describedby="storage-text" />
            <p id="storage-text">
              {formatBytes(used)} of {formatBytes(quota)} ({Math.round((100 * used) / quota)} %)
              {used >= quota && <strong className="over"> — over your quota: you can read and delete, not add data</strong>}
            </p>
          </>
        ) : (
          <p id="storage-text">{formatBytes(used)} in your repos (no quota)</p>
        )}
      </section>
      <section className="section card" aria-labelledby="now-title">
        <h2 id="now-title">Now</h2>
        <dl className="facts">
          <div>
            <dt>Wire connections</dt>
            <dd>{limits.connections > 0 ? `${now.wire_connections} of ${limits.connections}` : `${now.wire_connections} (no limit)`}</dd>
          </div>
          <div>
            <dt>Open transactions</dt>
            <dd>{limits.active > 0 ? `${now.active_transactions} (at most ${limits.active} running at once)` : `${now.active_transactions} (your fair share of the service)`}</dd>
          </div>
          <div>
            <dt>Waited for a turn</dt>
            <dd>
              {formatDuration(now.queued_ms)} since <time dateTime={now.queued_since}>{formatTime(now.queued_since)}</time>
            </dd>
          </div>
        </dl>
      </section>
      <section className="section card" aria-labelledby="limits-title">
        <h2 id="limits-title">Limits</h2>
        <dl className="facts">
          <div>
            <dt>Statement timeout</dt>
            <dd>{limits.statement_timeout_ms > 0 ? formatDuration(limits.statement_timeout_ms) : 'none'}</dd>
          </div>
          <div>
            <dt>Idle in a transaction</dt>
            <dd>{limits.idle_in_transaction_timeout_ms > 0 ? `ended after ${formatDuration(limits.idle_in_transaction_timeout_ms)}` : 'never ended'}</dd>
          </div>
          <div>
            <dt>Slowed past</dt>
            <dd>{limits.time_budget_ms > 0 ? `${formatDuration(limits.time_budget_ms)} upstream a minute` : 'never slowed'}</dd>
          </div>
        </dl>
      </section>
    </>
  );
}
