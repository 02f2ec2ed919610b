import { useId, useState } from 'react';

export const COMMON_TYPES = ['text', 'bigint', 'integer', 'numeric', 'double precision', 'boolean', 'date', 'timestamp', 'timestamptz', 'jsonb', 'uuid'] as const;

const OTHER = '';

/** The common type a column's type (as the API spells it) is, if any: `TIMESTAMP WITH TIME ZONE` → `timestamptz`. */
export function commonTypeOf(type: string): string | null {
  const t = type.toLowerCase();
  const aliases: Record<string, string> = {
    'timestamp without time zone': 'timestamp',
    'timestamp with time zone': 'timestamptz',
  };
  const name = aliases[t] ?? t;
  return (COMMON_TYPES as readonly string[]).includes(name) ? name : null;
}

/**
 * `Type`: a select of common types, and `Custom` for any other type Postgres knows
 * (`varchar(20)`, `numeric(12,2)`, `text[]`), which wins when filled in. Reports the chosen type
 * text, empty when there is none.
 */
export function TypeField({ initial, onChange }: { initial: string; onChange(type: string): void }) {
  const id = useId();
  const common = commonTypeOf(initial);
  const [choice, setChoice] = useState<string>(common ?? OTHER);
  const [custom, setCustom] = useState(common ? '' : initial);

  return (
    <div className="type-field">
      <div className="field">
        <label htmlFor={`${id}-type`}>Type</label>
        <select
          id={`${id}-type`}
          value={custom.trim() ? OTHER : choice}
          onChange={(e) => {
            setChoice(e.target.value);
            if (e.target.value !== OTHER) {
              setCustom('');
              onChange(e.target.value);
            } else {
              onChange(custom.trim());
            }
          }}
        >
          {COMMON_TYPES.map((t) => (
            <option key={t} value={t}>
              {t}
            </option>
          ))}
          <option value={OTHER}>other (write it below)</option>
        </select>
      </div>
      <div className="field">
        <label htmlFor={`${id}-custom`}>Custom</label>
        <input
          id={`${id}-custom`}
          value={custom}
          autoComplete="off"
          spellCheck={false}
          aria-describedby={`${id}-custom-hint`}
          onChange={(e) => {
            setCustom(e.target.value);
            onChange(e.target.value.trim() || (choice === OTHER ? '' : choice));
          }}
        />
        <p className="field-hint" id={`${id}-custom-hint`}>
          Any Postgres type, e.g. varchar(20), numeric(12,2) or text[]; used instead of the list when filled in.
        </p>
      </div>
    </div>
  );
}
