/**
 * Change a column's type, after a look at the values: how many would fail the automatic
 * conversion to the chosen type, with up to five of them, before anything runs. The person may
 * then give a USING expression, or run it anyway and read Postgres' own error.
 */
import { useEffect, useId, useState } from 'react';
import type { ApiError } from '../api.ts';
import { quoteIdent } from '../lib/sql.ts';
import { toApiError } from '../lib/useResource.ts';
import { ActionDialog } from './ActionDialog.tsx';
import type { ColumnDialogProps } from './ColumnDialogs.tsx';
import { JsonNumber } from './exact-json.ts';
import { runQuery } from './query.ts';
import { changeType, conversionCheck } from './statements.ts';
import { commonTypeOf, TypeField } from './TypeField.tsx';
import { textOf } from './values.ts';

type Check =
  | { state: 'none' }
  | { state: 'checking'; type: string }
  | { state: 'done'; type: string; failures: bigint; examples: string[] }
  | { state: 'failed'; type: string; error: ApiError };

const CHECK_DELAY_MS = 400;
const EXAMPLE_CHARS = 120;

export function ChangeTypeDialog({ target, column, currentType, onDone, onClose, returnFocus, fallbackFocus }: ColumnDialogProps & { column: string; currentType: string }) {
  const id = useId();
  const [type, setType] = useState(() => commonTypeOf(currentType) ?? currentType);
  const [using, setUsing] = useState('');
  const [check, setCheck] = useState<Check>({ state: 'none' });
  const wanted = type.trim();

  useEffect(() => {
    if (!wanted) {
      setCheck({ state: 'none' });
      return;
    }
    setCheck({ state: 'checking', type: wanted });
    const controller = new AbortController();
    const timer = setTimeout(() => {
      runQuery(conversionCheck(target, column, wanted), controller.signal).then(
        (answer) => {
          const [count, examples] = answer.rows[0] ?? [];
          const failures = count instanceof JsonNumber ? BigInt(count.text) : 0n;
          const list = Array.isArray(examples) ? examples.map((v) => textOf(v, 'text') ?? 'NULL') : [];
          setCheck({ state: 'done', type: wanted, failures, examples: list });
        },
        (err: unknown) => {
          if (!controller.signal.aborted) setCheck({ state: 'failed', type: wanted, error: toApiError(err) });
        },
      );
    }, CHECK_DELAY_MS);
    return () => {
      clearTimeout(timer);
      controller.abort();
    };
  }, [target.schema, target.table, column, wanted]);

  const sql = wanted ? changeType(target, column, wanted, using) : null;
  return (
    <ActionDialog
      title={`Change type of ${column}`}
      description={`Now ${currentType}. Postgres converts each value; a value it cannot convert stops the change, and nothing changes.`}
      sql={sql}
      submitLabel="Change type"
      canSubmit={sql !== null}
      onClose={onClose}
      returnFocus={returnFocus}
      fallbackFocus={fallbackFocus}
      wide
      onSubmit={async () => {
        if (sql === null) return;
        await runQuery(sql);
        onDone(`Changed the type of ${column} to ${wanted}.`);
      }}
    >
      <TypeField initial={currentType} onChange={setType} />
      <div className="conversion-check" role="status">
        <CheckResult check={check} />
      </div>
      <div className="field">
        <label htmlFor={`${id}-using`}>USING expression</label>
        <input id={`${id}-using`} value={using} onChange={(e) => setUsing(e.target.value)} autoComplete="off" spellCheck={false} aria-describedby={`${id}-using-hint`} />
        <p className="field-hint" id={`${id}-using-hint`}>
          Optional. Computes each new value from the old one, e.g. {`nullif(${quoteIdent(column)}, '')::${wanted || 'integer'}`}. Empty: the automatic conversion.
        </p>
      </div>
    </ActionDialog>
  );
}

function CheckResult({ check }: { check: Check }) {
  switch (check.state) {
    case 'none':
      return <p className="muted">Choose a type to check the values.</p>;
    case 'checking':
      return <p className="muted">Checking the values against {check.type}…</p>;
    case 'failed':
      return (
        <div className="check-failed">
          <p>Could not check the values against {check.type}: {check.error.message}</p>
          {check.error.hint && <p className="muted">{check.error.hint}</p>}
        </div>
      );
    case 'done':
      if (check.failures === 0n) return <p className="check-ok">All values convert to {check.type}.</p>;
      return (
        <div className="check-bad">
          <p>
            {check.failures.toLocaleString()} {check.failures === 1n ? 'value' : 'values'} would fail the automatic conversion to {check.type}.
          </p>
          {check.examples.length > 0 && (
            <>
              <p className="muted">For example:</p>
              <ul className="check-examples">
                {check.examples.map((e, i) => (
                  <li key={i}>
                    <code>{e.length > EXAMPLE_CHARS ? `${e.slice(0, EXAMPLE_CHARS)}…` : e}</code>
                  </li>
                ))}
              </ul>
            </>
          )}
        </div>
      );
    default:
      return null;
  }
}
