/**
 * Undo and redo for the SQL editor (Mod-z; Mod-Shift-z or Mod-y), kept small: each change is
 * stored as its inverse with the selection before it; typing within half a second of the last
 * typing is one step.
 */
import { Annotation, StateField, Transaction, type ChangeSet, type EditorSelection, type EditorState, type Extension } from '@codemirror/state';
import { keymap, type Command } from '@codemirror/view';

interface Step {
  /** Applied to the document after the change, gives the document before it. */
  inverse: ChangeSet;
  selection: EditorSelection;
  time: number;
  typing: boolean;
}

interface Stacks {
  done: readonly Step[];
  undone: readonly Step[];
}

const MAX_STEPS = 200;
const GROUP_MS = 500;

/** Marks the transactions of undo and redo themselves, which are not recorded again. */
const replaying = Annotation.define<Stacks>();

const stacks = StateField.define<Stacks>({
  create: () => ({ done: [], undone: [] }),
  update(value, tr) {
    const replayed = tr.annotation(replaying);
    if (replayed) return replayed;
    if (!tr.docChanged) return value;
    if (tr.annotation(Transaction.addToHistory) === false) return { done: [], undone: [] };
    const inverse = tr.changes.invert(tr.startState.doc);
    const typing = tr.isUserEvent('input.type') || tr.isUserEvent('delete');
    const time = Date.now();
    const last = value.done.at(-1);
    if (last && typing && last.typing && time - last.time < GROUP_MS) {
      const merged: Step = { inverse: inverse.compose(last.inverse), selection: last.selection, time, typing };
      return { done: [...value.done.slice(0, -1), merged], undone: [] };
    }
    const step: Step = { inverse, selection: tr.startState.selection, time, typing };
    return { done: [...value.done, step].slice(-MAX_STEPS), undone: [] };
  },
});

function replay(state: EditorState, from: 'done' | 'undone'): Transaction | null {
  const value = state.field(stacks);
  const step = value[from].at(-1);
  if (!step) return null;
  const back: Step = { inverse: step.inverse.invert(state.doc), selection: state.selection, time: 0, typing: false };
  const next: Stacks =
    from === 'done'
      ? { done: value.done.slice(0, -1), undone: [...value.undone, back] }
      : { done: [...value.done, back], undone: value.undone.slice(0, -1) };
  return state.update({
    changes: step.inverse,
    selection: step.selection,
    scrollIntoView: true,
    annotations: [replaying.of(next), Transaction.userEvent.of(from === 'done' ? 'undo' : 'redo')],
  });
}

const command =
  (from: 'done' | 'undone'): Command =>
  (view) => {
    const tr = replay(view.state, from);
    if (!tr) return false;
    view.dispatch(tr);
    return true;
  };

export const undo = command('done');
export const redo = command('undone');

export function undoHistory(): Extension {
  return [
    stacks,
    keymap.of([
      { key: 'Mod-z', run: undo, preventDefault: true },
      { key: 'Mod-y', run: redo, preventDefault: true },
      { key: 'Mod-Shift-z', run: redo, preventDefault: true },
    ]),
  ];
}
