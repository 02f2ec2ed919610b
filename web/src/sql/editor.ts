/**
 * The CodeMirror 6 editor of the SQL page: PostgreSQL highlighting and keywords, completion of
 * repos, tables and columns, undo, Mod-Enter to run, and a mark on the character an error points
 * at. Tab is left to the browser, so the keyboard can always leave the editor.
 */
import { autocompletion, closeCompletion, completionStatus } from '@codemirror/autocomplete';
import { PostgreSQL, keywordCompletionSource, sql } from '@codemirror/lang-sql';
import { HighlightStyle, bracketMatching, syntaxHighlighting } from '@codemirror/language';
import { EditorState, Prec, StateEffect, StateField, type Extension } from '@codemirror/state';
import {
  Decoration,
  EditorView,
  ViewPlugin,
  drawSelection,
  highlightActiveLine,
  highlightActiveLineGutter,
  highlightSpecialChars,
  keymap,
  lineNumbers,
  placeholder,
  type DecorationSet,
} from '@codemirror/view';
import { tags } from '@lezer/highlight';
import { schemaCompletion, type SchemaCache } from './completion.ts';
import { statementAt } from './statements.ts';
import { undoHistory } from './undo.ts';

// --- the error mark ------------------------------------------------------------------------------

/** Marks the character at an offset (null: no mark). */
const setErrorMark = StateEffect.define<number | null>();

const errorMark = Decoration.mark({ class: 'cm-sql-error', attributes: { title: 'The error is here' } });

const errorField = StateField.define<DecorationSet>({
  create: () => Decoration.none,
  update(marks, tr) {
    for (const effect of tr.effects) {
      if (!effect.is(setErrorMark)) continue;
      if (effect.value === null) return Decoration.none;
      const doc = tr.state.doc;
      // A mark needs a character: at the end of a line (or of the text), mark the one before.
      let from = Math.min(effect.value, doc.length);
      const atBreak = from === doc.length || doc.sliceString(from, from + 1) === '\n';
      if (atBreak && from > 0) from--;
      const to = Math.min(from + 1, doc.length);
      return to > from ? Decoration.set([errorMark.range(from, to)]) : Decoration.none;
    }
    // Any edit makes the mark stale.
    return tr.docChanged ? Decoration.none : marks;
  },
  provide: (field) => EditorView.decorations.from(field),
});

/** Marks the character at `offset`, puts the cursor there and shows it. */
export function markError(view: EditorView, offset: number): void {
  const pos = Math.max(0, Math.min(offset, view.state.doc.length));
  view.dispatch({ effects: setErrorMark.of(pos), selection: { anchor: pos }, scrollIntoView: true });
}

export function clearError(view: EditorView): void {
  if (view.state.field(errorField).size) view.dispatch({ effects: setErrorMark.of(null) });
}

// --- the editor ------------------------------------------------------------------------------------

/**
 * Colours of the SQL, each at least 4.5:1 on the editor's backgrounds (CodeMirror's default
 * style has an orange below that). Quoted identifiers are names, so they do not look like strings.
 */
const highlight = HighlightStyle.define([
  { tag: tags.keyword, color: '#7a1fa2' },
  { tag: [tags.typeName, tags.standard(tags.name)], color: '#1f5f8b' },
  { tag: [tags.string, tags.regexp, tags.escape], color: '#a31515' },
  { tag: tags.special(tags.string), color: '#0f5c4e' },
  { tag: [tags.number, tags.bool, tags.null, tags.atom], color: '#116329' },
  { tag: tags.special(tags.name), color: '#8a4b08' },
  { tag: tags.comment, color: '#596170', fontStyle: 'italic' },
  { tag: tags.invalid, color: '#b42318' },
]);

/**
 * Completion answers may arrive after the focus left the editor (Tab right after typing): a list
 * that opens then is closed at once, so it never sits over the page unreachable.
 */
const noCompletionWithoutFocus = ViewPlugin.define((view) => ({
  update(update) {
    if (!view.hasFocus && completionStatus(update.state) !== null) setTimeout(() => closeCompletion(view));
  },
}));

const theme = EditorView.theme({
  '&': {
    fontSize: '0.92rem',
    backgroundColor: 'var(--surface)',
    border: '1px solid var(--border-strong)',
    borderRadius: '6px',
  },
  '&.cm-focused': {
    outline: '3px solid var(--focus)',
    outlineOffset: '1px',
  },
  '.cm-scroller': {
    fontFamily: 'var(--mono)',
    lineHeight: '1.55',
    minHeight: '10rem',
    maxHeight: '24rem',
  },
  '.cm-content': { padding: '0.5rem 0' },
  '.cm-gutters': {
    backgroundColor: '#f3f5f8',
    color: 'var(--muted)',
    borderRight: '1px solid var(--border)',
    borderRadius: '6px 0 0 6px',
  },
  '.cm-activeLine': { backgroundColor: '#f5f8ff' },
  '.cm-activeLineGutter': { backgroundColor: '#e8eefc' },
  '.cm-sql-error': {
    textDecoration: 'underline wavy var(--danger)',
    textDecorationSkipInk: 'none',
    backgroundColor: 'var(--danger-soft)',
  },
  '.cm-placeholder': { color: 'var(--muted)' },
  '.cm-tooltip.cm-tooltip-autocomplete > ul': { fontFamily: 'var(--mono)', maxHeight: '16rem' },
  '.cm-completionDetail': { color: 'var(--muted)', fontStyle: 'normal', marginLeft: '1rem' },
});

export interface EditorOptions {
  doc: string;
  parent: HTMLElement;
  cache: SchemaCache;
  /** Mod-Enter. */
  onRun(): void;
  /** Ids of elements describing the editor (e.g. its keyboard hints). */
  describedBy?: string;
}

export function createEditor({ doc, parent, cache, onRun, describedBy }: EditorOptions): EditorView {
  const content: Record<string, string> = { 'aria-label': 'SQL' };
  if (describedBy) content['aria-describedby'] = describedBy;
  const extensions: Extension[] = [
    lineNumbers(),
    highlightActiveLineGutter(),
    highlightSpecialChars(),
    drawSelection(),
    highlightActiveLine(),
    bracketMatching(),
    undoHistory(),
    sql({ dialect: PostgreSQL, upperCaseKeywords: true }),
    syntaxHighlighting(highlight),
    // Completion never takes Enter unless an option was chosen with the arrow keys.
    autocompletion({ override: [schemaCompletion(cache), keywordCompletionSource(PostgreSQL, true)], selectOnOpen: false, icons: false }),
    noCompletionWithoutFocus,
    Prec.highest(
      keymap.of([
        {
          key: 'Mod-Enter',
          preventDefault: true,
          run: () => {
            onRun();
            return true;
          },
        },
      ]),
    ),
    errorField,
    placeholder('SELECT * FROM "owner/repo"."table"'),
    EditorView.contentAttributes.of(content),
    EditorView.lineWrapping,
    theme,
  ];
  return new EditorView({ parent, state: EditorState.create({ doc, extensions }) });
}

/** What Run runs: the selection if there is one, else the statement at the cursor; `from` is its offset in the document. */
export function runTarget(view: EditorView): { text: string; from: number } | null {
  const { state } = view;
  const selection = state.selection.main;
  if (selection.empty) {
    const statement = statementAt(state.doc.toString(), selection.head);
    return statement && { text: statement.text, from: statement.from };
  }
  const raw = state.sliceDoc(selection.from, selection.to);
  const text = raw.trim();
  if (text === '') return null;
  return { text, from: selection.from + raw.indexOf(text) };
}

/** Replaces the whole text (undoable) and puts the cursor at its end. */
export function replaceText(view: EditorView, text: string): void {
  view.dispatch({
    changes: { from: 0, to: view.state.doc.length, insert: text },
    selection: { anchor: text.length },
    scrollIntoView: true,
    userEvent: 'input.replace',
  });
}
