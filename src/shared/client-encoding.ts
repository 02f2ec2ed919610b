// Client text in the client's own encoding. Postgres converts a statement from `client_encoding`
// to the server's encoding before it reads it; the proxy decodes it the same way to judge it, and
// forwards the client's bytes unchanged with the same `client_encoding` upstream, so what is judged
// is what runs. Decoding is by maintained decoders, never a table of ours: the runtime's WHATWG
// TextDecoder for the multi-byte encodings (it refuses bad sequences), iconv-lite for the
// one-byte ones (Node 20's TextDecoder reads windows-1252 as latin1). Bytes that are not text in
// the encoding are refused with 22021, as Postgres refuses them.
import { isUtf8 } from 'node:buffer';
import iconv from 'iconv-lite';
import { PgError, SqlState } from './errors.js';

/** Decodes client text; throws 22021 for bytes that are not text in its encoding. */
export type TextDecode = (bytes: Uint8Array) => string;

/** Postgres' name for an encoding name as a client may write it (`latin-1`, `ISO_8859_1`, `UTF-8`). */
function clean(name: string): string {
  return name.toLowerCase().replace(/[^a-z0-9]/g, '');
}

/** Postgres' canonical names, by their cleaned aliases (pg_encname_tbl). */
const aliases: Readonly<Record<string, string>> = {
  unicode: 'UTF8', utf8: 'UTF8', sqlascii: 'SQL_ASCII',
  latin1: 'LATIN1', iso88591: 'LATIN1', latin2: 'LATIN2', iso88592: 'LATIN2', latin3: 'LATIN3', iso88593: 'LATIN3',
  latin4: 'LATIN4', iso88594: 'LATIN4', latin5: 'LATIN5', iso88599: 'LATIN5', latin6: 'LATIN6', iso885910: 'LATIN6',
  latin7: 'LATIN7', iso885913: 'LATIN7', latin8: 'LATIN8', iso885914: 'LATIN8', latin9: 'LATIN9', iso885915: 'LATIN9',
  latin10: 'LATIN10', iso885916: 'LATIN10', iso88595: 'ISO_8859_5', iso88596: 'ISO_8859_6', iso88597: 'ISO_8859_7',
  iso88598: 'ISO_8859_8', koi8: 'KOI8R', koi8r: 'KOI8R', koi8u: 'KOI8U', alt: 'WIN866', win866: 'WIN866',
  windows866: 'WIN866', win874: 'WIN874', windows874: 'WIN874', win: 'WIN1251',
  ...Object.fromEntries(['1250', '1251', '1252', '1253', '1254', '1255', '1256', '1257', '1258'].flatMap((n) => [[`win${n}`, `WIN${n}`], [`windows${n}`, `WIN${n}`]])),
  sjis: 'SJIS', mskanji: 'SJIS', shiftjis: 'SJIS', win932: 'SJIS', windows932: 'SJIS', shiftjis2004: 'SHIFT_JIS_2004',
  eucjp: 'EUC_JP', eucjis2004: 'EUC_JIS_2004', euckr: 'EUC_KR', uhc: 'UHC', win949: 'UHC', windows949: 'UHC',
  euccn: 'EUC_CN', gbk: 'GBK', win936: 'GBK', windows936: 'GBK', gb18030: 'GB18030', big5: 'BIG5', win950: 'BIG5',
  windows950: 'BIG5', euctw: 'EUC_TW', johab: 'JOHAB', muleinternal: 'MULE_INTERNAL', tcvn: 'WIN1258',
  tcvn5712: 'WIN1258', vscii: 'WIN1258',
};

/** One-byte encodings, by iconv-lite's name: every byte a character (or none: 22021). */
const oneByte: Readonly<Record<string, string>> = {
  LATIN2: 'iso-8859-2', LATIN3: 'iso-8859-3', LATIN4: 'iso-8859-4', LATIN5: 'iso-8859-9', LATIN6: 'iso-8859-10',
  LATIN7: 'iso-8859-13', LATIN8: 'iso-8859-14', LATIN9: 'iso-8859-15', LATIN10: 'iso-8859-16',
  ISO_8859_5: 'iso-8859-5', ISO_8859_6: 'iso-8859-6', ISO_8859_7: 'iso-8859-7', ISO_8859_8: 'iso-8859-8',
  KOI8R: 'koi8-r', KOI8U: 'koi8-u', WIN866: 'cp866', WIN874: 'windows-874', WIN1250: 'cp1250', WIN1251: 'cp1251',
  WIN1252: 'cp1252', WIN1253: 'cp1253', WIN1254: 'cp1254', WIN1255: 'cp1255', WIN1256: 'cp1256', WIN1257: 'cp1257',
  WIN1258: 'cp1258',
};

/** Multi-byte encodings, by their WHATWG label. */
const multiByte: Readonly<Record<string, string>> = {
  SJIS: 'shift_jis', EUC_JP: 'euc-jp', EUC_KR: 'euc-kr', UHC: 'euc-kr', EUC_CN: 'gbk', GBK: 'gbk', GB18030: 'gb18030', BIG5: 'big5',
};

/** The canonical name of a client_encoding value, or undefined when Postgres knows no such encoding. */
export function canonicalEncoding(name: string): string | undefined {
  return aliases[clean(name)];
}

const invalid = (encoding: string) => new PgError(SqlState.CharacterNotInRepertoire, `invalid byte sequence for encoding "${encoding}"`);

const utf8: TextDecode = (bytes) => {
  if (!isUtf8(bytes)) throw invalid('UTF8');
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
};

const latin1: TextDecode = (bytes) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('latin1');

const decoders = new Map<string, TextDecode>([
  ['UTF8', utf8],
  ['SQL_ASCII', utf8], // no conversion to the UTF8 server: the bytes must be UTF-8 already
  ['LATIN1', latin1],
]);

function decoderOf(encoding: string): TextDecode | undefined {
  const single = oneByte[encoding];
  if (single !== undefined) {
    return (bytes) => {
      // A byte with no character in the encoding comes out as U+FFFD, which none of them has.
      const text = iconv.decode(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength), single);
      if (text.includes('\ufffd')) throw invalid(encoding);
      return text;
    };
  }
  const label = multiByte[encoding];
  if (label === undefined) return undefined;
  const decoder = new TextDecoder(label, { fatal: true });
  return (bytes) => {
    try {
      return decoder.decode(bytes);
    } catch {
      throw invalid(encoding);
    }
  };
}

/**
 * The decoder of a client_encoding (any of Postgres' names for it), or undefined when repobase
 * cannot read it exactly (EUC_TW, JOHAB, MULE_INTERNAL, the JIS X 0213 variants).
 */
export function clientDecoder(name: string): TextDecode | undefined {
  return clientText(name)?.decode;
}

/** Text to and from a client in its encoding. */
export interface ClientText {
  /** Postgres' canonical name of the encoding. */
  readonly encoding: string;
  /** UTF8 (or SQL_ASCII, which the proxy reads as UTF-8): no conversion either way. */
  readonly utf8: boolean;
  readonly decode: TextDecode;
  /**
   * Text in the encoding. What the proxy encodes is the client's own text, with ASCII it added
   * (rewrites) or its own messages; a character the encoding lacks becomes `?`.
   */
  encode(text: string): Buffer;
}

/** iconv-lite's names of the multi-byte encodings, for the way back. */
const multiByteOut: Readonly<Record<string, string>> = {
  SJIS: 'shiftjis', EUC_JP: 'eucjp', EUC_KR: 'euckr', UHC: 'cp949', EUC_CN: 'gbk', GBK: 'gbk', GB18030: 'gb18030', BIG5: 'cp950',
};

const texts = new Map<string, ClientText>();

/** Text of a client_encoding (any of Postgres' names for it), or undefined as for `clientDecoder`. */
export function clientText(name: string): ClientText | undefined {
  const encoding = canonicalEncoding(name);
  if (encoding === undefined) return undefined;
  let text = texts.get(encoding);
  if (text === undefined) {
    const decode = decoders.get(encoding) ?? decoderOf(encoding);
    if (decode === undefined) return undefined;
    const utf8 = encoding === 'UTF8' || encoding === 'SQL_ASCII';
    const out = encoding === 'LATIN1' ? 'latin1' : (oneByte[encoding] ?? multiByteOut[encoding]);
    text = { encoding, utf8, decode, encode: utf8 || out === undefined ? (t) => Buffer.from(t, 'utf8') : (t) => iconv.encode(t, out) };
    texts.set(encoding, text);
  }
  return text;
}

/** UTF-8, the server's encoding and the client's unless it says otherwise. */
export const UTF8_TEXT: ClientText = clientText('UTF8')!;
