// Client text in the client's encoding, decoded as Postgres converts it.
import { describe, expect, test } from 'vitest';
import { canonicalEncoding, clientDecoder, clientText } from '../../../src/shared/client-encoding.js';

describe('clientDecoder', () => {
  test('knows Postgres\' names for an encoding', () => {
    expect(canonicalEncoding('latin-1')).toBe('LATIN1');
    expect(canonicalEncoding('ISO_8859_1')).toBe('LATIN1');
    expect(canonicalEncoding('UTF-8')).toBe('UTF8');
    expect(canonicalEncoding('koi8')).toBe('KOI8R');
    expect(canonicalEncoding('Shift_JIS')).toBe('SJIS');
    expect(canonicalEncoding('nonsense')).toBeUndefined();
  });

  test('decodes what Postgres converts', () => {
    expect(clientDecoder('LATIN1')!(Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x80]))).toBe('café\u0080');
    expect(clientDecoder('KOI8R')!(Buffer.from([0xf0, 0xd2, 0xc9, 0xd7, 0xc5, 0xd4]))).toBe('Привет');
    expect(clientDecoder('LATIN5')!(Buffer.from([0xdd, 0x80, 0xfe]))).toBe('İ\u0080ş');
    expect(clientDecoder('WIN1252')!(Buffer.from([0x80]))).toBe('€');
    expect(clientDecoder('SJIS')!(Buffer.from([0x83, 0x5c, 0x27]))).toBe("ソ'"); // 0x5c inside a character is no backslash
    expect(clientDecoder('UTF8')!(Buffer.from('žluťoučký'))).toBe('žluťoučký');
  });

  test('refuses bytes that are not text in the encoding with 22021', () => {
    expect(() => clientDecoder('UTF8')!(Buffer.from([0xc3, 0x28]))).toThrow(expect.objectContaining({ code: '22021' }));
    expect(() => clientDecoder('SJIS')!(Buffer.from([0x83]))).toThrow(expect.objectContaining({ code: '22021', message: 'invalid byte sequence for encoding "SJIS"' }));
    expect(() => clientDecoder('WIN1252')!(Buffer.from([0x81]))).toThrow(expect.objectContaining({ code: '22021' }));
  });

  test('has no decoder for encodings the runtime cannot read exactly', () => {
    for (const name of ['EUC_TW', 'JOHAB', 'MULE_INTERNAL', 'SHIFT_JIS_2004', 'EUC_JIS_2004']) expect(clientDecoder(name), name).toBeUndefined();
  });
});

describe('clientText', () => {
  test('encodes back to the bytes it decoded, in every encoding it reads', () => {
    const samples: Record<string, string> = { LATIN1: "café 'x'", KOI8R: 'Привет', WIN1252: '€ “quoted”', SJIS: "ソ'表", EUC_JP: '日本語', GBK: '中文', BIG5: '中文', UHC: '한국어', EUC_KR: '한국어', GB18030: '中文', LATIN2: 'žluťoučký', UTF8: 'žluťoučký 日本' };
    for (const [encoding, sample] of Object.entries(samples)) {
      const text = clientText(encoding)!;
      expect(text.encoding).toBe(encoding);
      const bytes = text.encode(sample);
      expect(text.decode(bytes), encoding).toBe(sample);
      expect(text.utf8).toBe(encoding === 'UTF8');
    }
    expect(clientText('latin1')!.encode('é')).toEqual(Buffer.from([0xe9]));
    expect(clientText('EUC_TW')).toBeUndefined();
  });
});
