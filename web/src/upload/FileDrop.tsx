import { useId, useState, type DragEvent } from 'react';
import { formatBytes } from './names.ts';

const ACCEPT = '.csv,.tsv,.tab,.txt,.json,.ndjson,.jsonl,.xlsx,text/csv,text/tab-separated-values,application/json,application/x-ndjson,application/vnd.openxmlformats-officedocument.spreadsheetml.sheet';

interface Props {
  file: File | null;
  disabled?: boolean;
  onFile(file: File): void;
}

/**
 * Where a file is dropped, or chosen: the whole area is the label of the file input (named
 * "File"), so a click, Enter or Space opens the file chooser, and a file dropped on it is taken.
 */
export function FileDrop({ file, disabled = false, onFile }: Props) {
  const id = useId();
  const [over, setOver] = useState(false);

  function dragOver(event: DragEvent) {
    if (disabled || !event.dataTransfer.types.includes('Files')) return;
    event.preventDefault();
    event.dataTransfer.dropEffect = 'copy';
    setOver(true);
  }

  function drop(event: DragEvent) {
    event.preventDefault();
    setOver(false);
    const dropped = event.dataTransfer.files[0];
    if (!disabled && dropped) onFile(dropped);
  }

  return (
    <div
      className={`dropzone${over ? ' dropzone-over' : ''}${disabled ? ' dropzone-disabled' : ''}`}
      onDragEnter={dragOver}
      onDragOver={dragOver}
      onDragLeave={() => setOver(false)}
      onDrop={drop}
    >
      <input
        id={`${id}-file`}
        type="file"
        name="file"
        className="visually-hidden"
        aria-label="File"
        aria-describedby={`${id}-hint`}
        accept={ACCEPT}
        disabled={disabled}
        onChange={(e) => {
          const chosen = e.currentTarget.files?.[0];
          // Cleared, so that choosing the same file again (after changing it on disk) is seen.
          e.currentTarget.value = '';
          if (chosen) onFile(chosen);
        }}
      />
      <label htmlFor={`${id}-file`} className="dropzone-label">
        {file ? (
          <>
            <span className="dropzone-title">{file.name}</span>
            <span className="muted">
              {formatBytes(file.size)} · drop another file here or choose one
            </span>
          </>
        ) : (
          <>
            <span className="dropzone-title">Drop a file here</span>
            <span className="muted">or choose one</span>
          </>
        )}
      </label>
      <p className="field-hint" id={`${id}-hint`}>
        CSV, TSV, JSON (an array of records), NDJSON or XLSX (its first sheet), up to 1 GiB.
      </p>
    </div>
  );
}
