/**
 * JSON with exact numbers. The query API writes integers and numerics with every digit Postgres
 * printed (`12345678901234567890`, `0.10000000000000000001`); `JSON.parse` would turn them into
 * doubles, and a reviver only ever sees the double. So the answer is read as text and parsed
 * here: numbers become `JsonNumber`s holding their source text, everything else is what
 * `JSON.parse` gives. Strings with escapes are decoded by `JSON.parse` itself (on exactly the
 * string's slice), so escapes and surrogates behave as in the platform parser.
 *
 * The parser keeps its own stack instead of recursing: a deeply nested jsonb value cannot
 * overflow the call stack.
 */

/** A JSON number, kept as the text it was written with. */
export class JsonNumber {
  constructor(readonly text: string) {}

  toString(): string {
    return this.text;
  }
}

/**
 * A JSON object as its members in the order written, duplicates included: a plain JS object
 * would move integer-like keys (a column named `2024`) to the front and keep one of duplicates,
 * and both matter here (the order of `fields` is the order of the row values; a `json` value's
 * text keeps its duplicates).
 */
export class JsonObject {
  constructor(readonly entries: Array<[string, JsonValue]> = []) {}

  /** The value of the last member named `key`, as `JSON.parse` would keep. */
  get(key: string): JsonValue | undefined {
    for (let k = this.entries.length - 1; k >= 0; k--) {
      const entry = this.entries[k] as [string, JsonValue];
      if (entry[0] === key) return entry[1];
    }
    return undefined;
  }
}

export type JsonValue = null | boolean | string | JsonNumber | JsonValue[] | JsonObject;

/** A failure to parse, with the offset in the text where it was noticed. */
export class JsonSyntaxError extends SyntaxError {
  override readonly name = 'JsonSyntaxError';
  constructor(
    message: string,
    readonly offset: number,
  ) {
    super(`${message} at offset ${offset}`);
  }
}

const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;

type Frame = { kind: 'array'; value: JsonValue[] } | { kind: 'object'; value: JsonObject; key: string };

function isSpace(code: number): boolean {
  return code === 0x20 || code === 0x0a || code === 0x0d || code === 0x09;
}

/** Parses JSON text; numbers come back as `JsonNumber`. Throws `JsonSyntaxError` on anything RFC 8259 does not allow. */
export function parseExactJson(text: string): JsonValue {
  let i = 0;
  const n = text.length;
  const stack: Frame[] = [];

  const skipSpace = () => {
    while (i < n && isSpace(text.charCodeAt(i))) i++;
  };
  const fail = (message: string): never => {
    throw new JsonSyntaxError(message, i);
  };

  const readString = (): string => {
    // text[i] is the opening quote.
    const start = i;
    i++;
    let escaped = false;
    for (;;) {
      if (i >= n) fail('unterminated string');
      const code = text.charCodeAt(i);
      if (code === 0x22) break;
      if (code < 0x20) fail('control character in string');
      if (code === 0x5c) {
        escaped = true;
        i += 2;
      } else {
        i++;
      }
    }
    i++;
    if (!escaped) return text.slice(start + 1, i - 1);
    try {
      return JSON.parse(text.slice(start, i)) as string;
    } catch {
      i = start;
      return fail('bad escape in string');
    }
  };

  const readLiteral = (word: string, value: JsonValue): JsonValue => {
    if (!text.startsWith(word, i)) fail('unexpected character');
    i += word.length;
    return value;
  };

  /** A scalar at i, or the start of a container (pushed, and `undefined` returned). */
  const readValue = (): JsonValue | undefined => {
    skipSpace();
    if (i >= n) fail('unexpected end of text');
    const c = text[i];
    switch (c) {
      case '{': {
        i++;
        skipSpace();
        if (text[i] === '}') {
          i++;
          return new JsonObject();
        }
        if (text[i] !== '"') fail('expected a member name');
        const key = readString();
        skipSpace();
        if (text[i] !== ':') fail('expected ":"');
        i++;
        stack.push({ kind: 'object', value: new JsonObject(), key });
        return undefined;
      }
      case '[': {
        i++;
        skipSpace();
        if (text[i] === ']') {
          i++;
          return [];
        }
        stack.push({ kind: 'array', value: [] });
        return undefined;
      }
      case '"':
        return readString();
      case 't':
        return readLiteral('true', true);
      case 'f':
        return readLiteral('false', false);
      case 'n':
        return readLiteral('null', null);
      default: {
        NUMBER.lastIndex = i;
        const match = NUMBER.exec(text);
        if (!match) return fail('unexpected character');
        i += match[0].length;
        return new JsonNumber(match[0]);
      }
    }
  };

  let value = readValue();
  for (;;) {
    if (value === undefined) {
      // A container was opened: read its first element or member value.
      value = readValue();
      continue;
    }
    const top = stack.at(-1);
    if (!top) break;
    // `value` completes an element of `top`.
    if (top.kind === 'array') top.value.push(value);
    else top.value.entries.push([top.key, value]);
    skipSpace();
    const c = text[i];
    if (c === ',') {
      i++;
      if (top.kind === 'object') {
        skipSpace();
        if (text[i] !== '"') fail('expected a member name');
        top.key = readString();
        skipSpace();
        if (text[i] !== ':') fail('expected ":"');
        i++;
      }
      value = readValue();
    } else if ((c === ']' && top.kind === 'array') || (c === '}' && top.kind === 'object')) {
      i++;
      stack.pop();
      value = top.value;
    } else {
      fail(top.kind === 'array' ? 'expected "," or "]"' : 'expected "," or "}"');
    }
  }
  skipSpace();
  if (i < n) fail('unexpected text after the value');
  return value;
}

/** Punctuation queued between values while writing (never confused with a parsed object). */
class Punct {
  constructor(readonly text: string) {}
}

/**
 * JSON text of a value, numbers written with their own digits: compact like `JSON.stringify(v)`,
 * or with `indent` spaces per level like `JSON.stringify(v, null, indent)`.
 */
export function stringifyExactJson(value: JsonValue, indent = 0): string {
  const newline = (depth: number) => (indent > 0 ? `\n${' '.repeat(indent * depth)}` : '');
  const colon = indent > 0 ? ': ' : ':';
  let out = '';
  // A stack of work instead of recursion, for the same reason as the parser's.
  const work: Array<{ value: JsonValue; depth: number } | Punct> = [{ value, depth: 0 }];
  for (let item = work.pop(); item !== undefined; item = work.pop()) {
    if (item instanceof Punct) {
      out += item.text;
      continue;
    }
    const { value: v, depth } = item;
    if (v === null || typeof v === 'boolean') out += String(v);
    else if (typeof v === 'string') out += JSON.stringify(v);
    else if (v instanceof JsonNumber) out += v.text;
    else if (Array.isArray(v)) {
      if (v.length === 0) {
        out += '[]';
        continue;
      }
      out += '[';
      work.push(new Punct(`${newline(depth)}]`));
      for (let k = v.length - 1; k >= 0; k--) {
        work.push({ value: v[k] as JsonValue, depth: depth + 1 });
        work.push(new Punct(`${k > 0 ? ',' : ''}${newline(depth + 1)}`));
      }
    } else {
      if (v.entries.length === 0) {
        out += '{}';
        continue;
      }
      out += '{';
      work.push(new Punct(`${newline(depth)}}`));
      for (let k = v.entries.length - 1; k >= 0; k--) {
        const [key, member] = v.entries[k] as [string, JsonValue];
        work.push({ value: member, depth: depth + 1 });
        work.push(new Punct(`${k > 0 ? ',' : ''}${newline(depth + 1)}${JSON.stringify(key)}${colon}`));
      }
    }
  }
  return out;
}
