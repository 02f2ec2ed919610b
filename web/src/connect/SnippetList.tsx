import { useId } from 'react';
import { CopyButton } from '../lib/CopyButton.tsx';
import { buildSnippets, KEY_PLACEHOLDER, type ConnectTarget, type Snippet } from './snippets.ts';

/** The connection URL and the example in each client, each with its Copy button. */
export function SnippetList({ target }: { target: ConnectTarget }) {
  const id = useId();
  return (
    <section className="connect-section" aria-labelledby={`${id}-heading`}>
      <h3 id={`${id}-heading`}>
        Connect to <span className="mono">{target.owner}/{target.repo}</span>
      </h3>
      {target.key === null && (
        <p className="muted">
          Replace <code>{KEY_PLACEHOLDER}</code> with one of your API keys, or create a key above and it will appear here.
        </p>
      )}
      <ul className="snippets">
        {buildSnippets(target).map((s) => (
          <li key={s.id}>
            <SnippetBlock snippet={s} />
          </li>
        ))}
      </ul>
    </section>
  );
}

export function SnippetBlock({ snippet }: { snippet: Snippet }) {
  const id = useId();
  return (
    <figure className="snippet" aria-labelledby={`${id}-name`}>
      <div className="snippet-head">
        <figcaption id={`${id}-name`} className="snippet-name">
          {snippet.name}
        </figcaption>
        <CopyButton text={snippet.code} label={`Copy ${snippet.name}`} />
      </div>
      <pre className="code">
        <code>{snippet.code}</code>
      </pre>
    </figure>
  );
}
