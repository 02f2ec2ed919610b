import { useId } from 'react';

/** Private / Public as two radio buttons in a fieldset, each with what it means. */
export function VisibilityFields({ isPrivate, onChange }: { isPrivate: boolean; onChange(isPrivate: boolean): void }) {
  const id = useId();
  return (
    <fieldset className="field choices">
      <legend>Visibility</legend>
      <div className="choice">
        <input type="radio" id={`${id}-private`} name={`${id}-visibility`} checked={isPrivate} onChange={() => onChange(true)} aria-describedby={`${id}-private-hint`} />
        <label htmlFor={`${id}-private`}>Private</label>
        <p className="field-hint" id={`${id}-private-hint`}>
          Only you and the collaborators you add.
        </p>
      </div>
      <div className="choice">
        <input type="radio" id={`${id}-public`} name={`${id}-visibility`} checked={!isPrivate} onChange={() => onChange(false)} aria-describedby={`${id}-public-hint`} />
        <label htmlFor={`${id}-public`}>Public</label>
        <p className="field-hint" id={`${id}-public-hint`}>
          Every user can read it; only you and collaborators with write access change it.
        </p>
      </div>
    </fieldset>
  );
}
