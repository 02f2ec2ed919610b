import * as Dialog from '@radix-ui/react-dialog';
import * as Tabs from '@radix-ui/react-tabs';
import { useState, type RefObject } from 'react';
import { createKey, getConnectionInfo, getRepo, listKeys, listRepos, revokeKey, type KeyRequest, type NewKey } from '../api.ts';
import { useUser } from '../account/session.tsx';
import { ErrorMessage } from '../lib/ErrorMessage.tsx';
import { useResource } from '../lib/useResource.ts';
import { KeySection } from './KeySection.tsx';
import { PsqlDetails } from './PsqlDetails.tsx';
import { RepoPicker } from './RepoPicker.tsx';
import { SnippetList } from './SnippetList.tsx';
import type { ConnectTarget } from './snippets.ts';

/** A repo to connect to; `tables` when the page already knows them. */
export interface RepoRef {
  owner: string;
  repo: string;
  tables?: string[];
}

interface Props {
  /** Preselected from a repo's page; without it the dialog offers a choice of your repos. */
  repo?: RepoRef;
  onClose(): void;
  returnFocusTo: RefObject<HTMLElement | null>;
}

/**
 * The Connect dialog: API keys, and for a chosen repo its connection URL and snippets. The key
 * created here lives in this component's state only, and goes when the dialog closes.
 */
export default function ConnectDialog({ repo: preselected, onClose, returnFocusTo }: Props) {
  const user = useUser();
  const [chosen, setChosen] = useState('');
  const [newKey, setNewKey] = useState<NewKey | null>(null);

  const connection = useResource(getConnectionInfo, []);
  const keys = useResource(listKeys, []);
  const repos = useResource(() => (preselected ? Promise.resolve([]) : listRepos()), [preselected === undefined]);

  const picked = repos.data?.find((r) => r.name === chosen);
  const target: RepoRef | undefined = preselected ?? (picked && { owner: picked.owner, repo: picked.repo });
  const tables = useResource(
    () => (target === undefined ? Promise.resolve([]) : target.tables ? Promise.resolve(target.tables) : getRepo(target.owner, target.repo).then((d) => d.tables.map((t) => t.name))),
    [target?.owner, target?.repo],
  );

  const connectTarget: ConnectTarget | null =
    target && connection.data
      ? { connection: connection.data, user, owner: target.owner, repo: target.repo, table: tables.data?.[0] ?? null, key: newKey?.key ?? null }
      : null;

  async function create(scope: KeyRequest) {
    const key = await createKey(scope);
    setNewKey(key);
    keys.reload();
  }

  async function revoke(id: string) {
    await revokeKey(id);
    if (newKey?.id === id) setNewKey(null);
    keys.reload();
  }

  return (
    <Dialog.Root open onOpenChange={(open) => open || onClose()}>
      <Dialog.Portal>
        <Dialog.Overlay className="dialog-overlay" />
        <Dialog.Content
          className="dialog dialog-wide"
          onCloseAutoFocus={(event) => {
            event.preventDefault();
            returnFocusTo.current?.focus();
          }}
        >
          <div className="dialog-head">
            <Dialog.Title className="dialog-title">Connect</Dialog.Title>
            <Dialog.Close asChild>
              <button type="button" className="button button-quiet button-small">
                Close
              </button>
            </Dialog.Close>
          </div>
          <Dialog.Description className="muted">
            An API key is the password for any Postgres client and the Bearer token of the REST API. A key for one repo reaches that repo only.
          </Dialog.Description>
          <ErrorMessage error={connection.error} />
          <Tabs.Root defaultValue="api" className="tabs">
            <Tabs.List className="tab-list" aria-label="Ways to connect">
              <Tabs.Trigger value="api" className="tab">
                API / SDK
              </Tabs.Trigger>
              <Tabs.Trigger value="psql" className="tab">
                psql
              </Tabs.Trigger>
            </Tabs.List>
            <Tabs.Content value="api" className="tab-panel">
              {!preselected && <RepoPicker repos={repos} value={chosen} onChange={setChosen} />}
              <KeySection keys={keys} newKey={newKey} repo={target && `${target.owner}/${target.repo}`} onCreate={create} onRevoke={revoke} />
              {connectTarget ? <SnippetList target={connectTarget} /> : connection.status === 'loading' && <p className="muted">Loading connection details…</p>}
            </Tabs.Content>
            <Tabs.Content value="psql" className="tab-panel">
              {!preselected && <RepoPicker repos={repos} value={chosen} onChange={setChosen} />}
              {connectTarget && <PsqlDetails target={connectTarget} />}
            </Tabs.Content>
          </Tabs.Root>
        </Dialog.Content>
      </Dialog.Portal>
    </Dialog.Root>
  );
}
