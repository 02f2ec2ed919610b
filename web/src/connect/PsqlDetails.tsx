import { SnippetBlock } from './SnippetList.tsx';
import { connectionParameters, psqlCommand, type ConnectTarget } from './snippets.ts';

/** psql, and the same parameters one by one for tools that ask for them in a form. */
export function PsqlDetails({ target }: { target: ConnectTarget }) {
  return (
    <div className="connect-section">
      <SnippetBlock snippet={{ id: 'psql', name: 'psql command', code: psqlCommand(target) }} />
      {target.key === null && <p className="muted">The password is an API key: create one in the API / SDK tab.</p>}
      <h3>Parameters</h3>
      <dl className="parameters">
        {connectionParameters(target).map(([name, value]) => (
          <div key={name}>
            <dt>{name}</dt>
            <dd className="mono">{value}</dd>
          </div>
        ))}
      </dl>
      <p className="muted">
        In psql, <code>\dt</code> lists the repo's tables.
      </p>
    </div>
  );
}
